/**
 * Group commit (api/src/db/grouped-writes.ts): writes that arrive while a statement runs are written
 * together by the next one; the token exchange uses it when no Idempotency-Key asks for a stored
 * answer.
 */
import { describe, expect, it } from "vitest";
import { GroupedWrites } from "../../api/src/db/grouped-writes.ts";
import { hashSecret } from "../../api/src/lib/secrets.ts";
import { holdCalls } from "../support/hold.ts";
import { signalled, waitFor } from "../support/wait.ts";
import { createUser, useTestApi } from "../support/api.ts";

describe("GroupedWrites", () => {
  it("writes what arrives during a statement with the next one, and a statement that fails item by item", async () => {
    const statements: number[][] = [];
    let release: (() => void) | null = null;
    const grouped = new GroupedWrites<number, string>(async (items) => {
      statements.push(items);
      if (statements.length === 1) await new Promise<void>((resolve) => (release = resolve));
      if (items.includes(13)) throw new Error("13 cannot be written");
      return items.map((n) => `row ${n}`);
    });
    const first = grouped.add(1); // written at once, alone
    expect(statements).toEqual([[1]]);
    const later = [2, 13, 3, 4].map((n) => grouped.add(n).then((r) => r, (err: Error) => err.message));
    expect(statements).toHaveLength(1); // they wait for the statement under way
    release!();
    expect(await first).toBe("row 1");
    expect(await Promise.all(later)).toEqual(["row 2", "13 cannot be written", "row 3", "row 4"]);
    // One statement for the four, which failed, then one per item: only 13 fails.
    expect(statements).toEqual([[1], [2, 13, 3, 4], [2], [13], [3], [4]]);
    expect(grouped.stats).toEqual({ statements: 6, items: 4 });
  });

  it("refuses a writer that answers for fewer items than it was given", async () => {
    const grouped = new GroupedWrites<number, number>(async (items) => items.slice(1));
    await expect(grouped.add(1)).rejects.toThrow("returned 0 results for 1 items");
  });
});

describe("the token exchange's grouped writes", () => {
  const api = useTestApi();

  it("answers 60 exchanges at once with working tokens, in fewer statements, each token stored once", async () => {
    const user = await createUser(api, { scope: ["read"] });
    const exchanges = api.server.platform.services.auth.exchanges;
    const before = { ...exchanges.stats };
    // The first write is held until another exchange waits behind it: those waiting then go in one
    // statement, however the 60 requests arrive on a loaded machine.
    const firstWrite = holdCalls(exchanges as unknown as { writeAll(items: unknown[]): Promise<unknown[]> }, "writeAll");
    const pending = Array.from({ length: 60 }, () => api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["read"] } }));
    try {
      await signalled(firstWrite.reached(1), "the first exchange's write");
      await waitFor(() => (exchanges as unknown as { queue: unknown[] }).queue.length > 1, { timeoutMs: 30_000, what: "exchanges waiting behind the first write" });
    } finally {
      firstWrite.restore();
    }
    const answers = await Promise.all(pending);
    expect(answers.map((a) => a.status)).toEqual(Array(60).fill(201));
    const tokens = answers.map((a) => a.body.token as string);
    expect(new Set(tokens).size).toBe(60);
    expect(exchanges.stats.items - before.items).toBe(60);
    expect(exchanges.stats.statements - before.statements).toBeLessThan(60);
    const stored = await api.db.selectFrom("access_tokens").select(["token_hash", "scopes", "expires_at", "api_key_id"]).where("token_hash", "in", tokens.map(hashSecret)).execute();
    expect(stored).toHaveLength(60);
    for (const row of stored) expect(row.scopes).toEqual(["read"]);
    const byHash = new Map(stored.map((row) => [row.token_hash, row]));
    for (const answer of answers) expect(new Date(answer.body.expires_at).getTime()).toBe((byHash.get(hashSecret(answer.body.token))!.expires_at as Date).getTime());
    for (const token of tokens.slice(0, 5)) expect((await api.request("GET", "/v1/users/me", { token })).status).toBe(200);
    // The key's last use and the user's login are recorded (to the minute) as by a lone exchange.
    const key = await api.db.selectFrom("api_keys").select("last_used_at").where("id", "=", stored[0]!.api_key_id!).executeTakeFirstOrThrow();
    expect(key.last_used_at).not.toBeNull();
    const login = await api.db.selectFrom("users").select("last_login_at").where("id", "=", user.id).executeTakeFirstOrThrow();
    expect(login.last_login_at).not.toBeNull();
  });

  it("still writes an exchange under an Idempotency-Key in the transaction that stores its answer (a retry gets the same token)", async () => {
    const user = await createUser(api, { scope: ["read"] });
    const exchanges = api.server.platform.services.auth.exchanges;
    const before = exchanges.stats.items;
    const send = () => api.request("POST", "/v1/auth/token", { body: { api_key: user.apiKey, scope: ["read"] }, headers: { "Idempotency-Key": `grouped-${user.id}` } });
    const first = await send();
    const again = await send();
    expect(first.status).toBe(201);
    expect(again.body.token).toBe(first.body.token);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(exchanges.stats.items).toBe(before);
  });
});
