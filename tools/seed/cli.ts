/**
 * `npm run seed -- --artworks 100000 [--users N] [--listings N] [--fractional N] [--events N] [--posts N]`:
 * fills the stack that `npm start` runs (or the one the environment and `.env` describe, as for
 * `npm start`) with users, certified artworks, listings, fractionalized artworks, events and posts;
 * see seed.ts. Defaults: a user for every ten artworks, a listing for every five, a share class and
 * an event for every twenty, a post for each. Run it while the stack runs: it mints through the chain
 * and waits for the indexer.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import dotenv from "dotenv";
import { readChainDeployment } from "../../api/src/chain/chain-identity.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { chainIdAt } from "../stack/chain.ts";
import { repoRoot } from "../stack/processes.ts";
import { localCustodyMnemonic } from "../stack/runtime-files.ts";
import { HARDHAT_ACCOUNT_0_KEY, readStackSettings } from "../stack/settings.ts";
import { seedPlatform } from "./seed.ts";

dotenv.config({ path: path.join(repoRoot, ".env"), quiet: true });
const say = (line: string) => process.stdout.write(`[seed] ${line}\n`);

const { values } = parseArgs({
  options: {
    artworks: { type: "string", default: "1000" },
    users: { type: "string" },
    listings: { type: "string" },
    fractional: { type: "string" },
    events: { type: "string" },
    posts: { type: "string" },
  },
});
const count = (name: string, raw: string | undefined, fallback: number) => {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 10_000_000) throw new Error(`--${name} must be an integer from 0 to 10000000, got "${raw}"`);
  return n;
};
const artworks = count("artworks", values.artworks, 1000);
const counts = {
  artworks,
  users: count("users", values.users, Math.max(10, Math.ceil(artworks / 10))),
  listings: count("listings", values.listings, Math.floor(artworks / 5)),
  fractional: count("fractional", values.fractional, Math.floor(artworks / 20)),
  events: count("events", values.events, Math.floor(artworks / 20)),
  posts: count("posts", values.posts, artworks),
};

const settings = readStackSettings(process.env);
const databaseUrl = settings.databaseUrl ?? `postgres://postgres@127.0.0.1:${settings.embeddedPostgresPort}/${settings.embeddedDatabaseName}`;
const rpcUrl = settings.chainRpcUrl ?? `http://127.0.0.1:${settings.hardhatNodePort}`;
const db = createDb(databaseUrl, 1);
const deployment = await readChainDeployment(db).finally(() => db.destroy());
if (!deployment?.artCertificate) {
  throw new Error(`no chain deployment is recorded in ${databaseUrl.replace(/\/\/[^@]*@/, "//")}: start the stack first (npm start)`);
}
say(`seeding ${JSON.stringify(counts)} into ${databaseUrl.replace(/\/\/[^@]*@/, "//")}, chain ${rpcUrl}`);
const report = await seedPlatform(
  {
    databaseUrl,
    rpcUrl,
    chainId: await chainIdAt(rpcUrl),
    relayerPrivateKey: settings.relayerPrivateKey ?? HARDHAT_ACCOUNT_0_KEY,
    custodyMnemonic: settings.custodyMnemonic ?? localCustodyMnemonic(settings.dataDir),
    artCertificate: deployment.artCertificate,
    artShares: deployment.artShares ?? null,
    publicBaseUrl: settings.publicBaseUrl ?? `http://127.0.0.1:${settings.apiPort}`,
    storageDir: process.env.STORAGE_DIR || path.join(settings.dataDir, "storage"),
    viewsSchema: settings.viewsSchema,
    royaltyBps: Number(process.env.ARTWORK_ROYALTY_BPS || 500),
  },
  counts,
  { log: say },
);
say(`done in ${report.seconds.total} s: ${JSON.stringify(report.counts)}; ${report.transactions} certifyBatch transactions; seconds ${JSON.stringify(report.seconds)}`);
