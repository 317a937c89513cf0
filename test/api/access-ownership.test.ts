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
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { artworkInput, formFields, pngImage, postMultipart, startImageServer, useArtworkPlatform } from "../support/artworks.ts";
import { certifiedArtwork } from "../support/marketplace.ts";
import { waitFor } from "../support/wait.ts";
import { linkedWallet } from "../support/wallets.ts";
import { createUser, expectProblem, type TestResponse, type TestUser } from "../support/api.ts";

const p = useArtworkPlatform();

type Row = "owner" | "other" | "admin";
type Role = "collector" | "artist";
interface Member extends TestUser {
  role: Role;
}

/** What an entry acts on, made for its owner. */
interface Arranged {
  owner: Member;
  path: string;
  body?: unknown;
  /** On a list of the caller's own things: the owner's id, which the answer names for the rows `sees` marks only. */
  listed?: string;
}

interface Entry {
  arrange(): Promise<Arranged>;
  /** Each row's status (several where the route answers one of them by timing, e.g. 201 or 202). */
  expect: Record<Row, number | number[]>;
  /** Which rows find `listed` in the answer. */
  sees?: Record<Row, boolean>;
  /**
   * The rows may act on one resource one after the other (a change that can be made again).
   * Otherwise a row after a successful change gets a resource of its own; reads always share one.
   */
  repeatable?: true;
}

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

// ---- fixtures ----------------------------------------------------------------------------------

/** A server outside the API: the image URLs of artworks (404 until an image is served at the path) and a webhook receiver (/hook). */
const remote = { server: undefined as Awaited<ReturnType<typeof startImageServer>> | undefined, images: new Map<string, Buffer>() };

/** Made once in beforeAll: users, certified artworks and what the chain takes seconds to settle. */
const s = {} as {
  admin: TestUser;
  others: Record<Role, Member>;
  seller: Member;
  /** Certified artworks of `seller`, each for one use. */
  art: Record<"create" | "cancel" | "offers" | "accept" | "sold" | "disputed" | "shares" | "withdrawn", string>;
  /** Certified artworks of `seller` for fractionalizations (one per successful row). */
  fractionable: string[];
  offersListing: string;
  sale: { id: string; buyer: Member };
  disputed: { id: string; buyer: Member; disputeId: string };
  sharePurchase: { id: string; buyer: Member };
  event: string;
  /** A withdrawal of `seller`'s to a wallet it linked. */
  withdrawal: string;
};

const req = (method: string, path: string, token?: string, body?: unknown) => p.api.request(method, path, { token, body });

/** The answer's body when its status is one of `statuses`. */
async function made(res: Promise<TestResponse> | TestResponse, ...statuses: number[]): Promise<any> {
  const r = await res;
  if (!statuses.includes(r.status)) throw new Error(`expected ${statuses.join(" or ")}, got ${r.status}: ${r.text.slice(0, 500)}`);
  return r.body;
}

async function member(role: Role = "collector"): Promise<Member> {
  return { ...(await createUser(p.api, { role, scope: ["write"] })), role };
}

const artwork = async (owner: Member): Promise<string> => (await made(postMultipart(p.api.url, owner.token, formFields(artworkInput()), { bytes: pngImage() }), 201)).id;

/** An artwork whose certification failed for good (its image_url answered 404); its image is served from then on, for an admin's retry. */
async function failedArtwork(owner: Member): Promise<string> {
  const path = `/images/${randomBytes(6).toString("hex")}.png`;
  const id = (await made(req("POST", "/v1/artworks", owner.token, artworkInput({ image_url: remote.server!.url(path) })), 201)).id as string;
  await waitFor(async () => (await req("GET", `/v1/artworks/${id}`)).body?.status === "certification_failed", { timeoutMs: 20_000, what: `the failed certification of ${id}` });
  remote.images.set(path, pngImage());
  return id;
}

const list = async (artworkId: string): Promise<string> =>
  (await made(req("POST", "/v1/marketplace/listings", s.seller.token, { artwork_id: artworkId, price_usd: 100, accepts_offers: true }), 201)).listing_id;

async function offer(listingId: string): Promise<{ buyer: Member; id: string }> {
  const buyer = await member();
  const body = { listing_id: listingId, offer_amount_usd: 80, payment_method_id: "pm_card_visa" };
  return { buyer, id: (await made(req("POST", "/v1/marketplace/offers", buyer.token, body), 201)).offer_id };
}

/** A sale of `artworkId` from `seller` to a new collector, completed (the certificate moved on-chain). */
async function completedSale(artworkId: string): Promise<{ id: string; buyer: Member }> {
  const buyer = await member();
  const listingId = await list(artworkId);
  const id = (await made(req("POST", `/v1/marketplace/listings/${listingId}/purchase`, buyer.token, { payment_method_id: "pm_card_visa" }), 201, 202)).tx_id as string;
  await waitFor(async () => (await req("GET", `/v1/marketplace/transactions/${id}`, buyer.token)).body?.status === "completed", { timeoutMs: 30_000, what: `completion of ${id}` });
  return { id, buyer };
}

async function sharePurchase(artworkId: string): Promise<{ id: string; buyer: Member }> {
  await made(req("POST", "/v1/fractional/artworks", s.seller.token, { artwork_id: artworkId, total_shares: 100, price_per_share_usd: 1 }), 201, 202);
  await waitFor(async () => (await req("GET", `/v1/fractional/artworks/${artworkId}`)).body?.status === "active", { timeoutMs: 30_000, what: `the share class of ${artworkId}` });
  const buyer = await member();
  const body = { shares_quantity: 2, payment_method_id: "pm_card_visa" };
  return { id: (await made(req("POST", `/v1/fractional/${artworkId}/purchase`, buyer.token, body), 201, 202)).purchase_id, buyer };
}

async function apiKey(owner: Member): Promise<string> {
  return (await made(req("POST", "/v1/api-keys", owner.token, { name: "ownership" }), 201)).id;
}

async function paymentMethod(owner: Member): Promise<string> {
  return (await made(req("POST", "/v1/payment-methods", owner.token, { token: "pm_card_visa" }), 201)).id;
}

async function webhook(owner: Member): Promise<string> {
  return (await made(req("POST", "/v1/webhooks", owner.token, { url: remote.server!.url("/hook"), events: ["*"] }), 201)).id;
}

/** The path of a delivery of a new subscription's ping, its first attempt over (a retry is refused while one is in flight). */
async function delivery(owner: Member): Promise<string> {
  const subscriptionId = await webhook(owner);
  const id = (await made(req("POST", `/v1/webhooks/${subscriptionId}/test`, owner.token), 202)).id as string;
  const path = `/v1/webhooks/${subscriptionId}/deliveries/${id}`;
  await waitFor(async () => (await req("GET", path, owner.token)).body?.status === "succeeded", { what: `delivery ${id}` });
  return path;
}

const post = async (owner: Member): Promise<string> => (await made(req("POST", "/v1/community/posts", owner.token, { type: "discussion", content: "Studio corner, week 12." }), 201)).post_id;
const comment = async (owner: Member): Promise<string> =>
  (await made(req("POST", `/v1/community/posts/${await post(owner)}/comments`, owner.token, { content: "The light on the water." }), 201)).comment_id;
const discussion = async (owner: Member): Promise<string> =>
  (await made(req("POST", "/v1/community/discussions", owner.token, { title: "Gloss or satin?", content: "Which varnish, and why?" }), 201)).discussion_id;

/** A challenge by an admin: upcoming (starts tomorrow) or active (started a second ago). */
async function challenge(state: "upcoming" | "active"): Promise<string> {
  const start = Date.now() + (state === "upcoming" ? 86_400_000 : -1000);
  const body = { title: `Winter Light ${randomBytes(3).toString("hex")}`, theme: "The shortest day", prize_pool_usd: 500, starts_at: new Date(start).toISOString(), deadline: new Date(start + 7 * 86_400_000).toISOString() };
  return (await made(req("POST", "/v1/community/challenges", s.admin.token, body), 201)).challenge_id;
}

/** A submission of `owner` to a new active challenge. */
async function submission(owner: Member): Promise<{ challengeId: string; submissionId: string }> {
  const challengeId = await challenge("active");
  const body = { content: "Painted on the solstice." };
  return { challengeId, submissionId: (await made(req("POST", `/v1/community/challenges/${challengeId}/submissions`, owner.token, body), 201)).submission_id };
}

/** An event by an admin featuring `artist`, with free virtual seats and paid ones in person. */
async function event(artist?: Member): Promise<string> {
  const start = Date.now() + 10 * 86_400_000;
  const body = {
    title: "Northern Light: opening night",
    type: "exhibition",
    format: "hybrid",
    location: "Berlin",
    starts_at: new Date(start).toISOString(),
    ends_at: new Date(start + 3_600_000).toISOString(),
    artist_ids: artist ? [artist.id] : [],
    tickets: { virtual: { price_usd: 0 }, in_person: { price_usd: 25, capacity: 100 } },
  };
  return (await made(req("POST", "/v1/events", s.admin.token, body), 201)).event_id;
}

/** A free virtual ticket of the shared event: its order, ticket and door code. */
async function ticket(owner: Member): Promise<{ orderId: string; ticketId: string; code: string }> {
  const order = await made(req("POST", `/v1/events/${s.event}/tickets`, owner.token, { kind: "virtual", quantity: 1 }), 201);
  return { orderId: order.order_id, ticketId: order.tickets[0].ticket_id, code: order.tickets[0].code };
}

async function reward(): Promise<string> {
  return (await made(req("POST", "/v1/admin/rewards", s.admin.token, { name: `Catalogue ${randomBytes(3).toString("hex")}`, points_cost: 100, kind: "code", stock: 10, active: true }), 201)).reward_id;
}

// ---- the table ---------------------------------------------------------------------------------

const OWN = { owner: true, other: false, admin: false };

/** An arrange that makes a new member of `role` and, for it, the resource and the request. */
function owned(make: (owner: Member) => Promise<Omit<Arranged, "owner">>, role: Role = "collector"): () => Promise<Arranged> {
  return async () => {
    const owner = await member(role);
    return { owner, ...(await make(owner)) };
  };
}

const TABLE: Record<string, Entry> = {
  // Users
  "GET /v1/users/me": {
    arrange: owned(async (owner) => ({ path: "/v1/users/me", listed: owner.id })),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "PATCH /v1/users/{id}/profile": {
    // Only the user, admins included (the reference: profile update is the profile's own user's).
    arrange: owned(async (owner) => ({ path: `/v1/users/${owner.id}/profile`, body: { bio: "Oil landscapes of northern harbours." } })),
    expect: { owner: 200, other: 403, admin: 403 },
    repeatable: true,
  },
  "PATCH /v1/admin/users/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/admin/users/${owner.id}`, body: { role: "artist" } })),
    expect: { owner: 403, other: 403, admin: 200 },
    repeatable: true,
  },

  // Linked wallets: private to their user, admins included.
  "GET /v1/users/me/wallets": {
    arrange: owned(async (owner) => ({ path: "/v1/users/me/wallets", listed: getAddress(await linkedWallet(p.api, owner.token, privateKeyToAccount(generatePrivateKey()))) })),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "DELETE /v1/users/me/wallets/{address}": {
    arrange: owned(async (owner) => ({ path: `/v1/users/me/wallets/${await linkedWallet(p.api, owner.token, privateKeyToAccount(generatePrivateKey()))}` })),
    expect: { owner: 200, other: 404, admin: 404 },
  },

  // Withdrawals: private to their user; admins read them.
  "GET /v1/withdrawals": {
    arrange: async () => ({ owner: s.seller, path: "/v1/withdrawals", listed: s.withdrawal }),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "GET /v1/withdrawals/{id}": {
    arrange: async () => ({ owner: s.seller, path: `/v1/withdrawals/${s.withdrawal}` }),
    expect: { owner: 200, other: 404, admin: 200 },
  },

  // API keys: private to their owner, admins included.
  "GET /v1/api-keys": {
    arrange: owned(async (owner) => ({ path: "/v1/api-keys", listed: await apiKey(owner) })),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "DELETE /v1/api-keys/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/api-keys/${await apiKey(owner)}` })),
    expect: { owner: 200, other: 404, admin: 404 },
  },

  // Artworks: public, changed by their artist or an admin.
  "PATCH /v1/artworks/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/artworks/${await artwork(owner)}`, body: { description: "Varnished today." } }), "artist"),
    expect: { owner: 200, other: 403, admin: 200 },
    repeatable: true,
  },
  "DELETE /v1/artworks/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/artworks/${await artwork(owner)}` }), "artist"),
    expect: { owner: 200, other: 403, admin: 200 },
  },
  "POST /v1/admin/artworks/{id}/verify": {
    arrange: owned(async (owner) => ({ path: `/v1/admin/artworks/${await failedArtwork(owner)}/verify`, body: { override_reason: "Inspected at the gallery" } }), "artist"),
    expect: { owner: 403, other: 403, admin: [200, 202] },
  },

  // Webhook subscriptions: private to their owner, admins included.
  "GET /v1/webhooks": {
    arrange: owned(async (owner) => ({ path: "/v1/webhooks", listed: await webhook(owner) })),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "GET /v1/webhooks/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/webhooks/${await webhook(owner)}` })),
    expect: { owner: 200, other: 404, admin: 404 },
  },
  "PATCH /v1/webhooks/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/webhooks/${await webhook(owner)}`, body: { description: "Gallery sync" } })),
    expect: { owner: 200, other: 404, admin: 404 },
  },
  "DELETE /v1/webhooks/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/webhooks/${await webhook(owner)}` })),
    expect: { owner: 200, other: 404, admin: 404 },
  },
  "POST /v1/webhooks/{id}/rotate-secret": {
    arrange: owned(async (owner) => ({ path: `/v1/webhooks/${await webhook(owner)}/rotate-secret` })),
    expect: { owner: 200, other: 404, admin: 404 },
  },
  "POST /v1/webhooks/{id}/test": {
    arrange: owned(async (owner) => ({ path: `/v1/webhooks/${await webhook(owner)}/test` })),
    expect: { owner: 202, other: 404, admin: 404 },
  },
  "GET /v1/webhooks/{id}/deliveries": {
    arrange: owned(async (owner) => ({ path: `/v1/webhooks/${await webhook(owner)}/deliveries` })),
    expect: { owner: 200, other: 404, admin: 404 },
  },
  "GET /v1/webhooks/{id}/deliveries/{delivery_id}": {
    arrange: owned(async (owner) => ({ path: await delivery(owner) })),
    expect: { owner: 200, other: 404, admin: 404 },
  },
  "POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry": {
    arrange: owned(async (owner) => ({ path: `${await delivery(owner)}/retry` })),
    expect: { owner: 202, other: 404, admin: 404 },
  },

  // Payment methods: private to their owner, admins included.
  "GET /v1/payment-methods": {
    arrange: owned(async (owner) => ({ path: "/v1/payment-methods", listed: await paymentMethod(owner) })),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "GET /v1/payment-methods/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/payment-methods/${await paymentMethod(owner)}` })),
    expect: { owner: 200, other: 404, admin: 404 },
  },
  "DELETE /v1/payment-methods/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/payment-methods/${await paymentMethod(owner)}` })),
    expect: { owner: 200, other: 404, admin: 404 },
  },

  // Listings: public; made by the certificate's on-chain owner, cancelled by the seller or an admin.
  "POST /v1/marketplace/listings": {
    arrange: async () => ({ owner: s.seller, path: "/v1/marketplace/listings", body: { artwork_id: s.art.create, price_usd: 100, accepts_offers: true } }),
    expect: { owner: 201, other: 403, admin: 403 },
  },
  "DELETE /v1/marketplace/listings/{id}": {
    // A cancelled listing frees its artwork: each row that cancels gets a new listing of the same one.
    arrange: async () => ({ owner: s.seller, path: `/v1/marketplace/listings/${await list(s.art.cancel)}` }),
    expect: { owner: 200, other: 403, admin: 200 },
  },

  // Offers: private to their buyer and seller (admins read them); each move is one party's.
  "GET /v1/marketplace/offers": {
    arrange: async () => {
      const { buyer, id } = await offer(s.offersListing);
      return { owner: buyer, path: "/v1/marketplace/offers", listed: id };
    },
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "GET /v1/marketplace/offers/{id}": {
    arrange: async () => {
      const { buyer, id } = await offer(s.offersListing);
      return { owner: buyer, path: `/v1/marketplace/offers/${id}` };
    },
    expect: { owner: 200, other: 404, admin: 200 },
  },
  "POST /v1/marketplace/offers/{id}/accept": {
    arrange: async () => ({ owner: s.seller, path: `/v1/marketplace/offers/${(await offer(await list(s.art.accept))).id}/accept` }),
    expect: { owner: 200, other: 404, admin: 403 },
  },
  "POST /v1/marketplace/offers/{id}/reject": {
    arrange: async () => ({ owner: s.seller, path: `/v1/marketplace/offers/${(await offer(s.offersListing)).id}/reject` }),
    expect: { owner: 200, other: 404, admin: 403 },
  },
  "POST /v1/marketplace/offers/{id}/withdraw": {
    arrange: async () => {
      const { buyer, id } = await offer(s.offersListing);
      return { owner: buyer, path: `/v1/marketplace/offers/${id}/withdraw` };
    },
    expect: { owner: 200, other: 404, admin: 403 },
  },

  // Transactions, disputes and the ledger: private to the parties (admins read them).
  "GET /v1/marketplace/transactions": {
    arrange: async () => ({ owner: s.sale.buyer, path: "/v1/marketplace/transactions", listed: s.sale.id }),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "GET /v1/marketplace/transactions/{id}": {
    arrange: async () => ({ owner: s.sale.buyer, path: `/v1/marketplace/transactions/${s.sale.id}` }),
    expect: { owner: 200, other: 404, admin: 200 },
  },
  "POST /v1/marketplace/transactions/{id}/disputes": {
    arrange: async () => ({ owner: s.sale.buyer, path: `/v1/marketplace/transactions/${s.sale.id}/disputes`, body: { reason: "The canvas arrived torn." } }),
    expect: { owner: 201, other: 404, admin: 403 },
  },
  "GET /v1/marketplace/disputes/{id}": {
    arrange: async () => ({ owner: s.disputed.buyer, path: `/v1/marketplace/disputes/${s.disputed.disputeId}` }),
    expect: { owner: 200, other: 404, admin: 200 },
  },
  "POST /v1/admin/disputes/{id}/resolve": {
    arrange: async () => ({ owner: s.disputed.buyer, path: `/v1/admin/disputes/${s.disputed.disputeId}/resolve`, body: { resolution: "reject", note: "The photos show no damage." } }),
    expect: { owner: 403, other: 403, admin: 200 },
  },
  "GET /v1/marketplace/ledger": {
    // Admins read every entry.
    arrange: async () => ({ owner: s.sale.buyer, path: `/v1/marketplace/ledger?subject_id=${s.sale.id}&limit=100`, listed: await ledgerEntryOf(s.sale) }),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: { owner: true, other: false, admin: true },
  },
  "GET /v1/marketplace/ledger/{entry_id}": {
    arrange: async () => ({ owner: s.sale.buyer, path: `/v1/marketplace/ledger/${await ledgerEntryOf(s.sale)}` }),
    expect: { owner: 200, other: 404, admin: 200 },
  },

  // Fractional ownership: the certificate's on-chain owner or an admin fractionalizes; a purchase is its buyer's.
  "POST /v1/fractional/artworks": {
    arrange: async () => ({ owner: s.seller, path: "/v1/fractional/artworks", body: { artwork_id: s.fractionable.pop(), total_shares: 10, price_per_share_usd: 1 } }),
    expect: { owner: [201, 202], other: 403, admin: [201, 202] },
  },
  "GET /v1/fractional/purchases/{id}": {
    arrange: async () => ({ owner: s.sharePurchase.buyer, path: `/v1/fractional/purchases/${s.sharePurchase.id}` }),
    expect: { owner: 200, other: 404, admin: 200 },
  },

  // Community: public; edits are the author's, removals the author's or an admin's; likes, comments, replies and submissions anyone's.
  "GET /v1/community/posts/{id}": {
    // A removed post is 404 to everyone but admins, its author included.
    arrange: owned(async (owner) => {
      const id = await post(owner);
      await made(req("DELETE", `/v1/community/posts/${id}`, owner.token, {}), 200);
      return { path: `/v1/community/posts/${id}` };
    }),
    expect: { owner: 404, other: 404, admin: 200 },
  },
  "PATCH /v1/community/posts/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/community/posts/${await post(owner)}`, body: { content: "Studio corner, week 13." } })),
    expect: { owner: 200, other: 403, admin: 403 },
    repeatable: true,
  },
  "DELETE /v1/community/posts/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/community/posts/${await post(owner)}`, body: { reason: "Posted to the wrong thread" } })),
    expect: { owner: 200, other: 403, admin: 200 },
  },
  "POST /v1/community/posts/{id}/like": {
    arrange: owned(async (owner) => ({ path: `/v1/community/posts/${await post(owner)}/like` })),
    expect: { owner: 200, other: 200, admin: 200 },
    repeatable: true,
  },
  "DELETE /v1/community/posts/{id}/like": {
    arrange: owned(async (owner) => ({ path: `/v1/community/posts/${await post(owner)}/like` })),
    expect: { owner: 200, other: 200, admin: 200 },
    repeatable: true,
  },
  "POST /v1/community/posts/{id}/comments": {
    arrange: owned(async (owner) => ({ path: `/v1/community/posts/${await post(owner)}/comments`, body: { content: "Wonderful light." } })),
    expect: { owner: 201, other: 201, admin: 201 },
    repeatable: true,
  },
  "PATCH /v1/community/comments/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/community/comments/${await comment(owner)}`, body: { content: "Wonderful light, edited." } })),
    expect: { owner: 200, other: 403, admin: 403 },
    repeatable: true,
  },
  "DELETE /v1/community/comments/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/community/comments/${await comment(owner)}` })),
    expect: { owner: 204, other: 403, admin: 204 },
  },
  "POST /v1/community/discussions/{id}/replies": {
    arrange: owned(async (owner) => ({ path: `/v1/community/discussions/${await discussion(owner)}/replies`, body: { content: "Satin: gloss glares." } })),
    expect: { owner: 201, other: 201, admin: 201 },
    repeatable: true,
  },
  "POST /v1/community/discussions/{id}/pin": {
    arrange: owned(async (owner) => ({ path: `/v1/community/discussions/${await discussion(owner)}/pin` })),
    expect: { owner: 403, other: 403, admin: 200 },
    repeatable: true,
  },
  "DELETE /v1/community/discussions/{id}/pin": {
    arrange: owned(async (owner) => {
      const id = await discussion(owner);
      await made(req("POST", `/v1/community/discussions/${id}/pin`, s.admin.token), 200);
      return { path: `/v1/community/discussions/${id}/pin` };
    }),
    expect: { owner: 403, other: 403, admin: 200 },
    repeatable: true,
  },
  "PATCH /v1/community/challenges/{id}": {
    // An admin's challenge: the owner row is a user who would take part.
    arrange: owned(async () => ({ path: `/v1/community/challenges/${await challenge("upcoming")}`, body: { prize_pool_usd: 3000 } })),
    expect: { owner: 403, other: 403, admin: 200 },
    repeatable: true,
  },
  "POST /v1/community/challenges/{id}/submissions": {
    arrange: owned(async () => ({ path: `/v1/community/challenges/${await challenge("active")}/submissions`, body: { content: "Painted at dusk." } })),
    expect: { owner: 201, other: 201, admin: 201 },
    repeatable: true,
  },
  "DELETE /v1/community/challenges/{id}/submissions/{submission_id}": {
    arrange: owned(async (owner) => {
      const { challengeId, submissionId } = await submission(owner);
      return { path: `/v1/community/challenges/${challengeId}/submissions/${submissionId}`, body: { reason: "Not on the theme" } };
    }),
    expect: { owner: 204, other: 403, admin: 204 },
  },
  "POST /v1/community/challenges/{id}/winners": {
    // The owner row is the submitter: winners are named by admins only, after the deadline.
    arrange: owned(async (owner) => {
      const { challengeId, submissionId } = await submission(owner);
      await p.db.updateTable("community_challenges").set({ starts_at: sql`now() - interval '2 hours'`, deadline: sql`now() - interval '1 hour'` }).where("id", "=", challengeId).execute();
      return { path: `/v1/community/challenges/${challengeId}/winners`, body: { submission_ids: [submissionId] } };
    }),
    expect: { owner: 403, other: 403, admin: 200 },
  },

  // Events and tickets: events are admins'; orders and tickets private to their buyer and holder (admins read them).
  "PATCH /v1/events/{id}": {
    // The owner row is the artist the event features: still not theirs to change.
    arrange: owned(async (owner) => ({ path: `/v1/events/${await event(owner)}`, body: { featured: true } }), "artist"),
    expect: { owner: 403, other: 403, admin: 200 },
    repeatable: true,
  },
  "DELETE /v1/events/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/events/${await event(owner)}` }), "artist"),
    expect: { owner: 403, other: 403, admin: 200 },
  },
  "POST /v1/events/{id}/tickets": {
    arrange: owned(async () => ({ path: `/v1/events/${s.event}/tickets`, body: { kind: "virtual", quantity: 1 } })),
    expect: { owner: 201, other: 201, admin: 201 },
    repeatable: true,
  },
  "GET /v1/events/{id}/tickets": {
    arrange: owned(async (owner) => ({ path: `/v1/events/${s.event}/tickets`, listed: (await ticket(owner)).ticketId })),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "POST /v1/ticket-orders/{id}/pay": {
    arrange: owned(async (owner) => {
      const held = await made(req("POST", `/v1/events/${s.event}/tickets`, owner.token, { kind: "in_person", quantity: 1 }), 201);
      return { path: `/v1/ticket-orders/${held.order_id}/pay`, body: { payment_method_id: "pm_card_visa" } };
    }),
    expect: { owner: [201, 202], other: 404, admin: 403 },
  },
  "GET /v1/tickets/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/tickets/${(await ticket(owner)).ticketId}` })),
    expect: { owner: 200, other: 404, admin: 200 },
  },
  "GET /v1/ticket-orders/{id}": {
    arrange: owned(async (owner) => ({ path: `/v1/ticket-orders/${(await ticket(owner)).orderId}` })),
    expect: { owner: 200, other: 404, admin: 200 },
  },
  "POST /v1/events/{id}/check-in": {
    // The owner row is the ticket's holder: only admins admit, at the door.
    arrange: owned(async (owner) => ({ path: `/v1/events/${s.event}/check-in`, body: { code: (await ticket(owner)).code } })),
    expect: { owner: 403, other: 403, admin: 200 },
  },

  // Rewards: the history is its user's alone; the catalog is admins'.
  "GET /v1/rewards/history": {
    arrange: owned(async (owner) => {
      const postId = await post(owner);
      // A post earns its author points, recorded from the outbox soon after.
      await waitFor(() => p.db.selectFrom("reward_ledger").select("id").where("reference_id", "=", postId).executeTakeFirst(), { what: `the points of ${postId}` });
      return { path: "/v1/rewards/history", listed: postId };
    }),
    expect: { owner: 200, other: 200, admin: 200 },
    sees: OWN,
  },
  "PATCH /v1/admin/rewards/{id}": {
    // The owner row is a user who would redeem it.
    arrange: owned(async () => ({ path: `/v1/admin/rewards/${await reward()}`, body: { points_cost: 120 } })),
    expect: { owner: 403, other: 403, admin: 200 },
    repeatable: true,
  },
};

/** An entry of the audit ledger naming the sale's buyer. */
async function ledgerEntryOf(sale: { id: string; buyer: Member }): Promise<string> {
  const row = await p.db.selectFrom("audit_ledger").select("id").where("subject_id", "=", sale.id).where(sql<boolean>`${sale.buyer.id} = any(parties)`).orderBy("seq").executeTakeFirstOrThrow();
  return row.id;
}

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
