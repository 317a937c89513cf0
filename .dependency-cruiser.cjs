/**
 * Import boundaries of api/src, checked by `npm run typecheck` (depcruise api/src). A feature
 * reaches another only through its service (shared/STYLE.md); which tables a query names is
 * tools/check-table-ownership.ts's part, since Kysely names them as strings.
 */

/** Another module's private parts: its repositories, its tables' types, its migrations. */
const MODULE_INTERNALS = "^api/src/modules/[^/]+/(.+\\.repository\\.ts|.+\\.tables\\.ts|migrations/)";

/**
 * Today's exceptions to that rule, one import each, removed when their reason is gone (the types
 * they import are exported by users.service.ts too).
 */
const KNOWN_INTERNAL_IMPORTS = [];

const exactly = (file) => `^${file.replace(/[.]/g, "\\.")}$`;
const moduleFolderOf = (file) => `^${file.split("/").slice(0, 4).join("/")}/`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "module-internals",
      severity: "error",
      comment: "A module imports another only through its service: not its *.repository.ts, *.tables.ts or migrations/ (row types come from its service or api/src/db/database.ts).",
      from: { path: "^api/src/modules/([^/]+)/", pathNot: KNOWN_INTERNAL_IMPORTS.map((k) => exactly(k.from)) },
      to: { path: MODULE_INTERNALS, pathNot: "^api/src/modules/$1/" },
    },
    ...KNOWN_INTERNAL_IMPORTS.map((known) => ({
      name: "module-internals",
      severity: "error",
      comment: `Allowed here: ${known.to} only (KNOWN_INTERNAL_IMPORTS).`,
      from: { path: exactly(known.from) },
      to: { path: MODULE_INTERNALS, pathNot: [moduleFolderOf(known.from), exactly(known.to)] },
    })),
    {
      name: "platform-on-modules",
      severity: "error",
      comment: "The platform's layers sit below the modules. Exceptions: db/database.ts assembles the modules' table types; db/migrate.ts reads the module list for their migration folders.",
      from: { path: "^api/src/(lib|db|http|jobs|chain)/", pathNot: ["^api/src/db/database\\.ts$", "^api/src/db/migrate\\.ts$"] },
      to: { path: "^api/src/modules/" },
    },
    {
      name: "no-circular",
      severity: "error",
      comment: "No import cycles: a file that needs what another needs of it shares a third, smaller one (a channel, a type, a table of notes).",
      from: {},
      to: { circular: true },
    },
    {
      name: "source-on-tests-or-tools",
      severity: "error",
      comment: "What production runs never imports tests or development tools.",
      from: { path: "^api/src/" },
      to: { path: "^(test|tools)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // `import type` counts: a type import of another module's tables is what the first rule is about.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
