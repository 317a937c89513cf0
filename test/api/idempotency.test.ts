import { describe, expect, it } from "vitest";
import { createUser, expectProblem, useTestApi } from "./helpers.ts";

const api = useTestApi();

const countKeys = async (userId: string) =>
  Number((await api.db.selectFrom("api_keys").select((eb) => eb.fn.countAll<string>().as("n")).where("user_id", "=", userId).executeTakeFirstOrThrow()).n);

describe("Idempotency-Key", () => {
  it("replays the stored response for the same key and body, and refuses a different body with 422", async () => {
    const user = await createUser(api);
    const before = await countKeys(user.id);
    const first = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "a" }, headers: { "idempotency-key": "k-1" } });
    const second = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "a" }, headers: { "idempotency-key": "k-1" } });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(await countKeys(user.id)).toBe(before + 1);

    expectProblem(
      await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "b" }, headers: { "idempotency-key": "k-1" } }),
      422,
      "idempotency_key_reused",
    );
    expect(await countKeys(user.id)).toBe(before + 1);

    // keys are per caller: another user's identical key is independent
    const other = await createUser(api);
    const theirs = await api.request("POST", "/v1/api-keys", { token: other.token, body: { name: "a" }, headers: { "idempotency-key": "k-1" } });
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(first.body.id);
  });

  it("runs a request exactly once when the same key races", async () => {
    const user = await createUser(api);
    const before = await countKeys(user.id);
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "race" }, headers: { "idempotency-key": "race-1" } }),
      ),
    );
    const ok = results.filter((r) => r.status === 201);
    const busy = results.filter((r) => r.status === 409);
    expect(ok.length + busy.length).toBe(10);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const r of busy) expectProblem(r, 409, "request_in_progress");
    expect(new Set(ok.map((r) => r.body.id)).size).toBe(1);
    expect(await countKeys(user.id)).toBe(before + 1);
  });

  it("stores refusals of a request that ran, never validation failures, and rejects malformed keys", async () => {
    const user = await createUser(api);
    const invalid = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "" }, headers: { "idempotency-key": "bad-1" } });
    expectProblem(invalid, 400, "validation_failed");
    // as with Stripe, a request that failed validation saved nothing: the key is still free
    const fixed = await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "ok" }, headers: { "idempotency-key": "bad-1" } });
    expect(fixed.status).toBe(201);
    expect(fixed.headers.get("idempotent-replayed")).toBeNull();

    const refused = await api.request("POST", "/v1/auth/token", { body: { api_key: "sk_wrong_key_0000000000000000", scope: ["read"] }, headers: { "idempotency-key": `r-${user.id}` } });
    expectProblem(refused, 401, "unauthenticated");
    const replay = await api.request("POST", "/v1/auth/token", { body: { api_key: "sk_wrong_key_0000000000000000", scope: ["read"] }, headers: { "idempotency-key": `r-${user.id}` } });
    expectProblem(replay, 401, "unauthenticated");
    expect(replay.headers.get("idempotent-replayed")).toBe("true");

    expectProblem(
      await api.request("POST", "/v1/api-keys", { token: user.token, body: { name: "x" }, headers: { "idempotency-key": "x".repeat(256) } }),
      400,
      "invalid_parameter",
    );
  });
});
