/**
 * Tickets of platform events on real pieces (Postgres, the sandbox processor, the API over HTTP,
 * its worker): tickets that never oversell under 100 concurrent buyers, declines that release
 * seats, holds, check-in once, who sees what, cancellation with refunds, also while purchases and
 * their retries are under way. The events themselves: events.test.ts.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { beforeAll, describe, expect, it } from "vitest";
import { createUser, expectProblem, type TestResponse, type TestUser } from "../support/api.ts";
import { answeredEarly, at, DAY, FAKE, useEventsPlatform } from "../support/events.ts";
import { holdCalls } from "../support/hold.ts";
import { signalled, waitFor } from "../support/wait.ts";

const { p, cast, req, create, buy, detail, count, eventsOf, hybrid, expectCreated } = useEventsPlatform();

describe("platform event tickets", () => {
  let admin: string;
  let buyer: TestUser;
  let other: TestUser;
  let reader: TestUser;
  beforeAll(() => void ({ admin, buyer, other, reader } = cast));

  it("sells exactly the seats there are to 100 concurrent buyers: 50 confirmed, 50 refused with nothing charged", async () => {
    const e = expectCreated(await create(hybrid({ format: "in_person", tickets: { in_person: { price_usd: 40, capacity: 50 } } })));
    const buyers = await Promise.all(Array.from({ length: 100 }, () => createUser(p.api, { scope: ["events:write", "events:read"] })));
    const answers = await Promise.all(buyers.map((u) => buy(u, e.event_id, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(50);
    expect(statuses.filter((s) => s === 409)).toHaveLength(50);
    for (const r of answers.filter((x) => x.status === 409)) {
      expectProblem(r, 409, "insufficient_tickets");
      expect(r.body.remaining).toBe(0);
    }
    const orders = answers.filter((r) => r.status === 201).map((r) => r.body);
    expect(orders.every((o) => o.status === "confirmed" && o.tickets.length === 1 && o.total_usd === 40)).toBe(true);
    expect(new Set(orders.map((o) => o.tickets[0].code)).size).toBe(50);
    expect((await detail(e.event_id)).tickets.in_person).toEqual({ price_usd: 40, available: false, capacity: 50, remaining: 0 });
    // Charges equal seats: one succeeded charge per confirmed order, none for the refused.
    const charges = await p.db.selectFrom("sandbox_charges").select(["idempotency_key", "amount_cents", "status"]).where("idempotency_key", "in", orders.map((o) => `ticket_order:${o.order_id}`)).execute();
    expect(charges).toHaveLength(50);
    expect(charges.every((c) => c.status === "succeeded" && Number(c.amount_cents) === 4000)).toBe(true);
    const allOrders = await p.db.selectFrom("ticket_orders").select(["status"]).where("event_id", "=", e.event_id).execute();
    expect(allOrders).toHaveLength(50);
    const txns = await p.db.selectFrom("transactions").select(["status", "type", "amount_cents"]).where("reference_id", "in", orders.map((o) => o.order_id)).execute();
    expect(txns).toHaveLength(50);
    expect(txns.every((t) => t.status === "completed" && t.type === "ticket_purchase" && Number(t.amount_cents) === 4000)).toBe(true);
    const row = await p.db.selectFrom("platform_events").select(["in_person_sold"]).where("id", "=", e.event_id).executeTakeFirstOrThrow();
    expect(row.in_person_sold).toBe(50);
  }, 120_000);

  it("issues tickets with codes, answers an idempotent replay once, and tells only the buyer (ticket.purchased)", async () => {
    const e = expectCreated(await create(hybrid()));
    const key = `tickets-${randomBytes(4).toString("hex")}`;
    const first = await buy(buyer, e.event_id, { kind: "in_person", quantity: 3, payment_method_id: "pm_card_visa" }, key);
    expect(first.status, first.text).toBe(201);
    const order = first.body;
    expect(order).toMatchObject({ event_id: e.event_id, buyer_id: buyer.id, kind: "in_person", quantity: 3, unit_price_usd: 25, total_usd: 75, status: "confirmed", failure_reason: null });
    expect(order.order_id).toMatch(/^ord_/);
    expect(order.tickets).toHaveLength(3);
    for (const t of order.tickets) {
      expect(t).toMatchObject({ event_id: e.event_id, order_id: order.order_id, holder_id: buyer.id, kind: "in_person", status: "valid", checked_in_at: null });
      expect(t.code).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    }
    // The same key: the stored answer (taken with the reservation), no second order or charge.
    const replay = await buy(buyer, e.event_id, { kind: "in_person", quantity: 3, payment_method_id: "pm_card_visa" }, key);
    expect(replay.body.order_id).toBe(order.order_id);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await p.db.selectFrom("ticket_orders").select("id").where("event_id", "=", e.event_id).execute()).toHaveLength(1);
    expect(await p.db.selectFrom("sandbox_charges").select("id").where("idempotency_key", "=", `ticket_order:${order.order_id}`).execute()).toHaveLength(1);
    expect((await detail(e.event_id)).tickets.in_person.remaining).toBe(47);
    const txn = await req("GET", `/v1/marketplace/transactions/${order.transaction_id}`, buyer.token);
    expect(txn.status, txn.text).toBe(200);
    expect(txn.body).toMatchObject({ type: "ticket_purchase", status: "completed", amount_usd: 75 });

    const purchased = (await eventsOf("ticket.purchased")).filter((x) => x.payload.order_id === order.order_id);
    expect(purchased).toHaveLength(1);
    expect(purchased[0]!.audience).toEqual([buyer.id]);
    expect(purchased[0]!.payload).toMatchObject({ event_id: e.event_id, buyer_id: buyer.id, quantity: 3, total_usd: 75, ticket_ids: order.tickets.map((t: { ticket_id: string }) => t.ticket_id) });
    // A paid order's confirmation is its purchase's completion, stored there only.
    const confirmation = await p.db.selectFrom("ticket_orders as o").innerJoin("transactions as t", "t.id", "o.transaction_id").select(["o.confirmed_at", "t.completed_at"]).where("o.id", "=", order.order_id).executeTakeFirstOrThrow();
    expect(confirmation.confirmed_at).toBeNull();
    expect(confirmation.completed_at!.toISOString()).toBe(order.confirmed_at);
    expect(purchased[0]!.payload.purchased_at).toBe(order.confirmed_at);

    // Free virtual tickets need no payment method and charge nothing.
    const free = expectCreated(await create(hybrid({ format: "virtual", tickets: { virtual: { price_usd: 0 } } })));
    const gratis = await buy(other, free.event_id, { kind: "virtual", quantity: 2 });
    expect(gratis.status, gratis.text).toBe(201);
    expect(gratis.body).toMatchObject({ status: "confirmed", total_usd: 0, transaction_id: null });
    expect(gratis.body.tickets).toHaveLength(2);
    expect((await p.db.selectFrom("ticket_orders").select("confirmed_at").where("id", "=", gratis.body.order_id).executeTakeFirstOrThrow()).confirmed_at!.toISOString()).toBe(gratis.body.confirmed_at);
    expect((await eventsOf("ticket.purchased")).find((x) => x.payload.order_id === gratis.body.order_id)!.payload.purchased_at).toBe(gratis.body.confirmed_at);
  });

  it("refuses bad purchases with a problem and changes nothing; a decline releases the seats (402)", async () => {
    const e = expectCreated(await create(hybrid({ tickets: { virtual: { price_usd: 5, capacity: 3 }, in_person: { price_usd: 25, capacity: 10 } } })));
    const virtualOnly = expectCreated(await create(hybrid({ format: "virtual", tickets: { virtual: { price_usd: 5 } } })));
    const ended = expectCreated(await create(hybrid({ starts_at: at(Date.now() - 2 * DAY), ends_at: at(Date.now() - DAY) })));
    const before = { orders: await count("ticket_orders"), charges: await count("sandbox_charges"), txns: await count("transactions") };
    const ok = { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" };
    for (const bad of [{}, { ...ok, quantity: 0 }, { ...ok, quantity: 1000 }, { ...ok, quantity: 1.5 }, { ...ok, kind: "balcony" }, { ...ok, extra: true }, { ...ok, payment_method_id: "" }]) {
      expectProblem(await buy(buyer, e.event_id, bad), 400, "validation_failed");
    }
    expectProblem(await buy(buyer, virtualOnly.event_id, ok), 400, "validation_failed"); // the event sells no in-person tickets
    expectProblem(await buy(buyer, ended.event_id, ok), 409, "invalid_state");
    expectProblem(await buy(buyer, FAKE.event, ok), 404, "not_found");
    expectProblem(await buy(buyer, e.event_id, { ...ok, payment_method_id: "pm_nope" }), 404, "not_found");
    const tooMany = await buy(buyer, e.event_id, { ...ok, kind: "virtual", quantity: 4 });
    expectProblem(tooMany, 409, "insufficient_tickets");
    expect(tooMany.body.remaining).toBe(3);
    // Access: anonymous, a token without events:write.
    expectProblem(await buy("", e.event_id, ok), 401, "unauthenticated");
    expectProblem(await buy(reader, e.event_id, ok), 403, "insufficient_scope");
    expect({ orders: await count("ticket_orders"), charges: await count("sandbox_charges"), txns: await count("transactions") }).toEqual(before);

    // A declined card: 402, the order failed, its seats back, its transaction failed saying why.
    const declined = await buy(buyer, e.event_id, { ...ok, quantity: 4, payment_method_id: "pm_card_chargeDeclined" });
    expectProblem(declined, 402, "payment_declined");
    const order = await p.db.selectFrom("ticket_orders").selectAll().where("id", "=", declined.body.order_id).executeTakeFirstOrThrow();
    expect(order).toMatchObject({ status: "failed", failure_reason: null });
    expect((await detail(e.event_id)).tickets.in_person.remaining).toBe(10);
    const txn = await p.db.selectFrom("transactions").select(["status", "failure_code", "charge_id"]).where("id", "=", order.transaction_id!).executeTakeFirstOrThrow();
    expect(txn).toEqual({ status: "failed", failure_code: "generic_decline", charge_id: null });
    expect(await p.db.selectFrom("tickets").select("id").where("order_id", "=", order.id).execute()).toHaveLength(0);
  });

  it("answers 202 while a processor error is retried by the order's job, then confirms it; releases the seats when retries run out", async () => {
    const e = expectCreated(await create(hybrid({ format: "in_person", tickets: { in_person: { price_usd: 10, capacity: 5 } } })));
    const retried = await buy(buyer, e.event_id, { kind: "in_person", quantity: 2, payment_method_id: "pm_card_processingError_once" });
    expect(retried.status, retried.text).toBe(202);
    expect(retried.body).toMatchObject({ status: "pending", tickets: [] });
    expect((await detail(e.event_id)).tickets.in_person.remaining).toBe(3); // held while it is paid
    const confirmed = await waitFor(async () => {
      const res = await req("GET", `/v1/ticket-orders/${retried.body.order_id}`, buyer.token);
      return res.body.status === "confirmed" && res.body;
    }, { timeoutMs: 15_000, what: "the retried order confirmed" });
    expect(confirmed.tickets).toHaveLength(2);
    expect((await eventsOf("ticket.purchased")).filter((x) => x.payload.order_id === retried.body.order_id)).toHaveLength(1);

    const failing = await buy(other, e.event_id, { kind: "in_person", quantity: 3, payment_method_id: "pm_card_processingError" });
    expect(failing.status, failing.text).toBe(202);
    expect((await detail(e.event_id)).tickets.in_person.remaining).toBe(0);
    const failed = await waitFor(async () => {
      const res = await req("GET", `/v1/ticket-orders/${failing.body.order_id}`, other.token);
      return res.body.status === "failed" && res.body;
    }, { timeoutMs: 15_000, what: "the failing order failed" });
    expect(failed.failure_reason).toContain("could not be processed after 2 attempts");
    expect((await detail(e.event_id)).tickets.in_person.remaining).toBe(3);
    expect((await p.db.selectFrom("transactions").select("status").where("reference_id", "=", failing.body.order_id).executeTakeFirstOrThrow()).status).toBe("failed");
  });

  it("holds seats for an order without a payment method until it is paid, or releases them when the hold ends", async () => {
    const e = expectCreated(await create(hybrid({ format: "in_person", tickets: { in_person: { price_usd: 15, capacity: 4 } } })));
    const held = await buy(buyer, e.event_id, { kind: "in_person", quantity: 2 });
    expect(held.status, held.text).toBe(201);
    expect(held.body).toMatchObject({ status: "awaiting_payment", total_usd: 30, discount_usd: 0, amount_due_usd: 30, transaction_id: null, tickets: [] });
    expect(Date.parse(held.body.payment_due_at)).toBeGreaterThan(Date.now());
    expect((await detail(e.event_id)).tickets.in_person.remaining).toBe(2);
    const pay = (user: TestUser, id: string, body: Record<string, unknown>) => req("POST", `/v1/ticket-orders/${id}/pay`, user.token, body);
    // Only its buyer pays it; bad bodies change nothing.
    expectProblem(await pay(other, held.body.order_id, { payment_method_id: "pm_card_visa" }), 404, "not_found");
    expectProblem(await pay(buyer, held.body.order_id, {}), 400, "validation_failed");
    expectProblem(await pay(buyer, FAKE.order, { payment_method_id: "pm_card_visa" }), 404, "not_found");
    const paid = await pay(buyer, held.body.order_id, { payment_method_id: "pm_card_visa" });
    expect(paid.status, paid.text).toBe(201);
    expect(paid.body).toMatchObject({ order_id: held.body.order_id, status: "confirmed", payment_due_at: null, amount_due_usd: 30 });
    expect(paid.body.tickets).toHaveLength(2);
    expectProblem(await pay(buyer, held.body.order_id, { payment_method_id: "pm_card_visa" }), 409, "invalid_state");

    // A hold that runs out: expired by its job, seats back, paying it then refused. (One buyer's
    // unpaid holds take at most half of the seats left: 1 of these 2.)
    expectProblem(await buy(other, e.event_id, { kind: "in_person", quantity: 2 }), 409, "invalid_state");
    const lapsed = await buy(other, e.event_id, { kind: "in_person", quantity: 1 });
    expect(lapsed.body.status).toBe("awaiting_payment");
    expect((await detail(e.event_id)).tickets.in_person.remaining).toBe(1);
    const expired = await waitFor(async () => {
      const res = await req("GET", `/v1/ticket-orders/${lapsed.body.order_id}`, other.token);
      return res.body.status === "expired" && res.body;
    }, { timeoutMs: 15_000, what: "the hold expired" });
    expect(expired.failure_reason).toContain("released");
    expect((await detail(e.event_id)).tickets.in_person.remaining).toBe(2);
    expectProblem(await pay(other, lapsed.body.order_id, { payment_method_id: "pm_card_visa" }), 409, "invalid_state");
    expect(await p.db.selectFrom("sandbox_charges").select("id").where("idempotency_key", "=", `ticket_order:${lapsed.body.order_id}`).execute()).toHaveLength(0);
  });

  it("shows tickets and orders to their holder and admins only", async () => {
    const e = expectCreated(await create(hybrid()));
    const mine = (await buy(buyer, e.event_id, { kind: "virtual", quantity: 2, payment_method_id: "pm_card_visa" })).body;
    const theirs = (await buy(other, e.event_id, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_mastercard" })).body;
    const ticket = mine.tickets[0];
    // The holder, an admin; another user 404 (not 403), anonymous 401, no scope 403.
    expect((await req("GET", `/v1/tickets/${ticket.ticket_id}`, buyer.token)).body).toEqual(ticket);
    expect((await req("GET", `/v1/tickets/${ticket.ticket_id}`, admin)).status).toBe(200);
    expectProblem(await req("GET", `/v1/tickets/${ticket.ticket_id}`, other.token), 404, "not_found");
    expectProblem(await req("GET", `/v1/tickets/${ticket.ticket_id}`), 401, "unauthenticated");
    expectProblem(await req("GET", `/v1/tickets/${ticket.ticket_id}`, reader.token), 403, "insufficient_scope");
    expectProblem(await req("GET", `/v1/tickets/${FAKE.ticket}`, admin), 404, "not_found");
    expect((await req("GET", `/v1/ticket-orders/${mine.order_id}`, buyer.token)).body).toEqual(mine);
    expect((await req("GET", `/v1/ticket-orders/${mine.order_id}`, admin)).status).toBe(200);
    expectProblem(await req("GET", `/v1/ticket-orders/${mine.order_id}`, other.token), 404, "not_found");
    expectProblem(await req("GET", `/v1/ticket-orders/${FAKE.order}`, buyer.token), 404, "not_found");
    // "Mine" lists only the caller's tickets.
    const list = await req("GET", `/v1/events/${e.event_id}/tickets`, buyer.token);
    expect(list.status, list.text).toBe(200);
    expect(list.body.data.map((t: { ticket_id: string }) => t.ticket_id).sort()).toEqual(mine.tickets.map((t: { ticket_id: string }) => t.ticket_id).sort());
    expect((await req("GET", `/v1/events/${e.event_id}/tickets`, other.token)).body.data.map((t: { ticket_id: string }) => t.ticket_id)).toEqual([theirs.tickets[0].ticket_id]);
    expectProblem(await req("GET", `/v1/events/${e.event_id}/tickets`), 401, "unauthenticated");
    expectProblem(await req("GET", `/v1/events/${FAKE.event}/tickets`, buyer.token), 404, "not_found");
  });

  it("checks a ticket in once at the door (admins), whatever the case or dashes of the code", async () => {
    const e = expectCreated(await create(hybrid()));
    const order = (await buy(buyer, e.event_id, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" })).body;
    const code: string = order.tickets[0].code;
    const typed = `${code.slice(0, 5).toLowerCase()}-${code.slice(5)}`;
    expectProblem(await req("POST", `/v1/events/${e.event_id}/check-in`, buyer.token, { code }), 403, "insufficient_scope");
    expectProblem(await req("POST", `/v1/events/${e.event_id}/check-in`, undefined, { code }), 401, "unauthenticated");
    const first = await req("POST", `/v1/events/${e.event_id}/check-in`, admin, { code: typed });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toMatchObject({ ticket_id: order.tickets[0].ticket_id, status: "checked_in" });
    expect(first.body.checked_in_at).toEqual(expect.any(String));
    // Checked in already: refused, also when two doors try at once.
    const again = await Promise.all([req("POST", `/v1/events/${e.event_id}/check-in`, admin, { code }), req("POST", `/v1/events/${e.event_id}/check-in`, admin, { code })]);
    for (const r of again) expectProblem(r, 409, "invalid_state");
    expectProblem(await req("POST", `/v1/events/${e.event_id}/check-in`, admin, { code: "0000000000000000000000000" }), 404, "not_found");
    expectProblem(await req("POST", `/v1/events/${e.event_id}/check-in`, admin, {}), 400, "validation_failed");
    // A code is valid only at its own event.
    const elsewhere = expectCreated(await create(hybrid()));
    expectProblem(await req("POST", `/v1/events/${elsewhere.event_id}/check-in`, admin, { code }), 404, "not_found");

    // Two doors at once on a fresh ticket: exactly one admits it.
    const next = (await buy(buyer, e.event_id, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" })).body.tickets[0].code;
    const race = await Promise.all(Array.from({ length: 6 }, () => req("POST", `/v1/events/${e.event_id}/check-in`, admin, { code: next })));
    expect(race.filter((r) => r.status === 200)).toHaveLength(1);
    expect(race.filter((r) => r.status === 409)).toHaveLength(5);
  });

  it("cancelling refunds every ticket, tells each holder (ticket.refunded), and closes the event to sales, edits and check-in", async () => {
    const e = expectCreated(await create(hybrid()));
    const paid1 = (await buy(buyer, e.event_id, { kind: "in_person", quantity: 2, payment_method_id: "pm_card_visa" })).body;
    const paid2 = (await buy(other, e.event_id, { kind: "virtual", quantity: 1, payment_method_id: "pm_card_visa" })).body;
    const free = expectCreated(await create(hybrid({ format: "virtual", tickets: { virtual: { price_usd: 0 } } })));
    const gratis = (await buy(other, free.event_id, { kind: "virtual", quantity: 1 })).body;
    expect([paid1.status, paid2.status, gratis.status]).toEqual(["confirmed", "confirmed", "confirmed"]);

    const cancelled = await req("DELETE", `/v1/events/${e.event_id}`, admin);
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ event_id: e.event_id, status: "cancelled" });
    expect(cancelled.body.cancelled_at).toEqual(expect.any(String));
    expect(cancelled.body.tickets.in_person.available).toBe(false);
    // Each paid order is refunded by the processor, its transaction refunded, its holder told once.
    for (const [order, user] of [[paid1, buyer], [paid2, other]] as const) {
      const refunded = await waitFor(async () => {
        const res = await req("GET", `/v1/ticket-orders/${order.order_id}`, user.token);
        return res.body.status === "refunded" && res.body;
      }, { timeoutMs: 20_000, what: `${order.order_id} refunded` });
      expect(refunded.refunded_at).toEqual(expect.any(String));
      expect(refunded.tickets.every((t: { status: string }) => t.status === "refunded")).toBe(true);
      const refunds = await p.db.selectFrom("sandbox_refunds").select(["amount_cents"]).where("idempotency_key", "=", `refund:ticket_order:${order.order_id}`).execute();
      expect(refunds).toHaveLength(1);
      expect(Number(refunds[0]!.amount_cents)).toBe(Math.round(order.total_usd * 100));
      expect((await p.db.selectFrom("transactions").select("status").where("id", "=", order.transaction_id).executeTakeFirstOrThrow()).status).toBe("refunded");
      const told = (await eventsOf("ticket.refunded")).filter((x) => x.payload.order_id === order.order_id);
      expect(told).toHaveLength(1);
      expect(told[0]!.audience).toEqual([user.id]);
      // Its times are its purchase's: confirmed when it completed, refunded when it was refunded.
      expect(refunded.confirmed_at).toBe(order.confirmed_at);
      expect(told[0]!.payload.refunded_at).toBe(refunded.refunded_at);
    }
    // Cancelling again changes nothing; no sales, edits or check-in afterwards.
    expect((await req("DELETE", `/v1/events/${e.event_id}`, admin)).status).toBe(200);
    expect((await eventsOf("ticket.refunded")).filter((x) => x.payload.event_id === e.event_id)).toHaveLength(2);
    expectProblem(await buy(buyer, e.event_id, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" }), 409, "invalid_state");
    expectProblem(await req("PATCH", `/v1/events/${e.event_id}`, admin, { title: "again" }), 409, "invalid_state");
    expectProblem(await req("POST", `/v1/events/${e.event_id}/check-in`, admin, { code: paid1.tickets[0].code }), 409, "invalid_state");

    // A free order is refunded at once, with nothing to return.
    expect((await req("DELETE", `/v1/events/${free.event_id}`, admin)).status).toBe(200);
    const freeOrder = await req("GET", `/v1/ticket-orders/${gratis.order_id}`, other.token);
    expect(freeOrder.body.status).toBe("refunded");
    expect(freeOrder.body.confirmed_at).toBe(gratis.confirmed_at);
    const freeRefunds = (await eventsOf("ticket.refunded")).filter((x) => x.payload.order_id === gratis.order_id);
    expect(freeRefunds).toHaveLength(1);
    expect(freeRefunds[0]!.payload.refunded_at).toBe(freeOrder.body.refunded_at);
  });

  it("cancelling while purchases are under way leaves no confirmed order and no charge kept", async () => {
    const e = expectCreated(await create(hybrid({ format: "in_person", tickets: { in_person: { price_usd: 12, capacity: 100 } } })));
    const newBuyer = () => createUser(p.api, { scope: ["events:write", "events:read"] });
    const [early, beforeCharge1, beforeCharge2, atProcessor1, atProcessor2, late] = await Promise.all([newBuyer(), newBuyer(), newBuyer(), newBuyer(), newBuyer(), newBuyer()]);
    const purchase = (u: TestUser) => buy(u, e.event_id, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" });
    const { purchases, payments } = p.api.server.platform.services;
    // The interleavings are forced: purchases held, their orders pending, at the two points a
    // cancellation can meet them: before the purchase's charge step (which asks whether the event is
    // cancelled), and after it, at the processor (the charge is then taken and has to go back).
    const confirmedBefore = await purchase(early);
    expect(confirmedBefore.status, confirmedBefore.text).toBe(201);
    // Only these buyers' calls are held: an earlier purchase's fallback charge job (15 s after it,
    // within this test on a loaded machine) goes through and is not counted as one of them.
    const buyerOf = async (transactionId: unknown) =>
      (await p.db.selectFrom("transactions").select("buyer_id").where("id", "=", String(transactionId)).executeTakeFirst())?.buyer_id;
    const ids = (users: TestUser[]) => new Set(users.map((u) => u.id));
    const heldBeforeChargeBuyers = ids([beforeCharge1, beforeCharge2]);
    const heldAtProcessorBuyers = ids([atProcessor1, atProcessor2]);
    const atChargeStep = holdCalls(purchases, "charge", { which: async (id) => heldBeforeChargeBuyers.has((await buyerOf(id)) ?? "") });
    const atTheProcessor = holdCalls(payments.processor, "charge", {
      keyOf: (request) => (request as { idempotencyKey: string }).idempotencyKey,
      which: (request) => heldAtProcessorBuyers.has((request as { metadata?: Record<string, string> }).metadata?.user_id ?? ""),
    });
    try {
      // The platform's other work goes through meanwhile: the confirmed order's fallback charge job, run now, is neither held nor counted.
      await signalled(purchases.charge(confirmedBefore.body.transaction_id), "the confirmed order's charge run passing the hold", 30_000);
      const heldBeforeCharge = [beforeCharge1, beforeCharge2].map(purchase);
      await signalled(Promise.race([atChargeStep.reached(2), answeredEarly(heldBeforeCharge)]), "two purchases held before their charge step", 60_000);
      atChargeStep.passNew();
      const heldAtProcessor = [atProcessor1, atProcessor2].map(purchase);
      await signalled(Promise.race([atTheProcessor.reached(2), answeredEarly(heldAtProcessor)]), "two purchases held at the processor", 60_000);
      const pendingOf = (users: TestUser[]) =>
        p.db.selectFrom("ticket_orders as o").innerJoin("transactions as t", "t.id", "o.transaction_id").select(["o.status", "t.charge_started_at"])
          .where("o.event_id", "=", e.event_id).where("o.buyer_id", "in", users.map((u) => u.id)).execute();
      // Both contenders at the contested point: the orders pending, the first two not yet charging, the others charging.
      expect((await pendingOf([beforeCharge1, beforeCharge2])).map((o) => [o.status, o.charge_started_at])).toEqual([["pending", null], ["pending", null]]);
      expect((await pendingOf([atProcessor1, atProcessor2])).map((o) => [o.status, o.charge_started_at !== null])).toEqual([["pending", true], ["pending", true]]);

      const cancelled = await req("DELETE", `/v1/events/${e.event_id}`, admin);
      expect(cancelled.status, cancelled.text).toBe(200);
      // A purchase after the cancellation is refused at its reservation.
      expectProblem(await purchase(late), 409, "invalid_state");
      atChargeStep.release();
      atTheProcessor.release();
      // Both held ones refused by the cancellation: told their order failed, any payment taken refunded.
      for (const r of await Promise.all([...heldBeforeCharge, ...heldAtProcessor])) {
        expectProblem(r, 409, "invalid_state");
        expect(r.body.detail).toMatch(/cancelled while your order was being paid/);
      }
    } finally {
      atChargeStep.restore();
      atTheProcessor.restore();
    }
    // Every order ends refunded (confirmed before the cancellation) or failed (after it), and every
    // charge taken is refunded in full.
    const settled = await waitFor(async () => {
      const orders = await p.db.selectFrom("ticket_orders").select(["id", "buyer_id", "status"]).where("event_id", "=", e.event_id).execute();
      if (orders.some((o) => o.status === "pending" || o.status === "confirmed")) return undefined;
      const charges = await p.db.selectFrom("sandbox_charges").select(["idempotency_key", "amount_cents", "amount_refunded_cents"]).where("idempotency_key", "in", orders.map((o) => `ticket_order:${o.id}`)).execute();
      // A purchase records its refund just after the processor made it.
      const open = await p.db.selectFrom("transactions").select("id").where("reference_id", "in", orders.map((o) => o.id)).where("status", "=", "pending").execute();
      return open.length === 0 && charges.every((c) => c.amount_refunded_cents === c.amount_cents) && { orders, charges };
    }, { timeoutMs: 20_000, what: "every order settled and every charge refunded" });
    const statusOf = (u: TestUser) => settled.orders.filter((o) => o.buyer_id === u.id).map((o) => o.status);
    expect([early, beforeCharge1, beforeCharge2, atProcessor1, atProcessor2, late].map(statusOf)).toEqual([["refunded"], ["failed"], ["failed"], ["failed"], ["failed"], []]);
    // Charged: the order confirmed before, and those that met the cancellation at the processor; never those it met before the charge step.
    const chargedBuyers = settled.charges.map((c) => settled.orders.find((o) => `ticket_order:${o.id}` === c.idempotency_key)!.buyer_id).sort();
    expect(chargedBuyers).toEqual([early.id, atProcessor1.id, atProcessor2.id].sort());
    const tickets = await p.db.selectFrom("tickets").select("status").where("event_id", "=", e.event_id).execute();
    expect(tickets.every((t) => t.status === "refunded")).toBe(true);
    expect(tickets.length).toBe(settled.orders.filter((o) => o.status === "refunded").length);
    const txns = await p.db.selectFrom("transactions").select("status").where("reference_id", "in", settled.orders.map((o) => o.id)).execute();
    expect(txns.every((t) => t.status === "refunded" || t.status === "failed")).toBe(true);
  }, 120_000);

  it("confirmations of one event do not wait for each other; a cancellation waits for the one under way, then refunds it", async () => {
    const e = expectCreated(await create(hybrid({ format: "in_person", tickets: { in_person: { price_usd: 9, capacity: 10 } } })));
    const newBuyer = () => createUser(p.api, { scope: ["events:write", "events:read"] });
    const [held, passing] = await Promise.all([newBuyer(), newBuyer()]);
    const purchase = (u: TestUser) => buy(u, e.event_id, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" });
    const { ledger } = p.api.server.platform.services;
    // One confirmation stopped inside its transaction, the event's row locked against a
    // cancellation: just before its ledger entry, the transaction's last write.
    const atEntry = holdCalls(ledger, "append", {
      which: (_trx, args) => {
        const entry = args[1] as { kind: string; parties: string[] };
        return entry.kind === "ticket_order.confirmed" && entry.parties.includes(held.id);
      },
    });
    const cancellationsWaiting = async () =>
      (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%from "platform_events"%for update'`.execute(p.db)).rows[0]!.n;
    let first: TestResponse, cancelled: TestResponse;
    try {
      const heldPurchase = purchase(held);
      await signalled(Promise.race([atEntry.reached(1), answeredEarly([heldPurchase])]), "a confirmation held inside its transaction", 60_000);
      // Another buyer of the event reserves a seat, pays and is confirmed meanwhile.
      const second = await signalled(purchase(passing), "a second purchase of the event answered while the first's confirmation is under way", 30_000);
      expect(second.status, second.text).toBe(201);
      const cancelling = req("DELETE", `/v1/events/${e.event_id}`, admin);
      await waitFor(async () => (await cancellationsWaiting()) === 1, { timeoutMs: 30_000, what: "the cancellation waiting for the confirmation's lock" });
      atEntry.release();
      [first, cancelled] = await Promise.all([heldPurchase, cancelling]);
    } finally {
      atEntry.restore();
    }
    expect(first.status, first.text).toBe(201);
    expect(cancelled.status, cancelled.text).toBe(200);
    // The cancellation came after both confirmations: both orders refunded, both charges back in full.
    const orders = await waitFor(async () => {
      const rows = await p.db.selectFrom("ticket_orders").select(["id", "buyer_id", "status"]).where("event_id", "=", e.event_id).execute();
      const charges = await p.db.selectFrom("sandbox_charges").select(["amount_cents", "amount_refunded_cents"]).where("idempotency_key", "in", rows.map((o) => `ticket_order:${o.id}`)).execute();
      return rows.every((o) => o.status === "refunded") && charges.length === 2 && charges.every((c) => c.amount_refunded_cents === c.amount_cents) && rows;
    }, { timeoutMs: 20_000, what: "both orders refunded with their charges" });
    expect(orders.map((o) => o.buyer_id).sort()).toEqual([held.id, passing.id].sort());
  }, 120_000);

  it("a price changed while a purchase is under way refuses it (409) with nothing kept; bought again, it pays the new price", async () => {
    const e = expectCreated(await create(hybrid({ format: "in_person", tickets: { in_person: { price_usd: 9, capacity: 10 } } })));
    const buyerNow = await createUser(p.api, { scope: ["events:write", "events:read"] });
    const purchase = () => buy(buyerNow, e.event_id, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_visa" });
    const { payments } = p.api.server.platform.services;
    // Held after the price was read, before the purchase's transaction (whose order, once written,
    // holds the event's row against a change: its foreign key's lock).
    const atStart = holdCalls(payments, "resolvePaymentMethod", { which: (userId) => userId === buyerNow.id });
    let refused: TestResponse;
    try {
      const pending = purchase();
      await signalled(Promise.race([atStart.reached(1), answeredEarly([pending])]), "a purchase held after reading the price", 60_000);
      const patched = await req("PATCH", `/v1/events/${e.event_id}`, admin, { tickets: { in_person: { price_usd: 11, capacity: 10 } } });
      expect(patched.status, patched.text).toBe(200);
      atStart.release();
      refused = await pending;
    } finally {
      atStart.restore();
    }
    expectProblem(refused, 409, "invalid_state");
    expect(refused.body.detail).toMatch(/price changed/);
    const orders = () => p.db.selectFrom("ticket_orders").select(["status", "unit_price_cents"]).where("event_id", "=", e.event_id).execute();
    expect(await orders()).toEqual([]);
    expect((await detail(e.event_id)).tickets.in_person.remaining).toBe(10);
    const again = await purchase();
    expect(again.status, again.text).toBe(201);
    expect(await orders()).toEqual([{ status: "confirmed", unit_price_cents: 1100n }]);
  }, 120_000);

  it("an order whose payment is being retried when its event is cancelled fails, and any charge taken is refunded", async () => {
    const e = expectCreated(await create(hybrid({ format: "in_person", tickets: { in_person: { price_usd: 9, capacity: 5 } } })));
    const pending = await buy(buyer, e.event_id, { kind: "in_person", quantity: 1, payment_method_id: "pm_card_processingError_once" });
    expect(pending.status, pending.text).toBe(202);
    expect((await req("DELETE", `/v1/events/${e.event_id}`, admin)).status).toBe(200);
    const failed = await waitFor(async () => {
      const res = await req("GET", `/v1/ticket-orders/${pending.body.order_id}`, buyer.token);
      return res.body.status === "failed" && res.body;
    }, { timeoutMs: 15_000, what: "the order failed" });
    expect(failed.tickets).toEqual([]);
    // The retry may have reached the processor: whatever it charged is returned in full, and the
    // transaction fails (after the refund, when there was a charge).
    await waitFor(async () => {
      const charges = await p.db.selectFrom("sandbox_charges").select(["amount_cents", "amount_refunded_cents"]).where("idempotency_key", "=", `ticket_order:${pending.body.order_id}`).execute();
      const txn = await p.db.selectFrom("transactions").select("status").where("reference_id", "=", pending.body.order_id).executeTakeFirstOrThrow();
      return charges.every((c) => c.amount_refunded_cents === c.amount_cents) && txn.status === "failed";
    }, { what: "any charge refunded and the transaction failed" });
  });
});
