/**
 * The table of the access-ownership matrix (test/api/access-ownership.test.ts), keyed by
 * "METHOD /path": each entry makes the resource for its owner and names the answer of each row.
 */
import { sql } from "kysely";
import { getAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type AccessFixtures, type Entry, OWN } from "./access-fixtures.ts";
import type { ArtworkPlatform } from "./artworks.ts";
import { waitFor } from "./wait.ts";
import { linkedWallet } from "./wallets.ts";

export function accessTable(p: ArtworkPlatform, f: AccessFixtures): Record<string, Entry> {
  const { s, req, made, artwork, failedArtwork, list, offer, apiKey, paymentMethod, webhook, delivery, post, comment, discussion, challenge, submission, event, ticket, reward, owned, ledgerEntryOf } = f;
  return {
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
}
