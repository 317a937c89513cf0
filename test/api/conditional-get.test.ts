/**
 * Reads carry a validator: a weak ETag of the answer and 304 Not Modified for a client (or a cache)
 * that already holds it; public reads without a token may be kept by shared caches, which must
 * revalidate; reads with a token are private.
 */
import { expect, it } from "vitest";
import { adminToken, createUser, useTestApi } from "../support/api.ts";

const api = useTestApi();

it("answers 304 to If-None-Match for an unchanged public read, 200 with a new ETag once it changed", async () => {
  const admin = await adminToken(api);
  const location = `Etag-${Date.now()}`;
  const path = `/v1/events?location=${location}`;
  const first = await api.request("GET", path);
  expect(first.status).toBe(200);
  const tag = first.headers.get("etag")!;
  expect(tag).toMatch(/^W\/"[A-Za-z0-9_-]{27}"$/);
  expect(first.headers.get("cache-control")).toBe("public, max-age=0, must-revalidate");
  expect(first.headers.get("vary")).toContain("Authorization");

  const again = await api.request("GET", path, { headers: { "If-None-Match": tag } });
  expect(again.status).toBe(304);
  expect(again.text).toBe("");
  expect(again.headers.get("etag")).toBe(tag);
  // A list of tags, the strong form, or `*` match too; another tag does not.
  expect((await api.request("GET", path, { headers: { "If-None-Match": `W/"other", ${tag.slice(2)}` } })).status).toBe(304);
  expect((await api.request("GET", path, { headers: { "If-None-Match": "*" } })).status).toBe(304);
  expect((await api.request("GET", path, { headers: { "If-None-Match": 'W/"other"' } })).status).toBe(200);

  const start = Date.now() + 86_400_000;
  const created = await api.request("POST", "/v1/events", {
    token: admin,
    body: { title: "ETag", type: "talk", format: "virtual", location, starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3_600_000).toISOString(), tickets: { virtual: { price_usd: 0 } } },
  });
  expect(created.status, created.text).toBe(201);
  const changed = await api.request("GET", path, { headers: { "If-None-Match": tag } });
  expect(changed.status).toBe(200);
  expect(changed.body.data).toHaveLength(1);
  expect(changed.headers.get("etag")).not.toBe(tag);
});

it("marks reads made with a token private, and still answers 304", async () => {
  const user = await createUser(api, { scope: ["users:read"] });
  const me = await api.request("GET", "/v1/users/me", { token: user.token });
  expect(me.status).toBe(200);
  expect(me.headers.get("cache-control")).toBe("private, no-cache");
  const tag = me.headers.get("etag")!;
  expect((await api.request("GET", "/v1/users/me", { token: user.token, headers: { "If-None-Match": tag } })).status).toBe(304);
  // A public read with a token is private too: what it shows may depend on the caller.
  expect((await api.request("GET", "/v1/events", { token: user.token })).headers.get("cache-control")).toBe("private, no-cache");
});
