/**
 * Import boundaries of api/src and indexer/, checked by `npm run typecheck` (depcruise api/src
 * indexer). A feature reaches another only through its services and schemas (*.service.ts,
 * *.schemas.ts; shared/STYLE.md); the API and the
 * indexer share only the generated ABIs (contracts/abi/). Which tables a query names, and where
 * Kysely may be called at all, is tools/check-table-ownership.ts's part, since Kysely names tables
 * as strings.
 */

/** Another module's private parts: its repositories, its tables' types, its migrations. */
const MODULE_INTERNALS = "^api/src/modules/[^/]+/(.+\\.repository\\.ts|.+\\.tables\\.ts|migrations/)";

/** Exceptions to that rule, one import each ({ from, to }), removed with their reason. None today. */
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
    {
      name: "module-surface",
      severity: "error",
      comment: "What a module offers the others is its *.service.ts and *.schemas.ts files (a service re-exports the types its callers need, e.g. the moves' table's from ownership.service.ts); its other files are its own.",
      from: { path: "^api/src/modules/([^/]+)/" },
      to: { path: "^api/src/modules/[^/]+/", pathNot: ["^api/src/modules/$1/", "^api/src/modules/[^/]+/[^/]+\\.(service|schemas)\\.ts$", "^api/src/modules/(module|index)\\.ts$"] },
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
      comment: "The platform's layers sit below the modules (the migrator is handed the modules' migration folders by its caller). One exception: db/database.ts assembles the Database type from the modules' table types (type imports only), which the platform's queries are typed against.",
      from: { path: "^api/src/(lib|db|http|jobs|chain)/", pathNot: ["^api/src/db/database\\.ts$"] },
      to: { path: "^api/src/modules/" },
    },
    {
      name: "indexer-alone",
      severity: "error",
      comment: "The indexer is a program of its own: besides its packages it imports only its own files and the generated ABIs (contracts/abi/), never the API, the tools or the tests.",
      from: { path: "^indexer/" },
      to: { dependencyTypes: ["local"], pathNot: ["^indexer/", "^contracts/abi/"] },
    },
    {
      name: "api-on-indexer",
      severity: "error",
      comment: "The API reads what the indexer wrote through its views (api/src/chain/indexer-views.ts, typed by indexer-schema.ts), never its code.",
      from: { path: "^api/" },
      to: { path: "^indexer/" },
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
      from: { path: "^(api/src|indexer)/" },
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
