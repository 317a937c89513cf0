/**
 * The headless Chromium of every browser test, so that `npm install` is all a machine needs. In order:
 * 1. `CHROMIUM_PATH`, when set;
 * 2. a system browser on PATH (chromium, chromium-browser, google-chrome), unless
 *    `TEST_IGNORE_SYSTEM_CHROMIUM=1`;
 * 3. the Chromium shipped inside the `@sparticuz/chromium` npm package, unpacked to the temp dir
 *    (`/tmp/chromium`) on first use, about 2 s.
 */
import { accessSync, closeSync, constants, existsSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { type Browser, type BrowserContext, chromium } from "playwright-core";

export interface ChromiumExecutable {
  executablePath: string;
  args: string[];
  source: "CHROMIUM_PATH" | "system" | "@sparticuz/chromium";
}

const systemBrowserNames = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
/** Quiet, offline and deterministic: no sync, updates, first-run UI or background requests. */
const commonArgs = ["--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
// The package's serverless flags, less the two that would let a page do what a real browser forbids:
// the tests check what the pages allow (CSP, escaping), so the browser must keep its web security.
const unsafeArgs = new Set(["--disable-web-security", "--allow-running-insecure-content"]);

let found: Promise<ChromiumExecutable> | undefined;

/** Where this process's browser comes from (resolved once). */
export function findChromium(): Promise<ChromiumExecutable> {
  found ??= resolveChromium();
  return found;
}

/** A headless Chromium with a throwaway profile; close it when done. */
export async function launchChromium(): Promise<Browser> {
  const { executablePath, args } = await findChromium();
  return chromium.launch({ executablePath, args, headless: true });
}

/** A headless Chromium context with its profile in `userDataDir`; close it when done. */
export async function launchChromiumContext({ userDataDir }: { userDataDir: string }): Promise<BrowserContext> {
  const { executablePath, args } = await findChromium();
  return chromium.launchPersistentContext(userDataDir, { executablePath, args, headless: true });
}

async function resolveChromium(): Promise<ChromiumExecutable> {
  const explicit = process.env.CHROMIUM_PATH;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`CHROMIUM_PATH=${explicit} is not an executable file`);
    return { executablePath: explicit, args: systemArgs(), source: "CHROMIUM_PATH" };
  }
  if (process.env.TEST_IGNORE_SYSTEM_CHROMIUM !== "1") {
    const system = findOnPath(systemBrowserNames);
    if (system) return { executablePath: system, args: systemArgs(), source: "system" };
  }
  return packagedChromium();
}

function systemArgs(): string[] {
  return ["--headless", "--no-sandbox", "--disable-gpu", ...commonArgs];
}

async function packagedChromium(): Promise<ChromiumExecutable> {
  const { default: packaged } = await import("@sparticuz/chromium");
  // The package exports no package.json: read it next to its entry point (build/index.js).
  const entry = createRequire(import.meta.url).resolve("@sparticuz/chromium");
  const { version } = JSON.parse(readFileSync(path.join(path.dirname(entry), "..", "package.json"), "utf8")) as { version: string };
  const executablePath = await withUnpackLock(version, () => packaged.executablePath());
  return {
    executablePath,
    args: [...packaged.args.filter((arg) => !unsafeArgs.has(arg)), ...commonArgs],
    source: "@sparticuz/chromium",
  };
}

/**
 * The package unpacks to fixed paths in the temp dir, skips the work when `chromium` exists there,
 * and writes in place: a run killed mid-unpack, another version's binary, or two test processes
 * unpacking at once would leave a broken browser. One process unpacks at a time (an exclusive lock
 * file), and a marker naming the version is written only after a complete unpack.
 */
async function withUnpackLock(version: string, unpack: () => Promise<string>): Promise<string> {
  const tmp = os.tmpdir();
  const marker = path.join(tmp, "chromium.unpacked");
  const lock = path.join(tmp, "chromium.unpack-lock");
  const binary = path.join(tmp, "chromium");
  const unpacked = () => existsSync(binary) && readText(marker) === version;

  const deadline = Date.now() + 120_000;
  for (;;) {
    if (unpacked()) return binary;
    let fd: number;
    try {
      fd = openSync(lock, "wx");
      writeSync(fd, String(process.pid));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = readText(lock); // "" while its creator is writing its pid, null once released
      if (holder && !isAlive(Number(holder))) rmSync(lock, { force: true }); // its holder died
      else if (Date.now() > deadline) throw new Error(`${lock} held for 2 minutes by a running process`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      continue;
    }
    try {
      if (unpacked()) return binary;
      rmSync(marker, { force: true });
      rmSync(binary, { force: true });
      const executablePath = await unpack();
      writeFileSync(marker, version);
      return executablePath;
    } finally {
      closeSync(fd);
      rmSync(lock, { force: true });
    }
  }
}

function findOnPath(names: string[]): string | undefined {
  const dirs = (process.env.PATH ?? "").split(path.delimiter).filter(Boolean);
  for (const name of names) {
    for (const dir of dirs) {
      const candidate = path.join(dir, name);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
