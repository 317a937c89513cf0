import { describe, expect, it } from "vitest";
import { createUser, expectProblem, useTestApi } from "../support/api.ts";

const api = useTestApi();

describe("users", () => {
  it("GET /v1/users/me shows the caller's own fields, including a custodial wallet", async () => {
    const user = await createUser(api, { role: "artist" });
    const me = await api.request("GET", "/v1/users/me", { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: user.id, username: user.username, email: user.email, role: "artist", tier: "bronze", status: "active", service_points: 0, badges: [] });
    expect(me.body.wallet_address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(me.body.created_at).toMatch(/Z$/);
  });

  it("GET /v1/users/:id is public and never leaks email or wallet", async () => {
    const user = await createUser(api);
    const res = await api.request("GET", `/v1/users/${user.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.id, username: user.username, artworks_count: 0, followers_count: 0 });
    expect(res.body).not.toHaveProperty("email");
    expect(res.body).not.toHaveProperty("wallet_address");
    expect(res.text).not.toContain(user.email);
    expectProblem(await api.request("GET", "/v1/users/usr_01JD3Y5V0Q3G7W7J6T4N4C2X1M"), 404, "not_found");
    expectProblem(await api.request("GET", "/v1/users/not-an-id"), 404, "not_found");
  });

  it("PATCH /v1/users/:id/profile updates only the caller's own profile", async () => {
    const user = await createUser(api);
    const res = await api.request("PATCH", `/v1/users/${user.id}/profile`, {
      token: user.token,
      body: { display_name: "Ada", bio: "Painter", location: "Lisbon", website: "https://ada.example.com" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.id, display_name: "Ada", bio: "Painter", location: "Lisbon", website: "https://ada.example.com" });
    expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.now() - 60_000);
    const stored = await api.db.selectFrom("users").selectAll().where("id", "=", user.id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ display_name: "Ada", bio: "Painter", location: "Lisbon", website: "https://ada.example.com" });

    const cleared = await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: user.token, body: { bio: "" } });
    expect(cleared.body).toEqual({ id: user.id, bio: null, updated_at: expect.any(String) });

    const other = await createUser(api);
    expectProblem(await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: other.token, body: { bio: "hacked" } }), 403, "forbidden");
    const admin = await createUser(api, { role: "admin", scope: ["admin"] });
    expectProblem(await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: admin.token, body: { bio: "hacked" } }), 403, "forbidden");
    expect((await api.db.selectFrom("users").select("bio").where("id", "=", user.id).executeTakeFirstOrThrow()).bio).toBeNull();
  });

  it("refuses bad profile input and changes nothing", async () => {
    const user = await createUser(api);
    const before = await api.db.selectFrom("users").selectAll().where("id", "=", user.id).executeTakeFirstOrThrow();
    const bad: unknown[] = [
      { website: "javascript:alert(1)" },
      { website: "ftp://files.example.com" },
      { website: "not a url" },
      { display_name: "" },
      { display_name: "x".repeat(101) },
      { bio: "x".repeat(1001) },
      { location: 42 },
      { email: "new@example.com" },
      { role: "admin" },
      {},
    ];
    for (const body of bad) {
      expectProblem(await api.request("PATCH", `/v1/users/${user.id}/profile`, { token: user.token, body }), 400, "validation_failed");
    }
    const after = await api.db.selectFrom("users").selectAll().where("id", "=", user.id).executeTakeFirstOrThrow();
    expect(after).toEqual(before);
  });
});
