import { Hono } from "hono";

// Ponder serves /health, /ready, /status and /metrics itself; the platform's API reads the tables
// through the views schema in Postgres, so the indexer publishes no routes of its own.
export default new Hono();
