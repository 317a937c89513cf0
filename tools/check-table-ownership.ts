/**
 * Two rules about queries, which the import rules (.dependency-cruiser.cjs) cannot see:
 *
 * 1. Kysely is called only where queries live (QUERY_HOMES): a `*.repository.ts` (a feature's, or
 *    a platform layer's), the database layer (api/src/db/), migrations, the indexer's views' one
 *    reader (api/src/chain/indexer-views.ts) and `paginate`. A query builder (`selectFrom`,
 *    `insertInto`, `updateTable`, `deleteFrom`, `mergeInto`, `executeQuery`), a `sql` template or a
 *    `sql.*` helper anywhere else in api/src is a violation (`queriesOutsideRepositories`). A
 *    transaction (`db.transaction()`) is not: services own them.
 *
 * 2. A module's tables are its own (shared/STYLE.md): no other module's code names them in a query.
 * Kysely names tables as strings, which the import rules (.dependency-cruiser.cjs) never see, so
 * this reads each module's `<feature>.tables.ts` to learn what it owns (the members of its
 * `<Feature>Tables` interface) and scans the rest of api/src, migrations aside, for queries naming
 * them: the table argument of `selectFrom`, `insertInto`, `updateTable`, `deleteFrom`, `mergeInto`
 * and the joins, `sql.table(...)`, and the `from`/`join`/`update`/`into` words of `sql` templates.
 * A module's `<Feature>Views` interface names the views it publishes (created in its migrations):
 * those are for the others to read.
 *
 *   npx tsx tools/check-table-ownership.ts     (part of `npm run typecheck`)
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export interface Violation {
  /** The module whose code names the table (or the top folder under api/src, e.g. `http`). */
  module: string;
  file: string;
  line: number;
  owner: string;
  table: string;
}

/** A known violation, tolerated until the named work removes it. Precise: one file, one table. */
export interface Allowed {
  file: string;
  table: string;
  reason: string;
}

/** Violations allowed for a while, each with its reason; remove an entry with its violation (a stale entry fails the check). None today. */
export const ALLOWED: Allowed[] = [];

// ---- 1. Kysely only in repositories ----

/** Where Kysely may be called, relative to the repository's root. */
export const QUERY_HOMES: { path: RegExp; why: string }[] = [
  { path: /\.repository\.ts$/, why: "a feature's repository (or a platform layer's: chain/, jobs/, http/)" },
  { path: /^api\/src\/db\//, why: "the connection, the shared tables, the migrator, locks and notifications" },
  { path: /\/migrations\//, why: "migrations" },
  { path: /^api\/src\/chain\/indexer-views\.ts$/, why: "the one reader of the indexer's views" },
  { path: /^api\/src\/lib\/pagination\.ts$/, why: "paginate: runs the list and count queries a repository hands it" },
  { path: /^api\/src\/jobs\/queue\.ts$/, why: "the job queue: graphile-worker's add_job and remove_job, no table of ours" },
];

/** A file allowed to call Kysely outside QUERY_HOMES for a while; remove it with its last query (a stale entry fails the check). */
export interface AllowedQueries {
  file: string;
  reason: string;
}

export const ALLOWED_QUERIES: AllowedQueries[] = [];

export interface QueryOutsideRepository {
  file: string;
  line: number;
  /** `selectFrom`, `sql`, `sql.table`, ... */
  call: string;
}

const BUILDER_METHODS = new Set(["selectFrom", "insertInto", "updateTable", "deleteFrom", "mergeInto", "replaceInto", "executeQuery"]);

/** Every Kysely call in api/src outside QUERY_HOMES, minus the files of `allowed`; and the allowances no call needs. */
export function queriesOutsideRepositories(root: string, allowed: AllowedQueries[] = ALLOWED_QUERIES): { violations: QueryOutsideRepository[]; stale: AllowedQueries[] } {
  const all: QueryOutsideRepository[] = [];
  for (const file of sourceFiles(path.join(root, "api/src"))) {
    const relative = path.relative(root, file).split(path.sep).join("/");
    if (QUERY_HOMES.some((home) => home.path.test(relative))) continue;
    for (const { call, line } of queriesIn(parse(file))) all.push({ file: relative, line, call });
  }
  return {
    violations: all.filter((v) => !allowed.some((a) => a.file === v.file)),
    stale: allowed.filter((a) => !all.some((v) => v.file === a.file)),
  };
}

/** The Kysely calls of a file, with their lines: query builders, `sql` templates and `sql.*` helpers. */
export function queriesIn(source: ts.SourceFile): { call: string; line: number }[] {
  const found: { call: string; line: number }[] = [];
  const at = (node: ts.Node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const { expression: receiver, name } = node.expression;
      if (BUILDER_METHODS.has(name.text)) found.push({ call: name.text, line: at(name) });
      else if (ts.isIdentifier(receiver) && receiver.text === "sql") found.push({ call: `sql.${name.text}`, line: at(node) });
    }
    if (ts.isTaggedTemplateExpression(node) && isSqlTag(node.tag)) found.push({ call: "sql", line: at(node) });
    node.forEachChild(visit);
  };
  visit(source);
  return found;
}

// ---- 2. a module's tables are its own ----

const QUERY_METHODS = new Set(["selectFrom", "insertInto", "updateTable", "deleteFrom", "mergeInto", "replaceInto", "innerJoin", "leftJoin", "rightJoin", "fullJoin", "table"]);
/** A table after a keyword of SQL text; substitutions are blanked first. */
const SQL_TABLE = /\b(?:from|join|update|into|truncate|table)\s+(?:only\s+)?(?:public\.)?"?([a-z_][a-z0-9_]*)"?/gi;

/** Which module owns which table: `<Feature>Tables` members of each module's `*.tables.ts`. */
export function tableOwners(root: string): Map<string, string> {
  const owners = new Map<string, string>();
  const modulesDir = path.join(root, "api/src/modules");
  for (const module of readdirSync(modulesDir, { withFileTypes: true }).filter((e) => e.isDirectory())) {
    for (const name of readdirSync(path.join(modulesDir, module.name)).filter((n) => n.endsWith(".tables.ts"))) {
      const source = parse(path.join(modulesDir, module.name, name));
      source.forEachChild((node) => {
        if (!ts.isInterfaceDeclaration(node) || !node.name.text.endsWith("Tables")) return;
        for (const member of node.members) {
          if (member.name && (ts.isIdentifier(member.name) || ts.isStringLiteral(member.name))) owners.set(member.name.text, module.name);
        }
      });
    }
  }
  return owners;
}

/** Every query in api/src (migrations aside) that names a table its module does not own, minus `allowed`. */
export function findViolations(root: string, allowed: Allowed[] = ALLOWED): { violations: Violation[]; stale: Allowed[] } {
  const owners = tableOwners(root);
  const all: Violation[] = [];
  for (const file of sourceFiles(path.join(root, "api/src"))) {
    const relative = path.relative(root, file).split(path.sep).join("/");
    const [top, name] = relative.slice("api/src/".length).split("/");
    const module = top === "modules" && name && !name.endsWith(".ts") ? name : top!.replace(/\.ts$/, "");
    for (const { table, line } of tablesNamed(parse(file))) {
      const owner = owners.get(table);
      if (owner && owner !== module) all.push({ module, file: relative, line, owner, table });
    }
  }
  const isAllowed = (v: Violation, a: Allowed) => a.file === v.file && a.table === v.table;
  return {
    violations: all.filter((v) => !allowed.some((a) => isAllowed(v, a))),
    stale: allowed.filter((a) => !all.some((v) => isAllowed(v, a))),
  };
}

/** The tables a file's queries name, with their lines. */
export function tablesNamed(source: ts.SourceFile): { table: string; line: number }[] {
  const found: { table: string; line: number }[] = [];
  const at = (position: number) => source.getLineAndCharacterOfPosition(position).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && QUERY_METHODS.has(node.expression.name.text)) {
      const first = node.arguments[0];
      const names = first && ts.isArrayLiteralExpression(first) ? first.elements : first ? [first] : [];
      for (const name of names) {
        // "artworks as a", "public.artworks": the table itself.
        if (ts.isStringLiteralLike(name)) found.push({ table: name.text.trim().split(/\s+/)[0]!.split(".").pop()!, line: at(name.getStart(source)) });
      }
    }
    if (ts.isTaggedTemplateExpression(node) && isSqlTag(node.tag)) {
      const start = node.template.getStart(source);
      let text = source.text.slice(start, node.template.end);
      if (ts.isTemplateExpression(node.template)) {
        // Substitutions are code (visited below), not SQL text: blanked, newlines kept for the lines.
        for (const span of node.template.templateSpans) {
          const from = span.expression.getFullStart() - start;
          const to = span.expression.end - start;
          text = text.slice(0, from) + text.slice(from, to).replace(/[^\n]/g, " ") + text.slice(to);
        }
      }
      for (const match of text.matchAll(SQL_TABLE)) found.push({ table: match[1]!.toLowerCase(), line: at(start + match.index! + match[0].length - match[1]!.length) });
    }
    node.forEachChild(visit);
  };
  visit(source);
  return found;
}

function isSqlTag(tag: ts.Expression): boolean {
  return (ts.isIdentifier(tag) && tag.text === "sql") || (ts.isPropertyAccessExpression(tag) && ts.isIdentifier(tag.expression) && tag.expression.text === "sql");
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "migrations" ? [] : sourceFiles(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

function main(): void {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const queries = queriesOutsideRepositories(root);
  for (const q of queries.violations) console.error(`${q.file}:${q.line} calls Kysely (${q.call}) outside a repository`);
  for (const a of queries.stale) console.error(`allowed but no longer calls Kysely (remove it from ALLOWED_QUERIES in tools/check-table-ownership.ts): ${a.file}`);
  if (queries.violations.length > 0) console.error(`${queries.violations.length} Kysely calls outside a repository: move them into the feature's <feature>.repository.ts (or the indexer's views into api/src/chain/indexer-views.ts).`);
  const { violations, stale } = findViolations(root);
  for (const v of violations) console.error(`${v.module} ${v.file}:${v.line} uses ${v.owner}'s table ${v.table}`);
  for (const a of stale) console.error(`allowed but no longer used (remove it from ALLOWED in tools/check-table-ownership.ts): ${a.file} table ${a.table}`);
  if (violations.length > 0) console.error(`${violations.length} queries name another module's table: ask its service, or read a view it publishes (<Feature>Views).`);
  if (queries.violations.length > 0 || queries.stale.length > 0 || violations.length > 0 || stale.length > 0) process.exitCode = 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
