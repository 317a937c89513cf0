/**
 * `npm run admin-key`: a new API key for the platform's first admin, printed once. `npm start`
 * shows the bootstrap key only at the start that created it; this makes another, in the database
 * `npm start` uses (the embedded one in DATA_DIR, or DATABASE_URL), whether the stack runs or not:
 * a stopped embedded Postgres is started for the moment. The key is made by the API's own
 * AccountsService; earlier keys keep working (GET and DELETE /v1/api-keys list and revoke them).
 */
import { existsSync } from "node:fs";
import path from "node:path";
import dotenv from "dotenv";
import { createPublicClient, http } from "viem";
import { CustodyWallet } from "../api/src/chain/custody.ts";
import { loadConfig } from "../api/src/config.ts";
import { createDb } from "../api/src/db/connection.ts";
import { migrateToLatest } from "../api/src/db/migrate.ts";
import { moduleMigrations } from "../api/src/modules/index.ts";
import { AccountsService } from "../api/src/modules/auth/accounts.service.ts";
import { AuthService } from "../api/src/modules/auth/auth.service.ts";
import { UsersService } from "../api/src/modules/users/users.service.ts";
import { runningClusterUrl, startEmbeddedPostgres } from "./stack/postgres.ts";
import { freePort, repoRoot } from "./stack/processes.ts";
import { localCustodyMnemonic } from "./stack/runtime-files.ts";
import { readStackSettings } from "./stack/settings.ts";

dotenv.config({ path: path.join(repoRoot, ".env"), quiet: true });
const settings = readStackSettings(process.env);

let databaseUrl = settings.databaseUrl;
let where = "DATABASE_URL";
let stopPostgres = async () => {};
if (!databaseUrl) {
  const cluster = path.join(settings.dataDir, "postgres");
  if (!existsSync(path.join(cluster, "PG_VERSION"))) {
    process.stderr.write(`There is no local database in ${cluster} yet: npm start creates it, with the first admin's key.\n`);
    process.exit(1);
  }
  where = `the local database in ${cluster.startsWith(repoRoot) ? path.relative(repoRoot, cluster) : cluster}`;
  databaseUrl = runningClusterUrl(cluster, settings.embeddedDatabaseName);
  if (!databaseUrl) {
    const postgres = await startEmbeddedPostgres({ dataDir: cluster, port: await freePort(), logFile: path.join(settings.logDir, "postgres-admin-key.log") });
    databaseUrl = postgres.url(settings.embeddedDatabaseName);
    stopPostgres = () => postgres.stop();
  }
}

const custodyMnemonic = settings.custodyMnemonic ?? localCustodyMnemonic(settings.dataDir);
const rpcUrl = settings.chainRpcUrl ?? `http://127.0.0.1:${settings.hardhatNodePort}`;
// The API's settings as the stack gives them; nothing here reaches the chain.
const config = loadConfig({ ...process.env, DATABASE_URL: databaseUrl, CHAIN_RPC_URL: rpcUrl, CUSTODY_MNEMONIC: custodyMnemonic });
const db = createDb(databaseUrl, 2);
try {
  await migrateToLatest(db, moduleMigrations);
  const users = new UsersService(db, new CustodyWallet(custodyMnemonic));
  const auth = new AuthService(db, config, users, createPublicClient({ transport: http(rpcUrl) }));
  const created = await new AccountsService(db, users, auth).createAdminKey(`npm run admin-key ${new Date().toISOString()}`);
  if (!created) {
    process.stderr.write(`No active admin in ${where}: an admin can make another user an admin (PATCH /v1/admin/users/{id}).\n`);
    process.exitCode = 1;
  } else {
    process.stdout.write(`Admin API key (shown once): ${created.apiKey}\n`);
    process.stdout.write(`  for the admin ${created.userId} in ${where}; earlier keys still work (GET and DELETE /v1/api-keys).\n`);
  }
} finally {
  await db.destroy();
  await stopPostgres();
}
