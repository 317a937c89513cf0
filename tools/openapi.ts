/**
 * Writes the OpenAPI document the API serves at /v1/openapi.json, built from the route
 * declarations without starting anything, to docs/openapi.json (or the path given), the error
 * codes' guide beside it (docs/errors.md) and the moves' matrix of docs/ownership-and-money.md:
 *
 *   npm run openapi                 (docs/openapi.json, committed: the SDK's types come from it)
 *   npx tsx tools/openapi.ts out.json
 *
 * The documented server is the one `npm start` runs; a deployment serves its own PUBLIC_BASE_URL.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describeApi } from "../api/src/app.ts";
import { type Config, loadConfig } from "../api/src/config.ts";
import { modules } from "../api/src/modules/index.ts";
import { writeMovesDoc } from "./docs/moves.ts";
import { errorsMarkdown } from "./errors-doc.ts";

export const DOCUMENTED_SERVER = "http://127.0.0.1:3000";

/** The settings the committed document is built with: declaring routes reads only these, nothing connects. */
export function documentationConfig(): Config {
  return loadConfig({
    PUBLIC_BASE_URL: DOCUMENTED_SERVER,
    DATABASE_URL: "postgres://not-connected/openapi",
    CHAIN_RPC_URL: "http://not-connected.invalid",
    CUSTODY_MNEMONIC: "test test test test test test test test test test test junk",
  });
}

/** The served document, as the committed file holds it (its server is `npm start`'s). */
export function documentedApi(): ReturnType<typeof describeApi> {
  return describeApi(documentationConfig(), modules);
}

/** The document as written to disk: two-space JSON and a final newline. */
export function documentText(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = path.resolve(process.argv[2] ?? "docs/openapi.json");
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, documentText(documentedApi()));
  console.log(`wrote ${path.relative(process.cwd(), out)}`);
  // Beside it, the error codes' guide, from the catalogue the document's error examples come from.
  const errors = path.join(path.dirname(out), "errors.md");
  writeFileSync(errors, errorsMarkdown());
  console.log(`wrote ${path.relative(process.cwd(), errors)}`);
  // And the moves' matrix of the ownership guide, from the table every move passes.
  writeMovesDoc();
  console.log("wrote the moves section of docs/ownership-and-money.md");
}
