// Shared by the ArtExchange tests (this file holds no tests of its own): a network of the calling
// file's own with named wallets, the exchange's deployment and its orders.
import { network } from "hardhat";
import { type Address, getAddress, type Hex, keccak256, maxUint256, toBytes, zeroAddress, zeroHash } from "viem";

import { type ExchangeOrder, exchangeDomain, named, ORDER_TYPES, UNITS_PER_CENT } from "./helpers.js";

export const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
export const ORDER_SIGNER_ROLE = keccak256(toBytes("ORDER_SIGNER_ROLE"));
export const DEFAULT_ADMIN_ROLE = zeroHash;
export const ROYALTY_BPS = 500n;
export const FEE_BPS = 250;
/** $12,345.67: `price_usd` 12345.67 is 1,234,567 cents, 12,345,670,000 units of a 6-decimal token. */
export const PRICE = 1_234_567n * UNITS_PER_CENT;
export const BUYER_FUNDS = 1_000_000n * 100n * UNITS_PER_CENT;

export const OrderStatus = { Open: 0, Filled: 1, Cancelled: 2 } as const;

export type Order = ExchangeOrder;

/** A network of the calling file's own, its named wallets, and the exchange's deployment and orders on it. */
export async function exchangeNetwork() {
  const { viem, networkHelpers } = await network.create();
  const publicClient = await viem.getPublicClient();
  const testClient = await viem.getTestClient();
  const chainId = await publicClient.getChainId();
  const { admin, relayer, orderKey, alice, bob, carol, dave, treasury } = named(
    await viem.getWalletClients(),
    "admin",
    "relayer",
    "orderKey",
    "alice",
    "bob",
    "carol",
    "dave",
    "treasury",
  );
  type Wallet = typeof alice;
  const asRelayer = { account: relayer.account };

  /**
   * Certificate 1 held by alice with a 5 % royalty to bob (the artist), 2 held by alice without royalty, 3 held
   * by bob with his own royalty; alice and bob approved the exchange; carol and dave hold $1M of the stablecoin
   * and approved the exchange for all of it; orderKey holds ORDER_SIGNER_ROLE; the fee is 2.5 % to treasury.
   */
  async function deployExchange() {
    const certificate = await viem.deployContract("ArtCertificate", [admin.account.address, zeroAddress]);
    const stablecoin = await viem.deployContract("MockStablecoin", []);
    const exchange = await viem.deployContract("ArtExchange", [
      admin.account.address,
      certificate.address,
      stablecoin.address,
      treasury.account.address,
      FEE_BPS,
    ]);
    await certificate.write.grantRole([CERTIFIER_ROLE, relayer.account.address]);
    await exchange.write.grantRole([ORDER_SIGNER_ROLE, orderKey.account.address]);
    const certify = (to: Wallet, artworkId: string, royaltyReceiver: Address, royaltyBps: bigint) =>
      certificate.write.certify([to.account.address, artworkId, keccak256(toBytes(artworkId)), "ipfs://", royaltyReceiver, royaltyBps], asRelayer);
    await certify(alice, "art_1", bob.account.address, ROYALTY_BPS);
    await certify(alice, "art_2", zeroAddress, 0n);
    await certify(bob, "art_3", bob.account.address, ROYALTY_BPS);
    for (const seller of [alice, bob]) await certificate.write.setApprovalForAll([exchange.address, true], { account: seller.account });
    for (const buyer of [carol, dave]) {
      await stablecoin.write.mint([buyer.account.address, BUYER_FUNDS], { account: buyer.account });
      await stablecoin.write.approve([exchange.address, maxUint256], { account: buyer.account });
    }
    return { certificate, stablecoin, exchange };
  }

  type Deployed = Awaited<ReturnType<typeof deployExchange>>;

  /** Alice's order for certificate 1 at PRICE, for anyone, expiring in an hour. */
  async function orderOf({ stablecoin }: Deployed, overrides: Partial<Order> = {}): Promise<Order> {
    return {
      listingId: "lst_01JD0000000000000000000001",
      seller: getAddress(alice.account.address),
      buyer: zeroAddress,
      tokenId: 1n,
      currency: getAddress(stablecoin.address),
      price: PRICE,
      feeBps: FEE_BPS,
      expiry: BigInt((await networkHelpers.time.latest()) + 3600),
      ...overrides,
    };
  }

  /** `signer` signs `order` for the exchange at `verifyingContract` on `chain` (default: this one). */
  function sign(signer: Wallet, order: Order, verifyingContract: Address, chain = chainId): Promise<Hex> {
    return signer.signTypedData({
      account: signer.account,
      domain: exchangeDomain(chain, verifyingContract),
      types: ORDER_TYPES,
      primaryType: "Order",
      message: order,
    });
  }

  async function balancesOf({ stablecoin }: Deployed, ...wallets: Wallet[]) {
    return Promise.all(wallets.map((wallet) => stablecoin.read.balanceOf([wallet.account.address])));
  }

  return { viem, networkHelpers, publicClient, testClient, chainId, admin, relayer, orderKey, alice, bob, carol, dave, treasury, asRelayer, deployExchange, orderOf, sign, balancesOf };
}

export type ExchangeNetwork = Awaited<ReturnType<typeof exchangeNetwork>>;
export type Wallet = ExchangeNetwork["alice"];
export type Deployed = Awaited<ReturnType<ExchangeNetwork["deployExchange"]>>;
