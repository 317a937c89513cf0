/**
 * The two tours as a reader runs them, against one `npm start` (a fresh data directory):
 * - the README's curl tour ("A five-minute tour"): its shell blocks, in order, as one bash script
 *   in a folder of its own, with the banner's admin key and this stack's addresses where the README
 *   names `npm start`'s defaults (port 3000, the node's 8545); each answer checked as the README
 *   tells the reader to (the certificate, the sale, `ownerOf` against `bob.json`'s wallet);
 * - the quickstart's SDK tour (docs/integrators/quickstart.md, "With the TypeScript SDK"): the
 *   program copied from the guide into a folder outside the repository, the SDK installed there
 *   from the repository's folder, run with tsx; it prints what the guide says.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { binPath, childEnv, repoRoot } from "../../tools/stack/processes.ts";
import { type BootedStack, bootStack } from "../support/stack.ts";
import { waitFor } from "../support/wait.ts";

const run = promisify(execFile);
let stack: BootedStack;
const folder = mkdtempSync(path.join(tmpdir(), "sdk-tour-"));

/** The README tour's shell blocks, in order, as one script. */
function readmeTour(): string {
  const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## A five-minute tour"), readme.indexOf("\n## ", readme.indexOf("## A five-minute tour") + 1));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  if (blocks.length < 5) throw new Error(`the README's tour has ${blocks.length} shell blocks, not 5`);
  return blocks.join("\n");
}

/** The JSON values a script printed one after another (objects, each possibly over several lines). */
function jsonValues(text: string): Record<string, unknown>[] {
  const values: Record<string, unknown>[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"' && depth > 0) inString = true;
    else if (c === "{") {
      if (depth++ === 0) start = i;
    } else if (c === "}" && depth > 0 && --depth === 0) values.push(JSON.parse(text.slice(start, i + 1)));
  }
  return values;
}

/** The guide's program: the TypeScript block of its SDK section, as printed. */
function tourProgram(): string {
  const guide = readFileSync(path.join(repoRoot, "docs/integrators/quickstart.md"), "utf8");
  const section = guide.slice(guide.indexOf("## With the TypeScript SDK"));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error("the quickstart has no TypeScript tour");
  return block[1]!;
}

beforeAll(async () => {
  stack = await bootStack();
  writeFileSync(path.join(folder, "package.json"), JSON.stringify({ name: "sdk-tour", private: true, type: "module" }));
  // As the guide installs it (tsx comes from the repository here: the same package the guide installs).
  const npmEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", path.join(repoRoot, "clients/typescript")], { cwd: folder, env: npmEnv });
  writeFileSync(path.join(folder, "tour.mts"), tourProgram());
}, 300_000);

afterAll(async () => {
  await stack?.dispose();
  rmSync(folder, { recursive: true, force: true });
}, 90_000);

it("README: the curl tour runs as written in a folder of its own; the chain says Bob holds the certificate", async () => {
  const tourFolder = mkdtempSync(path.join(tmpdir(), "readme-tour-"));
  try {
    const script = readmeTour()
      .replace("API=http://127.0.0.1:3000 KEY=sk_…", `API=${stack.url} KEY=${stack.adminApiKey}`)
      .replaceAll("http://127.0.0.1:8545", stack.rpcUrl);
    expect(script, "the tour names the banner's key and the default ports as the test replaces them").not.toContain("sk_…");
    // A terminal's stderr is a file the tour's `tee /dev/stderr` can open; a child's here is a socket, which it cannot: a file stands in.
    const { stdout } = await run("bash", ["-e", "-o", "pipefail", "-c", `exec 2>tour.stderr\n${script}`], { cwd: tourFolder, env: childEnv({}), timeout: 120_000 }).catch((error: Error) => {
      throw new Error(`${error.message}\nstderr: ${readFileSync(path.join(tourFolder, "tour.stderr"), "utf8")}`);
    });
    expect(JSON.parse(readFileSync(path.join(tourFolder, "tour.stderr"), "utf8").trim().split("\n").at(-1)!), "step 4 shows the listing").toMatchObject({ status: "active", price_usd: 12500 });
    const [ada, artwork, certificate, sale, ownerOf] = jsonValues(stdout);
    expect(ada).toMatchObject({ username: "ada", role: "artist", api_key: { secret: expect.stringMatching(/^sk_/) } });
    expect(artwork).toMatchObject({ title: "Harbour at Dawn", status: "pending_certification", certificate_hash: null });
    expect(certificate).toMatchObject({ artwork_id: artwork!.id, verified: true, token_id: 1, owner: String(ada!.wallet_address).toLowerCase() });
    expect(sale).toMatchObject({ type: "sale", amount_usd: 12500, platform_fee_usd: 312.5, payout_usd: 12187.5 });
    const bob = JSON.parse(readFileSync(path.join(tourFolder, "bob.json"), "utf8"));
    const bobs = String(bob.wallet_address).slice(2).toLowerCase();
    // Step 5 asks the chain at the README's contract address: this stack's, as `npm start` deploys it.
    // A 202 (the README's "still under way", under a loaded machine) is followed until the chain says so.
    if (sale!.status === "completed") expect(String(ownerOf!.result).slice(-40), "ownerOf(1) is Bob's wallet, as the README tells the reader to compare").toBe(bobs);
    else {
      expect(sale!.status).toBe("pending");
      await waitFor(async () => String(await ownerOfToken1(certificate!.contract_address as string)).slice(-40) === bobs, { timeoutMs: 60_000, what: "ownerOf(1) to be Bob's wallet" });
    }
    expect(certificate!.contract_address).toBe(readmeContract());
  } finally {
    rmSync(tourFolder, { recursive: true, force: true });
  }
}, 180_000);

/** ownerOf(1) as step 5 asks it, straight from the node. */
async function ownerOfToken1(contract: string): Promise<string> {
  const data = `0x6352211e${"1".padStart(64, "0")}`;
  const res = await fetch(stack.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_call", params: [{ to: contract, data }, "latest"] }) });
  return ((await res.json()) as { result: string }).result;
}

/** The certificate contract step 5 of the README calls. */
function readmeContract(): string {
  const match = /"to":"(0x[0-9a-f]{40})"/.exec(readmeTour());
  if (!match) throw new Error("the README's step 5 names no contract");
  return match[1]!;
}

it("quickstart: the SDK tour runs as written from a folder of its own and prints what the guide shows", async () => {
  const { stdout } = await run(binPath("tsx"), ["tour.mts"], { cwd: folder, env: childEnv({ KEY: stack.adminApiKey!, API: stack.url }), timeout: 120_000 });
  const [sale, certificate] = stdout.trim().split("\n");
  expect(sale).toMatch(/^20[12] completed 0x[0-9a-f]{64}$/);
  expect(certificate).toMatch(new RegExp(`^true ${stack.url.replaceAll(".", "\\.")}/verify/art_[0-9A-Z]{26}$`));
}, 180_000);
