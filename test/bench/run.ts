/**
 * `npm run bench [-- suite…]`: each suite runs on a throwaway platform of its own (embedded
 * Postgres, Hardhat node, contracts) and prints a Markdown table. Suites: see SUITES.
 */
import { createBenchContext } from "./context.ts";
import { benchCertification } from "./certification.ts";
import { benchCommunity } from "./community.ts";
import { benchEvents } from "./events.ts";
import { benchFractional } from "./fractional.ts";
import { benchHttp } from "./http.ts";
import { benchMarketplace } from "./marketplace.ts";
import { benchOnchain } from "./onchain.ts";
import { benchReads } from "./reads.ts";
import { benchWebhooks } from "./webhooks.ts";

const SUITES: Record<string, (ctx: Awaited<ReturnType<typeof createBenchContext>>) => Promise<string>> = {
  http: benchHttp,
  webhooks: benchWebhooks,
  certification: benchCertification,
  marketplace: benchMarketplace,
  onchain: benchOnchain,
  community: benchCommunity,
  fractional: benchFractional,
  events: benchEvents,
  reads: benchReads,
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const unknown = wanted.filter((w) => !(w in SUITES));
if (unknown.length > 0) {
  process.stderr.write(`Unknown suite(s): ${unknown.join(", ")}. Suites: ${Object.keys(SUITES).join(", ")}\n`);
  process.exit(2);
}
for (const name of wanted.length > 0 ? wanted : Object.keys(SUITES)) {
  const ctx = await createBenchContext();
  try {
    process.stdout.write(`\n## ${name}\n\n${await SUITES[name]!(ctx)}\n`);
  } finally {
    await ctx.dispose();
  }
}
