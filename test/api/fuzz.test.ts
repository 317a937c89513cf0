/**
 * Fuzzing from the OpenAPI document: for every operation it serves, requests generated from the
 * operation's parameter and body schemas (test/support/openapi-fuzz.ts), sent with a token that
 * passes its `x-auth` (an admin's for admin routes, an artist's with every other scope), against
 * real resources where a path names one. Properties: never a 5xx; every 4xx a problem+json whose
 * `status` is the HTTP status; every request with a defect refused; and nothing stored: the row
 * counts and contents of every table unchanged, no file written, no chain transaction sent.
 *
 * A fixed seed (FUZZ_SEED) and a CI-sized run (FUZZ_RUNS: 1,500 in the fast tier, 4,000 otherwise); FUZZ_RUNS=100000 spreads that many requests over
 * the operations. A failure names fast-check's shrunk counterexample. Inputs that found a bug
 * stay as fixed examples (FOUND).
 */
import http from "node:http";
import { sql } from "kysely";
import fc from "fast-check";
import { privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { adminToken, createUser, type TestUser } from "../support/api.ts";
import { filesUnder, transactionCount, useArtworkPlatform } from "../support/artworks.ts";
import { certifiedArtwork } from "../support/marketplace.ts";
import { contextOf, type FuzzContext, type OpenApiDocument, type Operation, operationsOf } from "../support/openapi-document.ts";
import { type FuzzRequest, requestsFor } from "../support/openapi-fuzz.ts";
import { bytes, expand, filler, idPrefix } from "../support/openapi-fuzz-values.ts";
import { waitFor } from "../support/wait.ts";

// 1,500 in `npm test`'s fast tier (about 12 requests an operation), 4,000 in test:full and CI.
const RUNS = Number(process.env.FUZZ_RUNS ?? (process.env.TEST_TIER === "fast" ? 1500 : 4000));
const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const CONCURRENCY = 6;

const p = useArtworkPlatform({
  RATE_LIMIT_TOKEN_PER_MINUTE: "1000000000",
  RATE_LIMIT_ANONYMOUS_PER_MINUTE: "1000000000",
  // Held seats would expire (a write) in the middle of a long run.
  TICKET_HOLD_SECONDS: "86400",
});

/** Tables that legitimately change while the fuzzer runs, though none of its requests is accepted. */
const CHANGING: Record<string, string> = {
  // A handler's refusal (404, 409) is stored under the request's Idempotency-Key, so that a retry replays it.
  idempotency_keys: "refusals stored under their Idempotency-Key",
  // The chain operations' read cursors follow the indexer, which indexes the blocks other test files mine meanwhile.
  chain_cursors: "the indexer's progress through blocks other test files mine",
};

const json = { "content-type": "application/json" };
const form = { "content-type": "multipart/form-data; boundary=b" };

/**
 * Inputs that found a bug, by operationId: run first, every time. `{prefix}` in a target stands for
 * the id of the resource of that prefix the setup made.
 */
const FOUND: Record<string, FuzzRequest[]> = {
  // Bytes that are not UTF-8 were decoded to U+FFFD and stored (201).
  createDiscussion: [{ method: "POST", target: "/v1/community/discussions", headers: json, body: `{"title":"a","content":"a${bytes("80")}b"}`, defects: ["body.content: bytes 80 (not UTF-8)"] }],
  createPost: [
    {
      method: "POST",
      target: "/v1/community/posts",
      headers: form,
      body: `--b\r\nContent-Disposition: form-data; name="type"\r\n\r\ndiscussion\r\n--b\r\nContent-Disposition: form-data; name="content"\r\n\r\na${bytes("80")}b\r\n--b--\r\n`,
      defects: ["form content: bytes 80 (not UTF-8)"],
    },
  ],
  // 20,000 arrays deep: the Idempotency-Key's fingerprint overflowed the stack (500).
  withdrawOffer: [
    {
      method: "POST",
      target: "/v1/marketplace/offers/off_01JD3Y5V0Q3G7W7J6T4N4C2X1M/withdraw",
      headers: { ...json, "idempotency-key": "deep-nesting" },
      body: `{"deep":${filler(20_000, "[")}${filler(20_000, "]")}}`,
      defects: ["path id: no such resource"],
    },
  ],
  // A DELETE's body not sent as JSON was ignored: the submission was withdrawn (204).
  withdrawSubmission: [{ method: "DELETE", target: "/v1/community/challenges/{chl}/submissions/{sub}", headers: { "content-type": "application/xml" }, body: "<a>1</a>", defects: ["content-type: application/xml"] }],
  // Node's answer to a request line over 16 KiB: a bare 431 without a problem.
  getArtwork: [{ method: "GET", target: `/v1/artworks/${filler(20_000)}`, headers: {}, body: null, defects: ["path id: 20,000 characters"] }],
};

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY * 2 });

function send(baseUrl: string, r: FuzzRequest, token: string): Promise<Answer> {
  const url = new URL(baseUrl);
  const body = r.body === null ? null : expand(r.body);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: r.method,
        path: expand(r.target).toString("latin1"),
        agent,
        headers: { ...r.headers, authorization: `Bearer ${token}`, ...(body ? { "content-length": String(body.length) } : {}) },
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => resolve({ status: res.statusCode!, contentType: res.headers["content-type"] ?? "", text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error("no answer within 30 s")));
    // A server that answers before reading a large body may reset the connection under it.
    req.on("error", (err) => answered || reject(err));
    req.end(body ?? undefined);
  });
}

/** What is wrong with an answer, or null. */
function verdict(op: Operation, r: FuzzRequest, a: Answer): string | null {
  if (a.status >= 500) return `answered ${a.status}`;
  if (r.defects.length > 0 && a.status < 400) return `accepted a request with defects (${r.defects.join("; ")}): ${a.status}`;
  if (a.status < 400) return null;
  const documented = (op.responses[String(a.status)] ?? []).filter((type) => type !== "application/problem+json");
  if (documented.some((type) => a.contentType.startsWith(type))) return null;
  if (!a.contentType.startsWith("application/problem+json")) return `${a.status} as ${a.contentType || "no content type"}, not application/problem+json`;
  let problem: { code?: unknown; title?: unknown; status?: unknown };
  try {
    problem = JSON.parse(a.text);
  } catch {
    return `${a.status} problem+json that is not JSON`;
  }
  if (typeof problem.code !== "string" || problem.code === "") return `${a.status} problem without a code`;
  if (typeof problem.title !== "string") return `${a.status} problem without a title`;
  if (problem.status !== a.status) return `problem status ${String(problem.status)} on an HTTP ${a.status}`;
  return null;
}

type Fingerprint = Record<string, { rows: number; hash: string }>;

/** Per table of the public schema: its row count and a hash of its rows. */
async function storeFingerprint(): Promise<Fingerprint> {
  const tables = await sql<{ name: string }>`
    select table_name as name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`.execute(p.db);
  const out: Fingerprint = {};
  for (const { name } of tables.rows) {
    const { rows } = await sql<{ rows: string; hash: string }>`
      select count(*) as rows, md5(coalesce(string_agg(md5(t::text), '' order by md5(t::text)), '')) as hash from ${sql.table(name)} t`.execute(p.db);
    out[name] = { rows: Number(rows[0]!.rows), hash: rows[0]!.hash };
  }
  return out;
}

/**
 * The worker's work due or under way, by queue, read in one snapshot: events not yet dispatched,
 * deliveries due or in flight, chain operations not settled, jobs due or running. Each piece of work
 * stays an unfinished row of its queue until its writes are done, so once none is left nothing
 * changes the store until a retry's or a job's time comes.
 */
async function workUnderWay(): Promise<Record<string, number>> {
  const { rows } = await sql<Record<string, number>>`
    select
      (select count(*)::int from outbox_events where dispatched_at is null and (dispatch_after is null or dispatch_after <= now())) as outbox_events,
      (select count(*)::int from webhook_deliveries where status = 'pending' and (in_flight_since is not null or next_retry_at <= now())) as webhook_deliveries,
      (select count(*)::int from chain_operations where status in ('pending', 'sent')) as chain_operations,
      (select count(*)::int from graphile_worker.jobs where locked_at is not null or (run_at <= now() and attempts < max_attempts)) as jobs`.execute(p.db);
  return Object.fromEntries(Object.entries(rows[0]!).filter(([, n]) => n > 0));
}

/** Waits until the worker has nothing due or under way (workUnderWay), naming what it still had. */
const workerQuiet = () =>
  waitFor(
    async () => {
      const busy = await workUnderWay();
      if (Object.keys(busy).length > 0) throw new Error(`the worker still has work: ${JSON.stringify(busy)}`);
      return true;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );

function storeChanges(before: Fingerprint, after: Fingerprint): string[] {
  return Object.keys({ ...before, ...after }).flatMap((table) => {
    const [b, a] = [before[table], after[table]];
    if (!b || !a) return [`${table}: ${b ? "dropped" : "created"}`];
    if (CHANGING[table]) return [];
    if (b.rows !== a.rows) return [`${table}: ${b.rows} -> ${a.rows} rows`];
    return b.hash === a.hash ? [] : [`${table}: rows changed`];
  });
}

/** A stable seed per operation: adding a route does not reshuffle the others' runs. */
function seedOf(operationId: string): number {
  let h = 2166136261;
  for (const c of operationId) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  return (SEED ^ h) | 0;
}

async function inPool<T>(items: T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(Array.from({ length: size }, async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
  }));
}

describe("fuzzing every operation of the OpenAPI document", () => {
  let operations: Operation[] = [];
  let ctx: FuzzContext;
  let admin: string;
  let artist: TestUser;
  /** Only DELETE /v1/auth/token gets it: were a request accepted there, it would revoke it, not the others. */
  let revocable: TestUser;
  let baseline: { store: Fingerprint; files: string[]; relayerNonce: number };

  const tokenFor = (op: Operation) => {
    if (op.method === "DELETE" && op.path === "/v1/auth/token") return revocable.token;
    const adminOnly = op.auth.scope?.startsWith("admin") || (op.auth.roles !== undefined && op.auth.roles.every((role) => role === "admin"));
    return adminOnly ? admin : artist.token;
  };

  beforeAll(async () => {
    let collector: TestUser;
    [admin, artist, collector, revocable] = await Promise.all([
      adminToken(p.api),
      createUser(p.api, { role: "artist", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
      createUser(p.api, { role: "collector", scope: ["write"] }),
    ]);
    const answers: unknown[] = [];
    const call = async (token: string, method: string, path: string, body?: unknown) => {
      const res = await p.api.request(method, path, { token, body });
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
      answers.push(res.body);
      return res.body;
    };
    const soon = (ms: number) => new Date(Date.now() + ms).toISOString();

    // One of each resource a path can name, where it is cheap: an artwork (certified on-chain), its
    // listing and an offer, community pieces, an event with a ticket and an order awaiting payment.
    const [artworkId, , , , post, discussion, challenge, event] = await Promise.all([
      certifiedArtwork(p, artist),
      call(artist.token, "POST", "/v1/payment-methods", { token: "pm_card_visa" }),
      call(artist.token, "POST", "/v1/api-keys", { name: "fuzz" }),
      // An event the fuzzer never causes: no delivery runs while it does.
      call(artist.token, "POST", "/v1/webhooks", { url: "https://93.184.216.34/hook", events: ["ticket.refunded"] }),
      call(artist.token, "POST", "/v1/community/posts", { type: "discussion", content: "First light", tags: ["dawn"] }),
      call(artist.token, "POST", "/v1/community/discussions", { title: "Varnish", content: "Which one?" }),
      call(admin, "POST", "/v1/community/challenges", { title: "Ink", theme: "ink", prize_pool_usd: 10, starts_at: soon(-1000), deadline: soon(7 * 86_400_000) }),
      call(admin, "POST", "/v1/events", {
        title: "Prints",
        type: "exhibition",
        format: "hybrid",
        location: "Lisbon",
        starts_at: soon(10 * 86_400_000),
        ends_at: soon(10 * 86_400_000 + 3_600_000),
        tickets: { virtual: { price_usd: 0 }, in_person: { price_usd: 25, capacity: 50 } },
      }),
      call(admin, "POST", "/v1/admin/rewards", { name: "Poster", points_cost: 10, kind: "code" }),
    ]);
    const listing = await call(artist.token, "POST", "/v1/marketplace/listings", { artwork_id: artworkId, price_usd: 100, accepts_offers: true });
    await Promise.all([
      call(collector.token, "POST", "/v1/marketplace/offers", { listing_id: listing.listing_id, offer_amount_usd: 50, payment_method_id: "pm_card_visa" }),
      call(collector.token, "POST", `/v1/community/posts/${post.post_id}/comments`, { content: "Lovely" }),
      call(collector.token, "POST", `/v1/community/discussions/${discussion.discussion_id}/replies`, { content: "Dammar" }),
      call(artist.token, "POST", `/v1/community/challenges/${challenge.challenge_id}/submissions`, { artwork_id: artworkId, content: "Mine" }),
      call(artist.token, "POST", `/v1/events/${event.event_id}/tickets`, { kind: "virtual", quantity: 1 }),
      call(artist.token, "POST", `/v1/events/${event.event_id}/tickets`, { kind: "in_person", quantity: 1 }),
    ]);

    const doc = (await p.api.request("GET", "/v1/openapi.json")).body as OpenApiDocument;
    operations = operationsOf(doc);
    // Every list a caller can read names more ids (deliveries, ledger entries, tickets).
    for (const op of operations.filter((o) => o.method === "GET" && !o.path.includes("{") && !o.parameters.some((q) => q.required))) {
      const res = await p.api.request("GET", op.path, { token: tokenFor(op) });
      if (res.status === 200 && res.body !== undefined) answers.push(res.body);
    }
    const ids = new Map<string, string[]>();
    // JSON.stringify's replacer visits every value of every answer.
    JSON.stringify(answers, (_key, value) => {
      const prefix = idPrefix(value);
      if (prefix && !ids.get(prefix)?.includes(value)) ids.set(prefix, [...(ids.get(prefix) ?? []), value]);
      return value;
    });
    ctx = contextOf(doc, ids);

    // The setup's own work (the certification, jobs, webhooks' outbox) is done before the baseline.
    await workerQuiet();
    baseline = { store: await storeFingerprint(), files: filesUnder(p.storageDir), relayerNonce: await transactionCount(privateKeyToAccount(p.relayerKey).address) };
  }, 180_000);

  const statuses = new Map<number, number>();
  let sent = 0;
  const covered = new Set<string>();

  it(
    "answers every generated request without a 5xx, refuses each one with a defect, every refusal a problem+json",
    async () => {
      expect(operations.length).toBeGreaterThan(80);
      const runsPerOperation = Math.max(10, Math.ceil(RUNS / operations.length));
      const failures: string[] = [];
      const started = performance.now();
      await inPool(operations, CONCURRENCY, async (op) => {
        const token = tokenFor(op);
        try {
          const property = fc.asyncProperty(requestsFor(ctx, op), async (r) => {
            const answer = await send(p.api.url, r, token);
            sent++;
            covered.add(op.operationId);
            statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
            const wrong = verdict(op, r, answer);
            if (wrong) throw new Error(`${wrong}\n  answer: ${answer.status} ${answer.contentType} ${answer.text.slice(0, 600)}`);
          });
          const examples = (FOUND[op.operationId] ?? []).map((r): [FuzzRequest] => [{ ...r, target: r.target.replace(/\{([a-z]+)\}/g, (_m, prefix: string) => ctx.ids(prefix)[0]!) }]);
          await fc.assert(property, { seed: seedOf(op.operationId), numRuns: runsPerOperation, examples });
        } catch (err) {
          const { message, cause } = err as Error & { cause?: Error };
          failures.push(`${op.method} ${op.path} (${op.operationId}): ${message.replace(/\n\nHint:.*$/s, "")}\nGot: ${cause?.message ?? ""}`);
        }
      });
      const histogram = [...statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`).join(" ");
      console.log(
        `[fuzz] ${sent} requests, ${covered.size}/${operations.length} operations (${runsPerOperation} runs each, seed ${SEED}) in ${Math.round((performance.now() - started) / 1000)} s; statuses: ${histogram}`,
      );
      if (failures.length) throw new Error(`${failures.length} operation(s) failed:\n\n${failures.join("\n\n")}`);
    },
    Math.max(150_000, RUNS * 60),
  );

  it("stored nothing and sent no chain transaction", async () => {
    // Work a request could have set going (a job, an outbox event) has done its writes.
    await workerQuiet();
    expect(storeChanges(baseline.store, await storeFingerprint())).toEqual([]);
    expect(filesUnder(p.storageDir)).toEqual(baseline.files);
    expect(await transactionCount(privateKeyToAccount(p.relayerKey).address)).toBe(baseline.relayerNonce);
  });
});
