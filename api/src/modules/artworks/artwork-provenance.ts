import { isoDate } from "../../lib/time.ts";
import type { IndexedTransfer } from "../../chain/indexer-views.ts";
import type { ArtworkProvenance } from "./artworks.tables.ts";

/**
 * Off-chain events (created, listed, deleted, overrides, and the certification with its
 * transaction) merged with the chain's later transfers of the certificate, in time order.
 */
export function provenanceOf(offChain: ArtworkProvenance[], transfers: IndexedTransfer[]) {
  const entries = [
    ...offChain.map((p) => ({ at: p.occurred_at.getTime(), entry: provenanceEntry(p) })),
    // The mint is the `certified` entry; what follows it is provenance of ownership.
    ...transfers
      .filter((t) => !/^0x0{40}$/.test(t.from))
      .map((t) => ({ at: t.at.getTime(), entry: { event: "transferred", date: isoDate(t.at), tx: t.txHash, from: t.from, to: t.to } })),
  ];
  return entries.sort((x, y) => x.at - y.at).map((e) => e.entry);
}

function provenanceEntry(p: ArtworkProvenance) {
  return {
    event: p.event,
    date: isoDate(p.occurred_at),
    ...(p.tx_hash ? { tx: p.tx_hash } : p.actor_id ? { actor: p.actor_id } : {}),
    ...(p.details ?? {}),
  };
}
