/**
 * What must hold after a soak run once its queues drained: chain, indexer, database and API agree
 * on certificates and shares; points and money balances equal their ledgers; no stock went
 * negative; every purchase answered 2xx was charged once and settled once.
 */
import { type Kysely, sql } from "kysely";
import { type Address, createPublicClient, http } from "viem";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import type { Database } from "../../api/src/db/database.ts";
import type { PlatformDeployment } from "../../tools/stack/deploy.ts";

/** Ids of the purchases the API answered 2xx: sales (`txn_…`, buy-now and accepted offers), share purchases, ticket orders. */
export interface Purchases {
  sales: string[];
  shares: string[];
  tickets: string[];
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

interface Inputs {
  db: Kysely<Database>;
  baseUrl: string;
  adminToken: string;
  rpcUrl: string;
  deployment: PlatformDeployment;
  purchases: Purchases;
}

/** Runs `fn` over `items`, `concurrency` at a time. */
async function eachLimited<T, R>(items: T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

const sample = (items: unknown[]) => (items.length ? `: ${items.slice(0, 3).map((i) => JSON.stringify(i)).join("; ")}` : "");

export async function checkInvariants({ db, baseUrl, adminToken, rpcUrl, deployment, purchases }: Inputs): Promise<Check[]> {
  const chain = createPublicClient({ transport: http(rpcUrl) });
  const checks: Check[] = [];
  const check = (name: string, bad: unknown[], detail: string) => checks.push({ name, ok: bad.length === 0, detail: `${detail}${bad.length ? `; ${bad.length} bad${sample(bad)}` : ""}` });

  // ---- shares: ArtShares totalSupply = confirmed = sold (nothing pending) = the indexer's; cap = sold + unsold ----
  const classes = (
    await sql<{ artwork_id: string; token_id: string; total_shares: number; shares_sold: number; shares_confirmed: number; confirmed_sum: number; minted: string | null; balances: string | null }>`
      select f.artwork_id, f.token_id::text, f.total_shares, f.shares_sold, f.shares_confirmed,
        (select coalesce(sum(p.shares), 0)::int from fractional_purchases p where p.artwork_id = f.artwork_id and p.status = 'confirmed') as confirmed_sum,
        (select c.minted::text from chain.share_class c where c.token_id = f.token_id) as minted,
        (select sum(b.balance)::text from chain.share_balance b where b.token_id = f.token_id) as balances
      from fractional_artworks f where f.status = 'active'`.execute(db)
  ).rows;
  const shareFacts = await Promise.all(
    classes.map(async (c) => {
      const tokenId = BigInt(c.token_id);
      const [supply, cap] = await Promise.all([
        chain.readContract({ address: deployment.artShares as Address, abi: artSharesAbi, functionName: "totalSupply", args: [tokenId] }),
        chain.readContract({ address: deployment.artShares as Address, abi: artSharesAbi, functionName: "shareCap", args: [tokenId] }),
      ]);
      return { ...c, supply: Number(supply), cap: Number(cap) };
    }),
  );
  check(
    "shares: on-chain totalSupply = sold (confirmed) = indexer; cap = sold + unsold",
    shareFacts.filter((c) => !(c.supply === c.shares_sold && c.supply === c.shares_confirmed && c.supply === c.confirmed_sum && String(c.supply) === (c.minted ?? "0") && String(c.supply) === (c.balances ?? "0") && c.cap === c.total_shares)),
    shareFacts.map((c) => `token ${c.token_id}: ${c.supply} minted of ${c.cap}`).join(", "),
  );

  // ---- certificates: one token per certified artwork, none twice, owner on-chain = indexer = API = the sales ----
  const [certifiedCount, indexedCount, onChainCount] = await Promise.all([
    sql<{ n: number }>`select count(*)::int as n from artworks where status = 'certified'`.execute(db).then((r) => r.rows[0]!.n),
    sql<{ n: number }>`select count(*)::int as n from chain.certificate`.execute(db).then((r) => r.rows[0]!.n),
    chain.readContract({ address: deployment.artCertificate as Address, abi: artCertificateAbi, functionName: "totalCertified" }).then(Number),
  ]);
  const twice = (
    await sql<{ what: string; id: string; n: number }>`
      select 'artwork on chain' as what, artwork_id as id, count(*)::int as n from chain.certificate group by artwork_id having count(*) > 1
      union all select 'token in database', token_id::text, count(*)::int from artworks where token_id is not null group by token_id having count(*) > 1`.execute(db)
  ).rows;
  const tokens = (
    await sql<{ artwork_id: string; db_token: string | null; chain_token: string | null; status: string | null; indexed_owner: string | null; expected_owner: string | null }>`
      select coalesce(a.id, c.artwork_id) as artwork_id, a.token_id::text as db_token, c.token_id::text as chain_token, a.status, lower(c.owner) as indexed_owner,
        lower(coalesce(
          (select s.buyer_wallet from sales s where s.artwork_id = a.id and s.status = 'completed' order by s.created_at desc, s.id desc limit 1),
          (select u.wallet_address from users u where u.id = a.artist_id))) as expected_owner
      from artworks a full join chain.certificate c on c.artwork_id = a.id
      where a.status = 'certified' or c.artwork_id is not null`.execute(db)
  ).rows;
  check(
    "certificates: one token per certified artwork, no artwork certified twice",
    [
      ...(certifiedCount === indexedCount && indexedCount === onChainCount ? [] : [{ certifiedCount, indexedCount, onChainCount }]),
      ...twice,
      ...tokens.filter((t) => t.status !== "certified" || t.db_token === null || t.db_token !== t.chain_token),
    ],
    `${certifiedCount} certified in the database, ${indexedCount} indexed, totalCertified() ${onChainCount}`,
  );
  const owners = await eachLimited(tokens.filter((t) => t.chain_token !== null), 16, async (t) => {
    const onChain = (await chain.readContract({ address: deployment.artCertificate as Address, abi: artCertificateAbi, functionName: "ownerOf", args: [BigInt(t.chain_token!)] })).toLowerCase();
    const res = await fetch(new URL(`/v1/artworks/${t.artwork_id}/certificate`, baseUrl));
    const api = res.ok ? ((await res.json()) as { owner: string }).owner.toLowerCase() : `HTTP ${res.status}`;
    return { artwork_id: t.artwork_id, onChain, indexed: t.indexed_owner, api, expected: t.expected_owner };
  });
  check(
    "certificates: ERC-721 ownerOf = indexer's owner = API's owner = last buyer (or the artist)",
    owners.filter((o) => !(o.onChain === o.indexed && o.onChain === o.api && o.onChain === o.expected)),
    `${owners.length} tokens compared`,
  );

  // ---- balances = ledger sums ----
  const points = (
    await sql<{ id: string; service_points: number; lifetime_points: number; spendable: number; earned: number }>`
      select b.user_id as id, b.service_points, b.lifetime_points, coalesce(sum(l.points), 0)::int as spendable,
        coalesce(sum(l.points) filter (where l.type in ('earned', 'reversal', 'adjustment')), 0)::int as earned
      from reward_balances b left join reward_ledger l on l.user_id = b.user_id group by b.user_id, b.service_points, b.lifetime_points`.execute(db)
  ).rows;
  check(
    "points: every user's service_points and lifetime_points = sums of the reward ledger (a reversal of points spent may take a balance below zero: docs/rewards.md)",
    points.filter((p) => p.service_points !== p.spendable || p.lifetime_points !== p.earned),
    `${points.length} users, ${points.reduce((n, p) => n + p.earned, 0)} points earned, ${points.reduce((n, p) => n + p.earned - p.spendable, 0)} spent`,
  );
  const money = (
    await sql<{ id: string; type: string; buyer_id: string; amount: string; charged: string | null; charge_status: string | null; entries: number; ledger_amount: string | null; payout_ok: boolean }>`
      select t.id, t.type, t.buyer_id, t.amount_cents::text as amount,
        (c.amount_cents - c.amount_refunded_cents)::text as charged, c.status as charge_status,
        (select count(*)::int from audit_ledger l where l.data->>'transaction_id' = t.id and l.kind in ('sale.completed', 'share_purchase.confirmed', 'ticket_order.confirmed')) as entries,
        (select sum(coalesce(l.data->>'price_cents', l.data->>'amount_cents')::bigint)::text from audit_ledger l where l.data->>'transaction_id' = t.id and l.kind in ('sale.completed', 'share_purchase.confirmed', 'ticket_order.confirmed')) as ledger_amount,
        (t.type <> 'sale' or t.fee_cents + t.royalty_cents + t.payout_cents = t.amount_cents) as payout_ok
      from transactions t left join sandbox_charges c on c.id = t.charge_id
      where t.status = 'completed' and t.type in ('sale', 'share_purchase', 'ticket_purchase')`.execute(db)
  ).rows;
  check(
    "money: each completed purchase's charge (net of refunds) = its one ledger entry; a sale's fee + royalty + payout = its price",
    money.filter((m) => m.charge_status !== "succeeded" || m.entries !== 1 || m.charged !== m.ledger_amount || !m.payout_ok),
    `${money.length} completed purchases`,
  );
  const perBuyer = new Map<string, { charged: bigint; ledger: bigint }>();
  for (const m of money) {
    const b = perBuyer.get(m.buyer_id) ?? { charged: 0n, ledger: 0n };
    b.charged += BigInt(m.charged ?? 0);
    b.ledger += BigInt(m.ledger_amount ?? 0);
    perBuyer.set(m.buyer_id, b);
  }
  const { rows: netCharges } = await sql<{ net: string }>`select coalesce(sum(amount_cents - amount_refunded_cents), 0)::text as net from sandbox_charges where status = 'succeeded'`.execute(db);
  const chargedTotal = money.reduce((n, m) => n + BigInt(m.charged ?? 0), 0n);
  check(
    "money: each buyer's net charges = the ledger's sum of their purchases; no charge outside a completed purchase",
    [
      ...[...perBuyer.entries()].filter(([, b]) => b.charged !== b.ledger).map(([id, b]) => ({ id, charged: b.charged.toString(), ledger: b.ledger.toString() })),
      ...(BigInt(netCharges[0]!.net) === chargedTotal ? [] : [{ net_charged: netCharges[0]!.net, completed_purchases: chargedTotal.toString() }]),
    ],
    `${perBuyer.size} buyers, $${(Number(chargedTotal) / 100).toFixed(2)} charged net`,
  );
  const verification = await fetch(new URL("/v1/admin/ledger/verify", baseUrl), { headers: { authorization: `Bearer ${adminToken}` } }).then((r) => r.json() as Promise<{ ok: boolean; entries_checked: number; anchors_checked: number; problem: string | null }>);
  check("audit ledger: hash chain and anchors verify (GET /v1/admin/ledger/verify)", verification.ok ? [] : [verification.problem], `${verification.entries_checked} entries, ${verification.anchors_checked} anchors`);

  // ---- no negative stock ----
  const seats = (
    await sql<{ id: string; kind: string; capacity: number | null; sold: number; held: number; issued: number; confirmed: number }>`
      select e.id, k.kind, k.capacity, k.sold,
        (select coalesce(sum(o.quantity), 0)::int from ticket_orders o where o.event_id = e.id and o.kind = k.kind and o.status in ('awaiting_payment', 'pending', 'confirmed')) as held,
        (select count(*)::int from tickets t where t.event_id = e.id and t.kind = k.kind and t.status <> 'refunded') as issued,
        (select coalesce(sum(o.quantity), 0)::int from ticket_orders o where o.event_id = e.id and o.kind = k.kind and o.status = 'confirmed') as confirmed
      from platform_events e
      cross join lateral (values ('in_person', e.in_person_capacity, e.in_person_sold), ('virtual', e.virtual_capacity, e.virtual_sold)) as k(kind, capacity, sold)`.execute(db)
  ).rows;
  const rewards = (await sql<{ id: string; stock: number | null; redeemed_count: number; redemptions: number }>`select r.id, r.stock, r.redeemed_count, (select count(*)::int from reward_redemptions x where x.reward_id = r.id) as redemptions from rewards r`.execute(db)).rows;
  check(
    "stock: tickets sold within capacity (= seats held = tickets issued), shares sold within the cap, rewards within stock",
    [
      ...seats.filter((s) => s.sold < 0 || (s.capacity !== null && s.sold > s.capacity) || s.sold !== s.held || s.issued !== s.confirmed),
      ...classes.filter((c) => c.shares_sold < 0 || c.shares_sold > c.total_shares),
      ...rewards.filter((r) => r.redeemed_count < 0 || (r.stock !== null && r.redeemed_count > r.stock) || r.redeemed_count !== r.redemptions),
    ],
    [
      ...seats.filter((s) => s.sold > 0).map((s) => `${s.kind} ${s.sold}/${s.capacity ?? "∞"} seats`),
      ...classes.map((c) => `${c.shares_sold}/${c.total_shares} shares`),
      ...rewards.map((r) => `${r.redeemed_count}/${r.stock ?? "∞"} rewards`),
    ].join(", "),
  );

  // ---- every 2xx purchase: one charge, one settlement ----
  const [sales, shares, tickets] = await Promise.all([
    chargedAndSettled(db, purchases.sales, "sales", "sale:", "select count(*)::int from chain.sale_settlement v where v.sale_id = p.id"),
    chargedAndSettled(db, purchases.shares, "fractional_purchases", "share_purchase:", "select count(*)::int from chain.share_mint m where lower(m.purchase_key) = p.purchase_key"),
    chargedAndSettled(db, purchases.tickets, "ticket_orders", "ticket_order:", "select case when count(*) = p.quantity then 1 else 0 end from tickets t where t.order_id = p.id"),
  ]);
  const settledAs: Record<string, string> = { sales: "completed", shares: "confirmed", tickets: "confirmed" };
  const answered = { sales, shares, tickets };
  const badPurchases = (Object.keys(answered) as (keyof typeof answered)[]).flatMap((k) => {
    const rows = answered[k];
    const missing = purchases[k].filter((id) => !rows.some((r) => r.id === id)).map((id) => ({ id, problem: "answered 2xx but not in the database" }));
    return [...missing, ...rows.filter((r) => r.status !== settledAs[k] || r.charges !== 1 || r.good !== 1 || r.settlements !== 1)];
  });
  const { rows: settledTwice } = await sql<{ id: string }>`
    select sale_id as id from chain.sale_settlement group by sale_id having count(*) > 1
    union all select purchase_key from chain.share_mint group by purchase_key having count(*) > 1`.execute(db);
  check(
    "purchases answered 2xx: each completed with exactly one charge and one settlement (SaleSettled / SharesMinted / tickets issued)",
    [...badPurchases, ...settledTwice],
    `${sales.length} sales, ${shares.length} share purchases, ${tickets.length} ticket orders`,
  );
  return checks;
}

/**
 * Each purchase of `ids` in `table`: its status, its charges under `keyPrefix` + id (all, and those
 * succeeded and never refunded), and `settlements` (a scalar subquery on the purchase `p`).
 */
async function chargedAndSettled(db: Kysely<Database>, ids: string[], table: string, keyPrefix: string, settlements: string) {
  if (ids.length === 0) return [];
  const { rows } = await sql<{ id: string; status: string; charges: number; good: number; settlements: number }>`
    select p.id, p.status,
      (select count(*)::int from sandbox_charges c where c.idempotency_key = ${keyPrefix}::text || p.id) as charges,
      (select count(*)::int from sandbox_charges c where c.idempotency_key = ${keyPrefix}::text || p.id and c.status = 'succeeded' and c.amount_refunded_cents = 0) as good,
      (${sql.raw(settlements)}) as settlements
    from ${sql.table(table)} p where p.id in (${sql.join(ids)})`.execute(db);
  return rows;
}
