/**
 * The fixtures of the access-ownership matrix (test/api/access-ownership.test.ts): who acts (the
 * owner, another user of the same role, an admin), what an entry of the table acts on, and the
 * factories that make each kind of resource for its owner on the file's platform.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { createUser, type TestResponse, type TestUser } from "./api.ts";
import { type ArtworkPlatform, artworkInput, formFields, pngImage, postMultipart, startImageServer } from "./artworks.ts";
import { waitFor } from "./wait.ts";

export type Row = "owner" | "other" | "admin";
export type Role = "collector" | "artist";
export interface Member extends TestUser {
  role: Role;
}

/** What an entry acts on, made for its owner. */
export interface Arranged {
  owner: Member;
  path: string;
  body?: unknown;
  /** On a list of the caller's own things: the owner's id, which the answer names for the rows `sees` marks only. */
  listed?: string;
}

export interface Entry {
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

/** Which rows find the owner's id in a list of the caller's own things: the owner only. */
export const OWN = { owner: true, other: false, admin: false };

/** Made once in beforeAll: users, certified artworks and what the chain takes seconds to settle. */
export interface Cast {
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
}

/** The fixtures on platform `p`: `s` is filled by the file's beforeAll, `remote` started there. */
export function accessFixtures(p: ArtworkPlatform) {
  /** A server outside the API: the image URLs of artworks (404 until an image is served at the path) and a webhook receiver (/hook). */
  const remote = { server: undefined as Awaited<ReturnType<typeof startImageServer>> | undefined, images: new Map<string, Buffer>() };

  const s = {} as Cast;

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

  /** An arrange that makes a new member of `role` and, for it, the resource and the request. */
  function owned(make: (owner: Member) => Promise<Omit<Arranged, "owner">>, role: Role = "collector"): () => Promise<Arranged> {
    return async () => {
      const owner = await member(role);
      return { owner, ...(await make(owner)) };
    };
  }

  /** An entry of the audit ledger naming the sale's buyer. */
  async function ledgerEntryOf(sale: { id: string; buyer: Member }): Promise<string> {
    const row = await p.db.selectFrom("audit_ledger").select("id").where("subject_id", "=", sale.id).where(sql<boolean>`${sale.buyer.id} = any(parties)`).orderBy("seq").executeTakeFirstOrThrow();
    return row.id;
  }

  return { remote, s, req, made, member, artwork, failedArtwork, list, offer, completedSale, sharePurchase, apiKey, paymentMethod, webhook, delivery, post, comment, discussion, challenge, submission, event, ticket, reward, owned, ledgerEntryOf };
}

export type AccessFixtures = ReturnType<typeof accessFixtures>;
