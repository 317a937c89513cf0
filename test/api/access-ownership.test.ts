/**
 * The rows of the access matrix that need a resource: the owner, another user of the same role
 * holding every scope of it, and an admin, on every operation of the document that acts on
 * someone's resource. One table keyed by "METHOD /path": each entry makes the resource for its owner
 * and names the answer of each row. Another user gets 404 for what is private (a payment method, a
 * webhook subscription, an API key, an offer, a transaction, a ticket order…) and 403 for a public
 * thing they may not change (an artwork, a listing, a post); the owner and admins get the route's
 * rule. The table and the exclusions (each with its reason) cover the served document exactly: a
 * new operation fails here until it is classified. The rows that need no resource (anonymous, no
 * scope, wrong role, suspended) are in access-matrix.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { accessFixtures, type Arranged, type Entry, type Row } from "../support/access-fixtures.ts";
import { accessTable } from "../support/access-table.ts";
import { createUser, expectProblem } from "../support/api.ts";
import { startImageServer, useArtworkPlatform } from "../support/artworks.ts";
import { certifiedArtwork } from "../support/marketplace.ts";
import { linkedWallet } from "../support/wallets.ts";

const p = useArtworkPlatform();
const fixtures = accessFixtures(p);
const { remote, s, req, made, member, list, completedSale, sharePurchase, event } = fixtures;
const TABLE = accessTable(p, fixtures);

/** Rows run in this order on a resource: a refusal first, then whoever may succeed. */
const ROWS: Row[] = ["other", "admin", "owner"];

const PUBLIC_READ = "public read: anyone reads it, anonymous callers included (access-matrix.test.ts)";
const CREATES = "creates a resource for the caller: no owner to cross yet";
const ADMIN_ONLY = "admin-only and names no one's resource: access-matrix.test.ts refuses every other role";
const SIGN_IN = "signs in: a credential, not a resource";
const OPEN_PURCHASE = "buys from a public item, open to every buyer; the seller's own purchase is 409 invalid_state (feature tests)";

/** Operations of the document no owner row applies to, each with why. */
const EXCLUDED: Record<string, string> = {
  "GET /v1/users/{id}": PUBLIC_READ,
  "GET /v1/admin/users": ADMIN_ONLY,
  "POST /v1/admin/users": ADMIN_ONLY,
  "POST /v1/auth/token": SIGN_IN,
  "DELETE /v1/auth/token": "revokes the token it is called with: it cannot name another's",
  "POST /v1/auth/siwe/nonce": SIGN_IN,
  "POST /v1/auth/siwe/verify": SIGN_IN,
  "POST /v1/users/me/wallets": "links a wallet the caller's signature proves to the caller: no one else's to cross (a wallet of another account is 409, wallets.test.ts)",
  "POST /v1/withdrawals": "moves the caller's own certificate or payment token to one of the caller's linked wallets: another's wallet is 400, another's certificate 403 (withdrawals.test.ts), more than the caller's custodial wallet holds 409 (onchain-purchases.test.ts)",
  "POST /v1/api-keys": CREATES,
  "GET /v1/artworks": PUBLIC_READ,
  "POST /v1/artworks": CREATES,
  "GET /v1/artworks/{id}": PUBLIC_READ,
  "GET /v1/artworks/{id}/image": PUBLIC_READ,
  "GET /v1/artworks/{id}/metadata.json": PUBLIC_READ,
  "GET /v1/artworks/{id}/certificate": PUBLIC_READ,
  "GET /v1/artworks/{id}/certificate/document": PUBLIC_READ,
  "GET /v1/certificates/verify": PUBLIC_READ,
  "GET /verify/{artwork_id}": PUBLIC_READ,
  "POST /v1/webhooks": CREATES,
  "GET /v1/admin/ledger/verify": ADMIN_ONLY,
  "POST /v1/payment-methods": CREATES,
  "GET /v1/marketplace/listings": PUBLIC_READ,
  "GET /v1/marketplace/listings/{id}": PUBLIC_READ,
  "POST /v1/marketplace/listings/{id}/purchase": OPEN_PURCHASE,
  "POST /v1/marketplace/listings/{id}/onchain-purchase": "anonymous: answers the steps of a public listing's order to any wallet, acting for no one; the seller's own wallet is 409 (onchain-purchases.test.ts)",
  "POST /v1/marketplace/offers": "an offer on a public listing, open to every buyer; on your own listing 409 invalid_state (marketplace-sales.test.ts)",
  "GET /v1/admin/disputes": ADMIN_ONLY,
  "GET /v1/fractional/artworks": PUBLIC_READ,
  "GET /v1/fractional/artworks/{id}": PUBLIC_READ,
  "GET /v1/fractional/{id}/shares": PUBLIC_READ,
  "GET /v1/fractional/metadata/{id}.json": PUBLIC_READ,
  "POST /v1/fractional/{id}/purchase": OPEN_PURCHASE,
  "POST /v1/community/posts": CREATES,
  "GET /v1/community/posts": PUBLIC_READ,
  "GET /v1/community/posts/{id}/images/{n}": PUBLIC_READ,
  "GET /v1/community/posts/{id}/comments": PUBLIC_READ,
  "POST /v1/community/discussions": CREATES,
  "GET /v1/community/discussions": PUBLIC_READ,
  "GET /v1/community/discussions/{id}": PUBLIC_READ,
  "GET /v1/community/discussions/{id}/replies": PUBLIC_READ,
  "POST /v1/community/challenges": ADMIN_ONLY,
  "GET /v1/community/challenges": PUBLIC_READ,
  "GET /v1/community/challenges/{id}": PUBLIC_READ,
  "GET /v1/community/challenges/{id}/submissions": PUBLIC_READ,
  "GET /v1/admin/reports": ADMIN_ONLY,
  "GET /admin/reports": ADMIN_ONLY,
  "GET /v1/events": PUBLIC_READ,
  "POST /v1/events": ADMIN_ONLY,
  "GET /v1/events/{id}": PUBLIC_READ,
  "GET /v1/events/{id}/calendar.ics": PUBLIC_READ,
  "GET /v1/rewards/balance": "the caller's own balance: no id to cross (another's history: GET /v1/rewards/history)",
  "GET /v1/rewards/catalog": PUBLIC_READ,
  "GET /v1/rewards/rules": PUBLIC_READ,
  "POST /v1/rewards/redeem": "spends the caller's own points; another user's order_id is refused like an unknown one, 409 (rewards.test.ts)",
  "GET /v1/admin/rewards": ADMIN_ONLY,
  "POST /v1/admin/rewards": ADMIN_ONLY,
};

// ---- the run -----------------------------------------------------------------------------------

/** Each operation's `x-auth`, from the served document. */
const documented = new Map<string, { public?: true; scope?: string | null }>();

beforeAll(async () => {
  const doc = await p.api.request("GET", "/v1/openapi.json");
  for (const [path, item] of Object.entries(doc.body.paths as Record<string, Record<string, { "x-auth": { public?: true; scope?: string | null } }>>)) {
    for (const [method, op] of Object.entries(item)) {
      if (["get", "post", "put", "patch", "delete"].includes(method)) documented.set(`${method.toUpperCase()} ${path}`, op["x-auth"]);
    }
  }

  remote.server = await startImageServer();
  remote.server.respond((request, res) => {
    const bytes = remote.images.get(request.url ?? "");
    if (request.url === "/hook") res.writeHead(200).end();
    else if (bytes) res.writeHead(200, { "content-type": "image/png" }).end(bytes);
    else res.writeHead(404).end();
  });

  const [admin, collector, artist, seller] = await Promise.all([createUser(p.api, { role: "admin", scope: ["admin"] }), member(), member("artist"), member("artist")]);
  Object.assign(s, { admin, others: { collector, artist }, seller });
  const certified = await Promise.all(Array.from({ length: 10 }, () => certifiedArtwork(p, seller)));
  const [create, cancel, offers, accept, sold, disputed, shares, withdrawn, ...fractionable] = certified as [string, string, string, string, string, string, string, string, string, string];
  s.art = { create, cancel, offers, accept, sold, disputed, shares, withdrawn };
  s.fractionable = fractionable;

  const [offersListing, sale, disputedSale, purchase, eventId] = await Promise.all([list(offers), completedSale(sold), completedSale(disputed), sharePurchase(shares), event()]);
  const disputeId = (await made(req("POST", `/v1/marketplace/transactions/${disputedSale.id}/disputes`, disputedSale.buyer.token, { reason: "Not as described." }), 201)).dispute_id;
  const to = await linkedWallet(p.api, seller.token, privateKeyToAccount(generatePrivateKey()));
  const withdrawal = (await made(req("POST", "/v1/withdrawals", seller.token, { artwork_id: withdrawn, asset: "certificate", to }), 202)).id;
  Object.assign(s, { offersListing, sale, disputed: { ...disputedSale, disputeId }, sharePurchase: purchase, event: eventId, withdrawal });
}, 180_000);

afterAll(async () => {
  await remote.server?.close();
});

/** The rows of one entry, in order on as few resources as its rule allows. */
async function play(key: string, entry: Entry): Promise<void> {
  const method = key.split(" ")[0]!;
  const auth = documented.get(key);
  expect(auth, `${key} is not an operation of the document`).toBeDefined();
  let arranged: Arranged | undefined;
  for (const row of ROWS) {
    arranged ??= await entry.arrange();
    const caller = row === "owner" ? arranged.owner : row === "admin" ? s.admin : s.others[arranged.owner.role];
    const res = await req(method, arranged.path, caller.token, arranged.body);
    const name = `${row} ${method} ${arranged.path}`;
    expect([entry.expect[row]].flat(), `${name}: ${res.status} ${res.text.slice(0, 300)}`).toContain(res.status);
    if (res.status === 404) expectProblem(res, 404, "not_found");
    // A user without the admin scope is stopped by the scope before the role.
    if (res.status === 403) expectProblem(res, 403, row !== "admin" && auth?.scope?.startsWith("admin") ? "insufficient_scope" : "forbidden");
    if (arranged.listed !== undefined) {
      expect(entry.sees, `${key} lists the owner's id: say who sees it`).toBeDefined();
      expect(res.text.includes(arranged.listed), `${name} names ${arranged.listed}`).toBe(entry.sees![row]);
    }
    if (res.status < 300 && method !== "GET" && !entry.repeatable) arranged = undefined;
  }
}

describe("the owner, another user and an admin on every operation that acts on someone's resource", () => {
  it("classifies every operation of the document exactly once: in the table or excluded with a reason", () => {
    const keys = [...Object.keys(TABLE), ...Object.keys(EXCLUDED)];
    expect(keys.filter((k, i) => keys.indexOf(k) !== i), "in both the table and the exclusions").toEqual([]);
    expect(keys.filter((k) => !documented.has(k)), "not in the document").toEqual([]);
    expect([...documented.keys()].filter((k) => !keys.includes(k)), "neither in the table nor excluded").toEqual([]);
  });

  describe.concurrent("rows", () => {
    for (const [key, entry] of Object.entries(TABLE)) it(key, () => play(key, entry), 60_000);
  });
});
