/**
 * An idle `npm start` keeps seeing blocks. The local node's websocket feed once fell silent after
 * half an hour idle (its socket still open): the indexer stayed behind, a buy-now answered
 * `202 pending` and completed only after the watchdog's stall timeout. The stack's indexer follows
 * the local node by polling, which errors rather than going silent: it holds no websocket to the
 * node, and after the node was paused (SIGSTOP until the API's readiness probe says the chain is down, then SIGCONT)
 * the next sale completes within its request.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it, onTestFailed } from "vitest";
import { readProcessRecords } from "../../tools/stack/runtime-files.ts";
import { adminSdk, artworkForm, createSdkUser, sdk } from "../support/sdk.ts";
import { type BootedStack, bootStack } from "../support/stack.ts";
import { waitFor } from "../support/wait.ts";

let stack: BootedStack | undefined;

beforeAll(async () => {
  stack = await bootStack();
}, 180_000);

afterAll(async () => {
  await stack?.dispose();
}, 90_000);

/** The environment a recorded process of the stack runs with. */
function environmentOf(name: string): Record<string, string> {
  const record = readProcessRecords(stack!.dataDir).find((r) => r.name.startsWith(name))!;
  const entries = readFileSync(`/proc/${record.pid}/environ`, "utf8").split("\0").filter(Boolean);
  return Object.fromEntries(entries.map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
}

it("follows the local node without a websocket, and a sale after the node's socket was paused completes in its request", async () => {
  const s = stack!;
  onTestFailed(() => console.log(`[stack-idle] ${s.diagnostics()}`));
  // No new-heads subscription to go silent: the indexer polls the Chain RPC.
  const indexerEnv = environmentOf("indexer");
  expect(indexerEnv.CHAIN_RPC_URL).toBe(s.rpcUrl);
  expect(indexerEnv.CHAIN_WS_URL ?? "").toBe("");

  const admin = adminSdk(s.url, s.adminApiKey!);
  const [artist, buyer] = await Promise.all([createSdkUser(s.url, { role: "artist", admin }), createSdkUser(s.url, { admin })]);
  const { data: created } = await artist.api.POST("/v1/artworks", { body: artworkForm() });
  await waitFor(async () => (await sdk(s.url).GET("/v1/artworks/{id}", { params: { path: { id: created.id } } })).data.status === "certified", {
    timeoutMs: 60_000,
    what: `certification of ${created.id}`,
  });
  const { data: listing } = await artist.api.POST("/v1/marketplace/listings", { body: { artwork_id: created.id, price_usd: 100, accepts_offers: false } });

  // The node stops answering anything (its process stopped) until the platform has felt it (its
  // readiness probe says the chain is down), then goes on.
  const node = s.processes.find((p) => p.name === "hardhat node")!;
  process.kill(node.pid, "SIGSTOP");
  try {
    await waitFor(
      async () => {
        const res = await fetch(`${s.url}/readyz`);
        return res.status === 503 && ((await res.json()) as { checks: { chain: { status: string } } }).checks.chain.status === "error";
      },
      { timeoutMs: 60_000, what: "/readyz to report the paused chain" },
    );
  } finally {
    process.kill(node.pid, "SIGCONT");
  }

  // The indexer is at the head again by itself, and the sale is settled and indexed within the request.
  const { data: sale, response } = await buyer.api.POST("/v1/marketplace/listings/{id}/purchase", { params: { path: { id: listing.listing_id } }, body: { payment_method_id: "pm_card_visa" } });
  expect({ status: response.status, sale: sale.status }, JSON.stringify(sale)).toEqual({ status: 201, sale: "completed" });
  const ready = await fetch(`${s.url}/readyz`);
  expect(ready.status).toBe(200);
}, 240_000);
