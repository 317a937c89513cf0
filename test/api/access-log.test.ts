/**
 * The access log: one line per answered request at the level its status calls for (debug for
 * successes, info for refusals, error for failures), with the request id, method, URL, status and
 * time; an abandoned request is a warning. Nothing is written for a level the logger drops.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import express from "express";
import { pino } from "pino";
import { afterEach, expect, it } from "vitest";
import { accessLog } from "../../api/src/http/access-log.ts";
import { requestId } from "../../api/src/http/problem.ts";
import { waitFor } from "../support/wait.ts";

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(level: pino.Level) {
  const lines: Record<string, any>[] = [];
  let hung!: () => void;
  /** Resolves once a request to /hang has reached its handler (which never answers). */
  const hanging = new Promise<void>((resolve) => (hung = resolve));
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const app = express();
  app.use(requestId);
  app.use(accessLog(pino({ level }, sink)));
  app.get("/ok", (_req, res) => void res.json({ ok: true }));
  app.get("/missing", (_req, res) => void res.status(404).json({ code: "not_found" }));
  app.get("/broken", (_req, res) => void res.status(500).json({ code: "internal" }));
  app.get("/hang", () => hung());
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, lines, hanging };
}

it("logs refusals and failures at info and error, successes only at debug, with id, method, URL, status and time", async () => {
  const { url, lines } = await serve("info");
  await fetch(`${url}/ok?x=1`);
  const missing = await fetch(`${url}/missing?page=2`);
  await fetch(`${url}/broken`);
  await waitFor(async () => (lines.length >= 2 ? true : null), { what: "two lines" });
  expect(lines.map((l) => [l.level, l.msg, l.req.method, l.req.url, l.res.statusCode])).toEqual([
    [30, "request completed", "GET", "/missing?page=2", 404],
    [50, "request completed", "GET", "/broken", 500],
  ]);
  expect(lines[0]!.req_id).toBe(missing.headers.get("x-request-id"));
  expect(lines[0]!.responseTime).toBeGreaterThanOrEqual(0);

  const debug = await serve("debug");
  await fetch(`${debug.url}/ok`);
  await waitFor(async () => (debug.lines.length >= 1 ? true : null), { what: "the success logged at debug" });
  expect(debug.lines.map((l) => [l.level, l.req.url, l.res.statusCode])).toEqual([[20, "/ok", 200]]);
});

it("logs a request the client abandoned before its answer as a warning", async () => {
  const { url, lines, hanging } = await serve("info");
  const aborted = new AbortController();
  const pending = fetch(`${url}/hang`, { signal: aborted.signal }).catch(() => null);
  await hanging;
  aborted.abort();
  await pending;
  await waitFor(async () => (lines.length >= 1 ? true : null), { what: "the abandoned request logged" });
  expect(lines.map((l) => [l.level, l.msg, l.req.url])).toEqual([[40, "request aborted", "/hang"]]);
});
