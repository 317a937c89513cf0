/**
 * The start-up check of the API and the worker (assertChainDeployment) covers all four contracts of a
 * deployment and its exchange: a database recorded for other ArtMarket, AuditAnchor or ArtExchange
 * addresses is refused, and one recorded before they existed gains them.
 */
import { createPublicClient, getAddress, http } from "viem";
import { privateKeyToAccount, generatePrivateKey } from "viem/accounts";
import { describe, expect, it } from "vitest";
import {
  assertChainDeployment,
  ChainIdentityError,
  readChainDeployment,
} from "../../api/src/chain/chain-identity.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { createPlatformDatabase } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";

const env = testEnvironment();
const publicClient = createPublicClient({ transport: http(env.rpcUrl) });
const configured = () => ({
  chainId: env.chainId,
  artCertificate: env.artCertificateAddress,
  artShares: env.artSharesAddress,
  artMarket: env.artMarketAddress,
  auditAnchor: env.auditAnchorAddress,
  artExchange: env.artExchangeAddress,
  paymentToken: env.paymentTokenAddress,
  startBlock: env.startBlock,
});
const otherAddress = () => getAddress(privateKeyToAccount(generatePrivateKey()).address);

describe("chain identity", () => {
  it("refuses an ArtMarket or AuditAnchor other than the database's", async () => {
    const db = createDb(env.databaseUrl, 1);
    try {
      await expect(assertChainDeployment(db, publicClient, configured())).resolves.toBeUndefined();
      const market = otherAddress();
      await expect(assertChainDeployment(db, publicClient, { ...configured(), artMarket: market })).rejects.toThrow(
        new ChainIdentityError(
          `refusing to start: the database belongs to ArtMarket ${env.artMarketAddress}, ART_MARKET_ADDRESS is ${market}. ` +
            "Point DATABASE_URL at this chain's database, or CHAIN_RPC_URL/the contract addresses at the database's chain",
        ),
      );
      await expect(assertChainDeployment(db, publicClient, { ...configured(), auditAnchor: otherAddress() })).rejects.toThrow(
        /the database belongs to AuditAnchor 0x[0-9a-fA-F]{40}, AUDIT_ANCHOR_ADDRESS is/,
      );
    } finally {
      await db.destroy();
    }
  });

  it("records a new database's deployment, and completes one recorded before the market and the anchor", async () => {
    const database = await createPlatformDatabase();
    const db = createDb(database.databaseUrl, 1);
    try {
      await assertChainDeployment(db, publicClient, configured());
      expect(await readChainDeployment(db)).toMatchObject({ artMarket: env.artMarketAddress, auditAnchor: env.auditAnchorAddress });

      // As a database recorded by the version before ArtMarket and AuditAnchor left it.
      await db.updateTable("chain_deployment").set({ art_market_address: null, audit_anchor_address: null, start_block: 7 }).execute();
      await assertChainDeployment(db, publicClient, configured());
      expect(await readChainDeployment(db)).toEqual({
        chainId: env.chainId,
        genesisHash: env.genesisHash.toLowerCase(),
        artCertificate: env.artCertificateAddress,
        artShares: env.artSharesAddress,
        artMarket: env.artMarketAddress,
        auditAnchor: env.auditAnchorAddress,
        artExchange: env.artExchangeAddress,
        paymentToken: env.paymentTokenAddress,
        startBlock: 7,
      });
      await expect(assertChainDeployment(db, publicClient, { ...configured(), artMarket: otherAddress() })).rejects.toThrow(ChainIdentityError);
    } finally {
      await db.destroy();
      await database.drop();
    }
  });

  it("records the exchange of a database recorded before it, keeps it when none is configured, and refuses another", async () => {
    const database = await createPlatformDatabase();
    const db = createDb(database.databaseUrl, 1);
    try {
      // As a database recorded by the version before ArtExchange: the platform only.
      await assertChainDeployment(db, publicClient, { ...configured(), artExchange: null, paymentToken: null });
      expect(await readChainDeployment(db)).toMatchObject({ artExchange: undefined, paymentToken: undefined, artMarket: env.artMarketAddress });
      const columns = await db.selectFrom("chain_deployment").select(["art_exchange_address", "payment_token_address"]).executeTakeFirstOrThrow();
      expect(columns).toEqual({ art_exchange_address: null, payment_token_address: null });

      await assertChainDeployment(db, publicClient, configured());
      expect(await readChainDeployment(db)).toMatchObject({ artExchange: env.artExchangeAddress, paymentToken: env.paymentTokenAddress });

      // An API started without the exchange's settings neither refuses nor forgets it.
      await assertChainDeployment(db, publicClient, { ...configured(), artExchange: null, paymentToken: null });
      expect(await readChainDeployment(db)).toMatchObject({ artExchange: env.artExchangeAddress, paymentToken: env.paymentTokenAddress });

      const exchange = otherAddress();
      await expect(assertChainDeployment(db, publicClient, { ...configured(), artExchange: exchange })).rejects.toThrow(
        `refusing to start: the database belongs to ArtExchange ${env.artExchangeAddress}, ART_EXCHANGE_ADDRESS is ${exchange}.`,
      );
      await expect(assertChainDeployment(db, publicClient, { ...configured(), paymentToken: otherAddress() })).rejects.toThrow(
        /the database belongs to the payment token 0x[0-9a-fA-F]{40}, PAYMENT_TOKEN_ADDRESS is/,
      );
    } finally {
      await db.destroy();
      await database.drop();
    }
  });
});
