/**
 * The quickstart's SDK tour (docs/integrators/quickstart.md, "With the TypeScript SDK") as a reader
 * runs it: the program copied from the guide into a folder outside the repository, the SDK installed
 * there from the repository's folder, run with tsx against `npm start`; it prints what the guide says.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { binPath, childEnv, repoRoot } from "../../tools/stack/processes.ts";
import { type BootedStack, bootStack } from "../support/stack.ts";

const run = promisify(execFile);
let stack: BootedStack;
const folder = mkdtempSync(path.join(tmpdir(), "sdk-tour-"));

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

it("runs as written from a folder of its own and prints what the guide shows", async () => {
  const { stdout } = await run(binPath("tsx"), ["tour.mts"], { cwd: folder, env: childEnv({ KEY: stack.adminApiKey!, API: stack.url }), timeout: 120_000 });
  const [sale, certificate] = stdout.trim().split("\n");
  expect(sale).toMatch(/^20[12] completed 0x[0-9a-f]{64}$/);
  expect(certificate).toMatch(new RegExp(`^true ${stack.url.replaceAll(".", "\\.")}/verify/art_[0-9A-Z]{26}$`));
}, 180_000);
