/**
 * The SDK as an integrator gets it: `npm pack` in clients/typescript (whose prepack compiles it into
 * dist/), the tarball installed by name into a project in a temporary directory outside the
 * repository, and there
 * - a Node program (sdk-package/consumer.ts) type-checked against the package's .d.ts under strict,
 *   exactOptionalPropertyTypes, noUncheckedIndexedAccess and NodeNext, then run with plain node
 *   against this file's API;
 * - a web page's script (sdk-package/browser.ts) type-checked with the DOM library and no Node
 *   types, and bundled for the browser.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../api/src/modules/webhooks/signature.ts";
import { createUser, useTestApi } from "../support/api.ts";

const api = useTestApi();
const root = path.resolve(import.meta.dirname, "../..");
const fixtures = path.join(import.meta.dirname, "sdk-package");
const run = promisify(execFile);

/** npm as a shell would run it: none of the npm_* settings of the `npm run` that may have started vitest. */
const npmEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
const npm = (args: string[], cwd: string) => run("npm", args, { cwd, env: npmEnv, maxBuffer: 16 << 20 });
/** The repository's TypeScript, on this Node (22), in the scratch project. */
const tsc = (project: string, cwd: string) => run(process.execPath, [path.join(root, "node_modules/typescript/bin/tsc"), "-p", project], { cwd }).catch((e: { stdout?: string }) => {
  throw new Error(`tsc -p ${project} failed:\n${e.stdout ?? e}`);
});

let scratch = "";
let packed: { name: string; version: string; filename: string; files: { path: string }[] };

beforeAll(async () => {
  scratch = mkdtempSync(path.join(tmpdir(), "sdk-consumer-"));
  const { stdout } = await npm(["pack", "--json", "--pack-destination", scratch], path.join(root, "clients/typescript"));
  [packed] = JSON.parse(stdout) as [typeof packed];
  const tarball = path.join(scratch, packed.filename);

  writeFileSync(path.join(scratch, "package.json"), JSON.stringify({ name: "sdk-consumer", private: true, type: "module" }));
  for (const file of ["consumer.ts", "browser.ts", "tsconfig.json", "tsconfig.browser.json"]) copyFileSync(path.join(fixtures, file), path.join(scratch, file));
  // The repository's own @types/node, and openapi-fetch: from the npm cache that its install filled, else the registry.
  const typesNode = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { devDependencies: Record<string, string> }).devDependencies["@types/node"];
  await npm(["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", tarball, `@types/node@${typesNode}`], scratch);
}, 180_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("the packed SDK", () => {
  it("is @art-platform/sdk: compiled JavaScript and declarations, its README and the repository's license, no TypeScript sources", () => {
    expect(packed).toMatchObject({ name: "@art-platform/sdk", version: "0.1.0" });
    const files = packed.files.map((f) => f.path).sort();
    expect(files).toEqual(expect.arrayContaining(["LICENSE", "README.md", "package.json", "dist/index.js", "dist/index.d.ts", "dist/schema.d.ts", "dist/webhooks.js"]));
    expect(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
    const manifest = JSON.parse(readFileSync(path.join(scratch, "node_modules/@art-platform/sdk/package.json"), "utf8"));
    expect(manifest.private).toBeUndefined();
    expect(manifest.license).toBe("MIT");
  });

  it("type-checks a Node consumer under strict, exactOptionalPropertyTypes, noUncheckedIndexedAccess and NodeNext, which then runs with plain node", async () => {
    await tsc("tsconfig.json", scratch);
    const user = await createUser(api);
    const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
    const payload = JSON.stringify({ id: "whe_outside", event: "ping" });
    const headers = signWebhook({ id: "whd_outside", timestamp: Math.floor(Date.now() / 1000), body: payload, secrets: [secret] });

    const { stdout } = await run(process.execPath, ["out/consumer.js"], {
      cwd: scratch,
      env: { PATH: process.env.PATH, API_URL: api.url, API_KEY: user.apiKey, WEBHOOK: JSON.stringify({ payload, headers, secret }) },
    });
    const seen = JSON.parse(stdout);
    const posts = await api.db.selectFrom("community_posts").select(["id", "content"]).where("author_id", "=", user.id).execute();
    expect(posts.map((p) => p.content).sort()).toEqual(["A second one", "From outside the repository"]);
    const keyed = posts.find((p) => p.content === "From outside the repository")!.id;
    expect({ ...seen, postIds: [...seen.postIds].sort() }).toEqual({
      me: user.id,
      created: keyed,
      replayed: keyed,
      replayHeader: "true",
      pages: [1, 2],
      postIds: posts.map((p) => p.id).sort(),
      problem: { status: 404, code: "not_found", requestId: expect.stringMatching(/^req_/) },
      verified: true,
      tampered: false,
    });
  });

  it("type-checks with the DOM library and no Node types, and bundles for the browser", async () => {
    await tsc("tsconfig.browser.json", scratch);
    const bundle = await build({ absWorkingDir: scratch, entryPoints: ["browser.ts"], bundle: true, platform: "browser", format: "esm", write: false, logLevel: "silent" });
    expect(bundle.errors).toEqual([]);
    const text = bundle.outputFiles[0]!.text;
    expect(text).toContain("crypto.subtle");
    expect(text).not.toMatch(/from ["']node:|require\(["']node:/);
  });
});

describe("the SDK installed from the repository's folder", () => {
  it("is compiled by its prepare script, so that plain node imports it (npm install <repo>/clients/typescript)", async () => {
    const project = mkdtempSync(path.join(tmpdir(), "sdk-folder-"));
    try {
      writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "sdk-folder-consumer", private: true, type: "module" }));
      // Without a build: the install's prepare makes dist/ (the scratch of the packed SDK left one).
      rmSync(path.join(root, "clients/typescript/dist"), { recursive: true, force: true });
      await npm(["install", "--prefer-offline", "--no-audit", "--no-fund", path.join(root, "clients/typescript")], project);
      writeFileSync(path.join(project, "check.mjs"), 'import { createArtPlatformClient, ApiError } from "@art-platform/sdk";\nconsole.log(JSON.stringify([typeof createArtPlatformClient, typeof ApiError]));\n');
      const { stdout } = await run(process.execPath, ["check.mjs"], { cwd: project });
      expect(JSON.parse(stdout)).toEqual(["function", "function"]);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  }, 180_000);
});
