import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../api/src/config.ts";
import { ApiError } from "../../api/src/lib/errors.ts";
import { PaymentDeclined, PaymentRequestRefused, PaymentTransientError } from "../../api/src/modules/payments/processor.ts";
import { PaymentsService } from "../../api/src/modules/payments/payments.service.ts";
import { SandboxProcessor, TEST_CARDS } from "../../api/src/modules/payments/sandbox.processor.ts";
import { adminToken, createUser, expectProblem, testApiSettings, type TestUser, useTestApi } from "../support/api.ts";

// Retries of transient failures after about 5 ms, 10 ms: three attempts in all.
const api = useTestApi({ PAYMENT_RETRY_BASE_MS: "5", PAYMENT_MAX_ATTEMPTS: "3" });
const payments = () => api.server.platform.services.payments;

const key = (what = "sale") => `${what}:${randomBytes(8).toString("hex")}`;

async function save(user: TestUser, token = "pm_card_visa") {
  const res = await api.request("POST", "/v1/payment-methods", { token: user.token, body: { token } });
  if (res.status !== 201) throw new Error(`save failed: ${res.status} ${res.text}`);
  return res.body as { id: string; type: string; card: { brand: string; last4: string; exp_month: number; exp_year: number }; created_at: string };
}

const storedMethods = (userId: string) => api.db.selectFrom("payment_methods").selectAll().where("user_id", "=", userId).execute();
const sandboxCharges = (idempotencyKey: string) => api.db.selectFrom("sandbox_charges").selectAll().where("idempotency_key", "=", idempotencyKey).execute();

/** The error a promise rejects with (fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

describe("payment methods: access", () => {
  it("refuses anonymous callers on every route", async () => {
    const owner = await createUser(api);
    const method = await save(owner);
    expectProblem(await api.request("POST", "/v1/payment-methods", { body: { token: "pm_card_visa" } }), 401, "unauthenticated");
    expectProblem(await api.request("GET", "/v1/payment-methods"), 401, "unauthenticated");
    expectProblem(await api.request("GET", `/v1/payment-methods/${method.id}`), 401, "unauthenticated");
    expectProblem(await api.request("DELETE", `/v1/payment-methods/${method.id}`), 401, "unauthenticated");
    expect(await storedMethods(owner.id)).toHaveLength(1);
  });

  it("needs users:write to save or detach and users:read to look", async () => {
    const owner = await createUser(api);
    const method = await save(owner);
    const elsewhere = await createUser(api, { scope: ["marketplace:write", "artworks:write"] });
    expectProblem(await api.request("POST", "/v1/payment-methods", { token: elsewhere.token, body: { token: "pm_card_visa" } }), 403, "insufficient_scope");
    expectProblem(await api.request("GET", "/v1/payment-methods", { token: elsewhere.token }), 403, "insufficient_scope");
    expect(await storedMethods(elsewhere.id)).toHaveLength(0);

    // A reader of the owner's account: sees, cannot change.
    const reader = await api.request("POST", "/v1/auth/token", { body: { api_key: owner.apiKey, scope: ["users:read"] } });
    const readToken = reader.body.token as string;
    expect((await api.request("GET", "/v1/payment-methods", { token: readToken })).body.data.map((m: { id: string }) => m.id)).toEqual([method.id]);
    expect((await api.request("GET", `/v1/payment-methods/${method.id}`, { token: readToken })).status).toBe(200);
    expectProblem(await api.request("POST", "/v1/payment-methods", { token: readToken, body: { token: "pm_card_visa" } }), 403, "insufficient_scope");
    expectProblem(await api.request("DELETE", `/v1/payment-methods/${method.id}`, { token: readToken }), 403, "insufficient_scope");
    expect(await storedMethods(owner.id)).toMatchObject([{ id: method.id, detached_at: null }]);
  });

  it("lets the owner save, list, read and detach; another user and an admin get 404", async () => {
    const owner = await createUser(api);
    const other = await createUser(api);
    const admin = await adminToken(api);
    const visa = await save(owner);
    const mastercard = await save(owner, "pm_card_mastercard");
    expect(visa.id).toMatch(/^pm_[0-9A-Z]{26}$/);
    expect(visa).toMatchObject({ type: "card", card: { brand: "visa", last4: "4242", exp_month: 12 } });
    expect(visa.card.exp_year).toBeGreaterThan(new Date().getUTCFullYear());
    expect(mastercard.card).toMatchObject({ brand: "mastercard", last4: "4444" });
    const stored = await storedMethods(owner.id);
    expect(stored.map((m) => [m.id, m.processor, m.processor_ref])).toEqual(
      expect.arrayContaining([
        [visa.id, "sandbox", "pm_card_visa"],
        [mastercard.id, "sandbox", "pm_card_mastercard"],
      ]),
    );

    const list = await api.request("GET", "/v1/payment-methods?limit=1", { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [mastercard], pagination: { page: 1, limit: 1, total: 2, has_more: true } });
    expect((await api.request("GET", `/v1/payment-methods/${visa.id}`, { token: owner.token })).body).toEqual(visa);

    // Private to the owner: others, admins included, neither see nor detach it.
    for (const token of [other.token, admin]) {
      expectProblem(await api.request("GET", `/v1/payment-methods/${visa.id}`, { token }), 404, "not_found");
      expectProblem(await api.request("DELETE", `/v1/payment-methods/${visa.id}`, { token }), 404, "not_found");
      expect((await api.request("GET", "/v1/payment-methods", { token })).body.data.map((m: { id: string }) => m.id)).not.toContain(visa.id);
    }
    expect(await rejection(payments().resolvePaymentMethod(other.id, visa.id))).toMatchObject({ status: 404, code: "not_found" });
    expect(await payments().resolvePaymentMethod(owner.id, visa.id)).toMatchObject({ id: visa.id, processorRef: "pm_card_visa", saved: true });

    const detached = await api.request("DELETE", `/v1/payment-methods/${visa.id}`, { token: owner.token });
    expect(detached.status).toBe(200);
    expect(detached.body).toEqual({ id: visa.id, deleted: true });
    expectProblem(await api.request("GET", `/v1/payment-methods/${visa.id}`, { token: owner.token }), 404, "not_found");
    expectProblem(await api.request("DELETE", `/v1/payment-methods/${visa.id}`, { token: owner.token }), 404, "not_found");
    expect((await api.request("GET", "/v1/payment-methods", { token: owner.token })).body.data.map((m: { id: string }) => m.id)).toEqual([mastercard.id]);
    // Kept for the record, never chargeable again.
    expect((await storedMethods(owner.id)).find((m) => m.id === visa.id)?.detached_at).toBeInstanceOf(Date);
    expect(await rejection(payments().charge({ userId: owner.id, paymentMethodId: visa.id, idempotencyKey: key(), amountCents: 1_000n }))).toMatchObject({ status: 404 });
  });

  it("answers 404 for ids that are not saved methods", async () => {
    const owner = await createUser(api);
    for (const id of ["pm_card_visa", "pm_nope", "whs_01JD3Y5V0Q3G7W7J6T4N4C2X1M", "pm_01JD3Y5V0Q3G7W7J6T4N4C2X1M"]) {
      expectProblem(await api.request("GET", `/v1/payment-methods/${id}`, { token: owner.token }), 404, "not_found");
      expectProblem(await api.request("DELETE", `/v1/payment-methods/${id}`, { token: owner.token }), 404, "not_found");
    }
  });
});

describe("payment methods: bad input", () => {
  it("refuses unknown tokens, control characters, unknown and missing fields, storing nothing", async () => {
    const user = await createUser(api);
    const post = (body: unknown) => api.request("POST", "/v1/payment-methods", { token: user.token, body });

    const unknown = await post({ token: "pm_card_bogus" });
    expectProblem(unknown, 400, "validation_failed");
    expect(unknown.body.errors).toEqual([{ field: "token", code: "unknown_token", message: expect.stringContaining("sandbox") }]);
    // A card number is not a token (and is never accepted).
    expect((await post({ token: "4242424242424242" })).body.errors[0].code).toBe("unknown_token");

    for (const token of ["pm_card_visa\u0000", "pm_card_visa\n", "\u0007pm_card_visa"]) {
      const res = await post({ token });
      expectProblem(res, 400, "validation_failed");
      expect(res.body.errors[0]).toMatchObject({ field: "token", code: "invalid_format" });
    }
    const extra = await post({ token: "pm_card_visa", number: "4242424242424242" });
    expectProblem(extra, 400, "validation_failed");
    expect(extra.body.errors[0]).toMatchObject({ field: "number", code: "unknown_field" });
    expectProblem(await post({}), 400, "validation_failed");
    expectProblem(await post({ token: 4242 }), 400, "validation_failed");
    expectProblem(await post({ token: "" }), 400, "validation_failed");
    expectProblem(await post({ token: "x".repeat(256) }), 400, "validation_failed");
    expectProblem(await api.request("POST", "/v1/payment-methods", { token: user.token, rawBody: "{", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    expectProblem(await api.request("GET", "/v1/payment-methods?limit=0", { token: user.token }), 400, "invalid_parameter");

    expect(await storedMethods(user.id)).toEqual([]);
  });
});

describe("payment methods: Idempotency-Key", () => {
  it("replays a save made with the same key and refuses the key with another body", async () => {
    const user = await createUser(api);
    const headers = { "Idempotency-Key": key("save") };
    const first = await api.request("POST", "/v1/payment-methods", { token: user.token, body: { token: "pm_card_visa" }, headers });
    expect(first.status).toBe(201);
    const again = await api.request("POST", "/v1/payment-methods", { token: user.token, body: { token: "pm_card_visa" }, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expectProblem(await api.request("POST", "/v1/payment-methods", { token: user.token, body: { token: "pm_card_mastercard" }, headers }), 422, "idempotency_key_reused");
    expect((await storedMethods(user.id)).map((m) => m.id)).toEqual([first.body.id]);

    // A refusal is stored too: replayed, nothing saved.
    const refusedKey = { "Idempotency-Key": key("save") };
    expectProblem(await api.request("POST", "/v1/payment-methods", { token: user.token, body: { token: "pm_card_nope" }, headers: refusedKey }), 400, "validation_failed");
    expect((await storedMethods(user.id)).length).toBe(1);
  });
});

describe("sandbox processor through PaymentsService", () => {
  it("charges the succeeding test cards, directly or saved, with the platform fee recorded", async () => {
    const user = await createUser(api);
    for (const card of ["pm_card_visa", "pm_card_mastercard"]) {
      const idempotencyKey = key();
      const result = await payments().charge({ userId: user.id, paymentMethodId: card, idempotencyKey, amountCents: 12_345n, description: "Artwork", metadata: { sale_id: "x" } });
      expect(result).toMatchObject({ amountCents: 12_345n, feeCents: 309n, netCents: 12_036n, paymentMethodId: card, attempts: 1 });
      expect(result.chargeId).toMatch(/^ch_[0-9A-Z]{26}$/);
      const [row] = await sandboxCharges(idempotencyKey);
      expect(row).toMatchObject({ id: result.chargeId, status: "succeeded", amount_cents: 12_345n, application_fee_cents: 309n, currency: "usd", payment_method: card, description: "Artwork" });
      expect(row!.metadata).toMatchObject({ sale_id: "x", user_id: user.id, payment_method_id: card });
      expect(await payments().retrieveCharge(result.chargeId)).toMatchObject({ id: result.chargeId, status: "succeeded", amountRefundedCents: 0n });
    }
    const saved = await save(user, "pm_card_mastercard");
    const idempotencyKey = key();
    const result = await payments().charge({ userId: user.id, paymentMethodId: saved.id, idempotencyKey, amountCents: 5_000n });
    expect(result.paymentMethodId).toBe(saved.id);
    expect((await sandboxCharges(idempotencyKey))[0]).toMatchObject({ payment_method: "pm_card_mastercard", status: "succeeded" });
  });

  it("reports declines with Stripe's codes, once per key", async () => {
    const user = await createUser(api);
    const cases = [
      ["pm_card_chargeDeclined", "generic_decline", "Your card was declined."],
      ["pm_card_insufficientFunds", "insufficient_funds", "Your card has insufficient funds."],
    ] as const;
    for (const [card, declineCode, message] of cases) {
      const idempotencyKey = key();
      const charge = () => payments().charge({ userId: user.id, paymentMethodId: card, idempotencyKey, amountCents: 10_000n });
      const err = await rejection(charge());
      expect(err).toBeInstanceOf(PaymentDeclined);
      expect(err).toMatchObject({ code: "card_declined", declineCode, message });
      // As Stripe, the declined charge is recorded and the same key answers the same decline.
      const again = await rejection(charge());
      expect(again).toMatchObject({ code: "card_declined", declineCode, chargeId: (err as PaymentDeclined).chargeId });
      const rows = await sandboxCharges(idempotencyKey);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: "failed", failure_code: declineCode });
      expect(await payments().retrieveCharge(rows[0]!.id)).toMatchObject({ status: "failed", failureCode: declineCode });
    }
  });

  it("retries transient failures and then succeeds; a card that always fails transiently fails after the last attempt", async () => {
    const user = await createUser(api);
    const once = key();
    expect(await payments().charge({ userId: user.id, paymentMethodId: "pm_card_processingError_once", idempotencyKey: once, amountCents: 2_000n })).toMatchObject({ attempts: 2 });
    const twice = key();
    expect(await payments().charge({ userId: user.id, paymentMethodId: "pm_card_processingError_twice", idempotencyKey: twice, amountCents: 2_000n })).toMatchObject({ attempts: 3 });
    expect(await sandboxCharges(once)).toHaveLength(1);
    expect(await sandboxCharges(twice)).toHaveLength(1);

    const always = key();
    const started = Date.now();
    const err = await rejection(payments().charge({ userId: user.id, paymentMethodId: "pm_card_processingError", idempotencyKey: always, amountCents: 2_000n }));
    expect(err).toBeInstanceOf(PaymentTransientError);
    expect(err).toMatchObject({ code: "processing_error" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(10); // two backoffs (about 5 and 10 ms, ±25 %)
    expect(await sandboxCharges(always)).toEqual([]);
    // Saved, it behaves the same.
    const saved = await save(user, "pm_card_processingError_once");
    expect(await payments().charge({ userId: user.id, paymentMethodId: saved.id, idempotencyKey: key(), amountCents: 2_000n })).toMatchObject({ attempts: 2 });
  });

  it("answers the same charge for the same key, and refuses the key with another amount or card", async () => {
    const user = await createUser(api);
    const idempotencyKey = key();
    const input = { userId: user.id, paymentMethodId: "pm_card_visa", idempotencyKey, amountCents: 7_500n };
    const first = await payments().charge(input);
    const second = await payments().charge(input);
    expect(second.chargeId).toBe(first.chargeId);
    for (const changed of [{ amountCents: 7_501n }, { paymentMethodId: "pm_card_mastercard" }]) {
      const err = await rejection(payments().charge({ ...input, ...changed }));
      expect(err).toBeInstanceOf(PaymentRequestRefused);
      expect(err).toMatchObject({ code: "idempotency_error" });
    }
    expect(await sandboxCharges(idempotencyKey)).toMatchObject([{ id: first.chargeId, amount_cents: 7_500n, payment_method: "pm_card_visa" }]);
  });

  it("creates exactly one charge for 20 concurrent calls with one key", async () => {
    const user = await createUser(api);
    for (const card of ["pm_card_visa", "pm_card_processingError_once"]) {
      const idempotencyKey = key("race");
      const results = await Promise.all(
        Array.from({ length: 20 }, () => payments().charge({ userId: user.id, paymentMethodId: card, idempotencyKey, amountCents: 99_999n })),
      );
      expect(new Set(results.map((r) => r.chargeId)).size).toBe(1);
      expect(await sandboxCharges(idempotencyKey)).toHaveLength(1);
    }
  });

  it("refuses amounts outside Stripe's bounds and unknown payment methods", async () => {
    const user = await createUser(api);
    const charge = (amountCents: bigint, paymentMethodId = "pm_card_visa") => payments().charge({ userId: user.id, paymentMethodId, idempotencyKey: key(), amountCents });
    expect(await rejection(charge(49n))).toMatchObject({ code: "amount_too_small" });
    expect(await rejection(charge(100_000_000n))).toMatchObject({ code: "amount_too_large" });
    expect(await charge(50n)).toMatchObject({ feeCents: 1n });
    const unknown = await rejection(charge(1_000n, "pm_card_bogus"));
    expect(unknown).toBeInstanceOf(ApiError);
    expect(unknown).toMatchObject({ status: 404, code: "not_found" });
    // The processor itself, asked for a card it does not know (Stripe's resource_missing).
    expect(await rejection(payments().processor.charge({ idempotencyKey: key(), amountCents: 1_000n, currency: "usd", paymentMethod: "pm_card_bogus" }))).toMatchObject({ code: "resource_missing" });
  });

  it("refunds once per key, in full by default or in parts, never more than was charged", async () => {
    const user = await createUser(api);
    const charged = await payments().charge({ userId: user.id, paymentMethodId: "pm_card_visa", idempotencyKey: key(), amountCents: 10_000n });
    const refundKey = key("refund");
    const refund = await payments().refund({ chargeId: charged.chargeId, idempotencyKey: refundKey });
    expect(refund).toMatchObject({ chargeId: charged.chargeId, amountCents: 10_000n, status: "succeeded" });
    expect(refund.id).toMatch(/^re_[0-9A-Z]{26}$/);
    expect((await payments().refund({ chargeId: charged.chargeId, idempotencyKey: refundKey })).id).toBe(refund.id);
    expect(await rejection(payments().refund({ chargeId: charged.chargeId, idempotencyKey: key("refund") }))).toMatchObject({ code: "charge_already_refunded" });
    expect(await payments().retrieveCharge(charged.chargeId)).toMatchObject({ amountRefundedCents: 10_000n });
    expect(await api.db.selectFrom("sandbox_refunds").select("id").where("charge_id", "=", charged.chargeId).execute()).toEqual([{ id: refund.id }]);

    const partial = await payments().charge({ userId: user.id, paymentMethodId: "pm_card_visa", idempotencyKey: key(), amountCents: 1_000n });
    const partKey = key("refund");
    const results = await Promise.all(Array.from({ length: 10 }, () => payments().refund({ chargeId: partial.chargeId, idempotencyKey: partKey, amountCents: 400n })));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(await rejection(payments().refund({ chargeId: partial.chargeId, idempotencyKey: partKey, amountCents: 300n }))).toMatchObject({ code: "idempotency_error" });
    expect(await rejection(payments().refund({ chargeId: partial.chargeId, idempotencyKey: key("refund"), amountCents: 601n }))).toMatchObject({ code: "amount_too_large" });
    expect(await payments().refund({ chargeId: partial.chargeId, idempotencyKey: key("refund") })).toMatchObject({ amountCents: 600n });
    expect(await payments().retrieveCharge(partial.chargeId)).toMatchObject({ amountRefundedCents: 1_000n });

    // A declined charge has nothing to refund; an unknown charge is unknown.
    const declined = (await rejection(payments().charge({ userId: user.id, paymentMethodId: "pm_card_chargeDeclined", idempotencyKey: key(), amountCents: 1_000n }))) as PaymentDeclined;
    expect(await rejection(payments().refund({ chargeId: declined.chargeId!, idempotencyKey: key("refund") }))).toMatchObject({ code: "charge_not_refundable" });
    expect(await rejection(payments().refund({ chargeId: "ch_nope", idempotencyKey: key("refund") }))).toMatchObject({ code: "resource_missing" });
  });
});

describe("platform fee", () => {
  it("is 2.5 % by default, half up to the cent, in integer arithmetic", () => {
    expect(api.config.payments.platformFeeBps).toBe(250);
    const fee = (cents: bigint) => payments().platformFeeCents(cents);
    expect(fee(0n)).toBe(0n);
    expect(fee(1n)).toBe(0n); // 0.025
    expect(fee(19n)).toBe(0n); // 0.475
    expect(fee(20n)).toBe(1n); // 0.5: half up
    expect(fee(199n)).toBe(5n); // 4.975
    expect(fee(1_000_000n)).toBe(25_000n);
    expect(fee(100_000_000_000n)).toBe(2_500_000_000n); // the largest price ($1e9)
    expect(fee(99_999_999_999_999_999n)).toBe(2_500_000_000_000_000n); // beyond floats: still exact
    expect(() => fee(-1n)).toThrow(RangeError);
  });

  it("follows PLATFORM_FEE_BPS", () => {
    const at = (bps: number) => new PaymentsService(api.db, new SandboxProcessor(api.db), { platformFeeBps: bps, maxAttempts: 1, retryBaseMs: 1 });
    expect(at(0).platformFeeCents(1_000_000n)).toBe(0n);
    expect(at(10_000).platformFeeCents(199n)).toBe(199n);
    expect(at(1).platformFeeCents(5_000n)).toBe(1n); // 0.5 -> 1
    expect(at(1).platformFeeCents(4_999n)).toBe(0n);
    expect(loadConfig({ ...testApiSettings(), PLATFORM_FEE_BPS: "300" }).payments.platformFeeBps).toBe(300);
    expect(() => loadConfig({ ...testApiSettings(), PLATFORM_FEE_BPS: "10001" })).toThrow(ConfigError);
    expect(() => loadConfig({ ...testApiSettings(), PLATFORM_FEE_BPS: "2.5" })).toThrow(ConfigError);
  });
});

describe("configuration and documentation", () => {
  it("refuses the sandbox in production unless explicitly allowed", () => {
    const production = { ...testApiSettings(), NODE_ENV: "production", RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`, PUBLIC_BASE_URL: "https://api.example.com" };
    expect(() => loadConfig(production)).toThrow(/PAYMENT_SANDBOX_IN_PRODUCTION/);
    expect(loadConfig({ ...production, PAYMENT_SANDBOX_IN_PRODUCTION: "true" }).payments.processor).toBe("sandbox");
    expect(() => loadConfig({ ...testApiSettings(), PAYMENT_PROCESSOR: "paypal" })).toThrow(ConfigError);
    expect(api.config.payments.processor).toBe("sandbox");
  });

  it("documents the routes, the test cards and the errors in OpenAPI", async () => {
    const doc = (await api.request("GET", "/v1/openapi.json")).body;
    const list = doc.paths["/v1/payment-methods"];
    const one = doc.paths["/v1/payment-methods/{id}"];
    expect(Object.keys(list).sort()).toEqual(["get", "post"]);
    expect(Object.keys(one).sort()).toEqual(["delete", "get"]);
    for (const card of Object.keys(TEST_CARDS)) expect(list.post.description).toContain(card);
    expect(list.post.description).toContain("users:write");
    expect(Object.keys(list.post.responses)).toEqual(expect.arrayContaining(["201", "400", "401", "403", "409", "422"]));
    expect(Object.keys(one.get.responses)).toEqual(expect.arrayContaining(["200", "401", "403", "404"]));
    expect(doc.components.schemas.PaymentMethod.properties).toHaveProperty("card");
  });
});
