import type { Address } from "viem";

/**
 * ArtExchange's order, as the contract hashes it (docs/wallets.md#buying-on-chain-artexchange): its
 * EIP-712 type and domain, shared by the API that signs orders and the contract tests.
 */

/** Units of a 6-decimal USD stablecoin per cent: `price_usd` converts exactly, cents × 10⁴. */
export const UNITS_PER_CENT = 10_000n;

/** ArtExchange's EIP-712 `Order` type. */
export const ORDER_TYPES = {
  Order: [
    { name: "listingId", type: "string" },
    { name: "seller", type: "address" },
    { name: "buyer", type: "address" },
    { name: "tokenId", type: "uint256" },
    { name: "currency", type: "address" },
    { name: "price", type: "uint256" },
    { name: "feeBps", type: "uint16" },
    { name: "expiry", type: "uint64" },
  ],
} as const;

/** ArtExchange's Order, as `fill`, `cancel` and `hashOrder` take it. */
export interface ExchangeOrder {
  listingId: string;
  seller: Address;
  buyer: Address;
  tokenId: bigint;
  currency: Address;
  price: bigint;
  feeBps: number;
  expiry: bigint;
}

/** ArtExchange's EIP-712 domain on chain `chainId` at `exchange`. */
export function exchangeDomain(chainId: number, exchange: Address) {
  return { name: "ArtExchange", version: "1", chainId, verifyingContract: exchange } as const;
}
