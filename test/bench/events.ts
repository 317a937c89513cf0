/**
 * Ticket purchases on the real pieces (API, Postgres, the sandbox processor): the time from a
 * purchase request to its answer (reserve the seat, charge, confirm and issue the ticket), for
 * purchases one after the other and for 100 buyers at once on one event with fewer seats than
 * buyers, and how many purchases per second complete then.
 */
import os from "node:os";
import path from "node:path";
import { BENCH_ADMIN_KEY, type BenchContext, call, percentile, table } from "./context.ts";

const SEQUENTIAL = Number(process.env.BENCH_TICKETS_SEQUENTIAL ?? 50);
const BURST = Number(process.env.BENCH_TICKETS_BURST ?? 100);
/** Seats of the burst's event: fewer than buyers, so refusals are part of the load. */
const SEATS = Number(process.env.BENCH_TICKETS_SEATS ?? 80);

interface Party {
  id: string;
  token: string;
}

export async function benchEvents(ctx: BenchContext): Promise<string> {
  const tuning: Record<string, string> = {
    JOBS_CONCURRENCY: process.env.JOBS_CONCURRENCY ?? "10",
    DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE ?? "20",
  };
  const api = await ctx.startApi({ STORAGE_DIR: path.join(ctx.dir, "storage"), ...tuning });
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const user = async (name: string): Promise<Party> => {
    const created = await call(api.url, "POST", "/v1/admin/users", { username: name, email: `${name}@example.test`, role: "collector" }, admin.token);
    const token = await call(api.url, "POST", "/v1/auth/token", { api_key: created.api_key.secret, scope: ["write"] });
    return { id: created.id as string, token: token.token as string };
  };
  const event = async (seats: number) => {
    const start = Date.now() + 30 * 86_400_000;
    const created = await call(
      api.url,
      "POST",
      "/v1/events",
      { title: "Bench night", type: "exhibition", format: "in_person", location: "Bench Hall", starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3_600_000).toISOString(), tickets: { in_person: { price_usd: 25, capacity: seats } } },
      admin.token,
    );
    return created.event_id as string;
  };
  const buy = async (buyer: Party, eventId: string): Promise<{ status: number; ms: number }> => {
    const sent = performance.now();
    const res = await fetch(new URL(`/v1/events/${eventId}/tickets`, api.url), {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${buyer.token}` },
      body: JSON.stringify({ kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" }),
    });
    await res.arrayBuffer();
    if (res.status !== 201 && res.status !== 409) throw new Error(`purchase answered ${res.status}`);
    return { status: res.status, ms: performance.now() - sent };
  };

  // One by one (after a warm-up purchase): each answered (confirmed, ticket issued) before the next.
  const single = await event(SEQUENTIAL + 1);
  const buyer = await user("bench_ticket_buyer");
  await buy(buyer, single);
  const sequential: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) sequential.push((await buy(buyer, single)).ms);
  sequential.sort((a, b) => a - b);

  // All at once: BURST buyers on SEATS seats.
  const burstEvent = await event(SEATS);
  const buyers: Party[] = [];
  for (let i = 0; i < BURST; i += 25) buyers.push(...(await Promise.all(Array.from({ length: Math.min(25, BURST - i) }, (_, j) => user(`bench_ticket_burst_${i + j}`)))));
  const started = performance.now();
  const answers = await Promise.all(buyers.map((b) => buy(b, burstEvent)));
  const elapsed = performance.now() - started;
  const sold = answers.filter((a) => a.status === 201);
  const refused = answers.filter((a) => a.status === 409);
  const remaining = (await call(api.url, "GET", `/v1/events/${burstEvent}`)).tickets.in_person.remaining as number;
  if (sold.length !== SEATS || remaining !== 0) throw new Error(`${sold.length} sold of ${SEATS} seats, ${remaining} remaining`);
  const soldMs = sold.map((a) => a.ms).sort((a, b) => a - b);
  const refusedMs = refused.map((a) => a.ms).sort((a, b) => a - b);

  const ms = (v: number) => `${Math.round(v)} ms`;
  return [
    `Events: ${os.cpus().length} cores, HTTP and worker in one process (JOBS_CONCURRENCY=${tuning.JOBS_CONCURRENCY}, DATABASE_POOL_SIZE=${tuning.DATABASE_POOL_SIZE}), sandbox processor; one in-person ticket per purchase`,
    "",
    table(
      ["measure", "value"],
      [
        [`purchase request -> confirmed answer, ${SEQUENTIAL} one by one: p50`, ms(percentile(sequential, 50))],
        ["  p99", ms(percentile(sequential, 99))],
        [`${BURST} buyers at once on ${SEATS} seats: sold / refused (409)`, `${sold.length} / ${refused.length}`],
        ["  sold: request -> confirmed answer p50", ms(percentile(soldMs, 50))],
        ["  p99", ms(percentile(soldMs, 99))],
        ["  refused: p50", refusedMs.length ? ms(percentile(refusedMs, 50)) : "-"],
        [`  all ${BURST} answered after`, `${(elapsed / 1000).toFixed(2)} s`],
        ["  ticket purchases per second", (sold.length / (elapsed / 1000)).toFixed(1)],
      ],
    ),
  ].join("\n");
}
