import type { Address } from "viem";
import { type ChainDeployment, type ExchangeContracts, exchangeOf, type PlatformContracts } from "../../api/src/chain/chain-identity.ts";
import { hasCode } from "./chain.ts";
import { deployExchange, deployPlatform, localDeploymentId } from "./deploy.ts";
import type { StackSettings } from "./settings.ts";

/** What the stack knows of the chain when it picks the contracts. */
export interface ContractsContext {
  settings: StackSettings;
  rpcUrl: string;
  identity: Pick<ChainDeployment, "chainId" | "genesisHash">;
  /** A local chain, on which the stack deploys what is missing. */
  local: boolean;
  /** The deployment the database recorded for this chain (null: none). */
  recorded: Partial<ChainDeployment> | null;
  relayer: Address;
  logFile: string;
  log: (line: string) => void;
}

/**
 * The platform's contracts: the addresses given (their code checked), those the database recorded
 * while their code is on the chain, or deployed now with Ignition (local chains only).
 */
export async function platformContracts(ctx: ContractsContext): Promise<PlatformContracts & { startBlock: number; deployedNow: boolean }> {
  const { settings, rpcUrl, identity, recorded } = ctx;
  if (settings.contracts) {
    if (!(await hasCode(rpcUrl, Object.values(settings.contracts)))) {
      throw new Error(`no contract code at ART_CERTIFICATE_ADDRESS/ART_SHARES_ADDRESS/ART_MARKET_ADDRESS/AUDIT_ANCHOR_ADDRESS on chain ${identity.chainId} (${rpcUrl})`);
    }
    return { ...settings.contracts, startBlock: settings.startBlock ?? recorded?.startBlock ?? 0, deployedNow: false };
  }
  if (!ctx.local) {
    throw new Error(
      `chain id ${identity.chainId} is not a local chain: set ART_CERTIFICATE_ADDRESS, ART_SHARES_ADDRESS, ART_MARKET_ADDRESS and AUDIT_ANCHOR_ADDRESS (the stack deploys only to local chains)`,
    );
  }
  const { artCertificate, artShares, artMarket, auditAnchor } = recorded ?? {};
  if (artCertificate && artShares && artMarket && auditAnchor && (await hasCode(rpcUrl, [artCertificate, artShares, artMarket, auditAnchor]))) {
    return { artCertificate, artShares, artMarket, auditAnchor, startBlock: recorded?.startBlock ?? 0, deployedNow: false };
  }
  const base = settings.publicBaseUrl ?? `http://127.0.0.1:${settings.apiPort}`;
  ctx.log("Deploying ArtForwarder, ArtCertificate, ArtShares, ArtMarket and AuditAnchor with Hardhat Ignition...");
  const deployed = await deployPlatform({
    rpcUrl,
    relayer: ctx.relayer,
    sharesUri: `${base.replace(/\/$/, "")}/v1/fractional/metadata/{id}.json`,
    deploymentId: localDeploymentId(identity.chainId, identity.genesisHash),
    logFile: ctx.logFile,
  });
  return {
    artCertificate: deployed.artCertificate,
    artShares: deployed.artShares,
    artMarket: deployed.artMarket,
    auditAnchor: deployed.auditAnchor,
    startBlock: deployed.startBlock,
    deployedNow: true,
  };
}

/**
 * ArtExchange and its payment token, added to the platform, never instead of it (a chain deployed
 * before the exchange keeps its data): given, recorded, or deployed now (local chains only).
 */
export async function exchangeContracts(ctx: ContractsContext, platform: PlatformContracts & { deployedNow: boolean }): Promise<ExchangeContracts & { deployedNow: boolean }> {
  const { settings, rpcUrl, identity, recorded } = ctx;
  if (settings.exchange) {
    if (!(await hasCode(rpcUrl, Object.values(settings.exchange)))) {
      throw new Error(`no contract code at ART_EXCHANGE_ADDRESS/PAYMENT_TOKEN_ADDRESS on chain ${identity.chainId} (${rpcUrl})`);
    }
    return { ...settings.exchange, deployedNow: false };
  }
  if (!ctx.local) {
    throw new Error(
      `chain id ${identity.chainId} is not a local chain: set ART_EXCHANGE_ADDRESS and PAYMENT_TOKEN_ADDRESS (npm run deploy:contracts deploys them; the indexer reads ArtExchange)`,
    );
  }
  const recordedExchange = recorded && !platform.deployedNow ? exchangeOf(recorded) : null;
  if (recordedExchange && (await hasCode(rpcUrl, Object.values(recordedExchange)))) return { ...recordedExchange, deployedNow: false };
  ctx.log("Deploying MockStablecoin and ArtExchange with Hardhat Ignition...");
  const deployed = await deployExchange({
    rpcUrl,
    certificate: platform.artCertificate,
    orderSigner: ctx.relayer,
    // Its own journal: the platform's deployment on this chain may be complete or long removed.
    deploymentId: `${localDeploymentId(identity.chainId, identity.genesisHash)}-exchange`,
    logFile: ctx.logFile,
  });
  return { ...deployed, deployedNow: true };
}
