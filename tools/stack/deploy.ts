import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Address, createWalletClient, getAddress, type Hex, http } from "viem";
import { binPath, childEnv, repoRoot, spawnManaged } from "./processes.ts";

export interface PlatformDeployment {
  artCertificate: Address;
  artShares: Address;
  artMarket: Address;
  auditAnchor: Address;
  /** The ERC-2771 forwarder ArtCertificate trusts (also its `trustedForwarder()`). */
  artForwarder: Address;
  /** The block of the first contract creation: where the indexer starts. */
  startBlock: number;
  deploymentId: string;
}

export interface DeployOptions {
  rpcUrl: string;
  /** The account granted the relayer's roles (certifier, share issuer, settler, anchorer). */
  relayer: Address;
  /** The ERC-1155 metadata URI, with `{id}`. */
  sharesUri: string;
  /** Ignition's journal name: one per chain instance, see localDeploymentId. */
  deploymentId: string;
  logFile: string;
  /**
   * Remove ignition/deployments/<id> after a successful deploy (default true). The journal only
   * matters while a deployment is incomplete; the stack records the result in `chain_deployment`,
   * and a journal of a local node that no longer runs would only clutter the repository.
   */
  removeJournal?: boolean;
  timeoutMs?: number;
}

/** The Ignition deployment id of a local chain instance: a reset node never reuses a journal. */
export function localDeploymentId(chainId: number, genesisHash: Hex): string {
  return `local-${chainId}-${genesisHash.slice(2, 14)}`;
}

/** The Ignition module of the whole platform (the five contracts and the relayer's roles). */
export const PLATFORM_MODULE = "ignition/modules/ArtPlatformModule.ts";

/** The arguments of `hardhat ignition deploy` for `modulePath` on `network`. */
export function ignitionDeployArgs(options: { modulePath: string; network: string; parametersFile: string; deploymentId: string }): string[] {
  return [
    "ignition", "deploy", options.modulePath,
    "--network", options.network,
    "--parameters", options.parametersFile,
    "--deployment-id", options.deploymentId,
  ];
}

/** Runs `use` with `parameters` in a temporary Ignition parameters file, removed afterwards. */
export async function withParametersFile<T>(parameters: Record<string, Record<string, unknown>>, use: (file: string) => Promise<T>): Promise<T> {
  const file = path.join(os.tmpdir(), `art-platform-ignition-${randomBytes(6).toString("hex")}.json`);
  writeFileSync(file, JSON.stringify(parameters));
  try {
    return await use(file);
  } finally {
    rmSync(file, { force: true });
  }
}

/** Where Ignition keeps the journal and the addresses of `deploymentId`. */
export function deploymentDirOf(deploymentId: string): string {
  return path.join(repoRoot, "ignition", "deployments", deploymentId);
}

/**
 * Deploys ArtPlatformModule with Hardhat Ignition to the node at `rpcUrl`, from its first unlocked
 * account (also the contracts' admin, which the module's role grants require).
 */
export async function deployPlatform(options: DeployOptions): Promise<PlatformDeployment> {
  const { rpcUrl, relayer, sharesUri } = options;
  const admin = await localDeployer(rpcUrl);
  const parameters = {
    ArtPlatformModule: { relayer: getAddress(relayer) },
    ArtCertificateModule: { admin },
    ArtSharesModule: { admin, sharesUri },
    ArtMarketModule: { admin },
    AuditAnchorModule: { admin },
  };
  return runLocalIgnitionDeploy({ ...options, modulePath: PLATFORM_MODULE, parameters }, readDeployment);
}

export interface ExchangeDeployment {
  artExchange: Address;
  /** The MockStablecoin ArtExchange is paid in (its `paymentToken()`). */
  paymentToken: Address;
}

export interface ExchangeDeployOptions extends Pick<DeployOptions, "rpcUrl" | "deploymentId" | "logFile" | "removeJournal" | "timeoutMs"> {
  /** The deployed ArtCertificate whose tokens the exchange sells. */
  certificate: Address;
  /** The account granted ORDER_SIGNER_ROLE: the relayer (the platform's order key). */
  orderSigner: Address;
}

/** The Ignition module of a local chain's exchange: MockStablecoin and ArtExchange paid in it. */
export const LOCAL_EXCHANGE_MODULE = "ignition/modules/LocalExchangeModule.ts";

/**
 * LOCAL CHAINS ONLY: deploys LocalExchangeModule (MockStablecoin and ArtExchange over `certificate`)
 * with Hardhat Ignition to the node at `rpcUrl`, from its first unlocked account (the exchange's admin
 * and treasury). Adds to a platform already deployed, whose contracts and data stay as they are.
 */
export async function deployExchange(options: ExchangeDeployOptions): Promise<ExchangeDeployment> {
  const admin = await localDeployer(options.rpcUrl);
  const parameters = {
    LocalExchangeModule: { certificate: getAddress(options.certificate), orderSigner: getAddress(options.orderSigner), admin },
  };
  return runLocalIgnitionDeploy({ ...options, modulePath: LOCAL_EXCHANGE_MODULE, parameters }, (deploymentDir) => {
    const { artExchange, paymentToken } = readAddresses(deploymentDir, {
      artExchange: "LocalExchangeModule#ArtExchange",
      paymentToken: "MockStablecoinModule#MockStablecoin",
    });
    return { artExchange, paymentToken };
  });
}

/** The first unlocked account of the node at `rpcUrl`: who a local deployment is sent from. */
async function localDeployer(rpcUrl: string): Promise<Address> {
  const [deployer] = await createWalletClient({ transport: http(rpcUrl) }).getAddresses();
  if (!deployer) throw new Error(`The node at ${rpcUrl} has no unlocked account to deploy from`);
  return getAddress(deployer);
}

/**
 * `hardhat ignition deploy <modulePath>` on the local node at `rpcUrl`; `read` takes the result from
 * the journal's directory, which is then removed unless `removeJournal` is false.
 */
async function runLocalIgnitionDeploy<T>(
  options: Pick<DeployOptions, "rpcUrl" | "deploymentId" | "logFile" | "removeJournal" | "timeoutMs"> & {
    modulePath: string;
    parameters: Record<string, Record<string, unknown>>;
  },
  read: (deploymentDir: string, deploymentId: string) => T,
): Promise<T> {
  const { rpcUrl, deploymentId, logFile, modulePath } = options;
  const moduleName = path.basename(modulePath, ".ts");
  await withParametersFile(options.parameters, async (parametersFile) => {
    const deploy = spawnManaged({
      name: "ignition deploy",
      command: binPath("hardhat"),
      args: ignitionDeployArgs({ modulePath, network: "localhost", parametersFile, deploymentId }),
      logFile,
      env: childEnv({ CHAIN_RPC_URL: rpcUrl }),
      detached: false,
    });
    const timeoutMs = options.timeoutMs ?? 180_000;
    const timer = setTimeout(() => void deploy.stop("SIGTERM", 5_000), timeoutMs);
    const { code, signal } = await deploy.exited.finally(() => clearTimeout(timer));
    if (code !== 0) {
      throw new Error(`Ignition deploy of ${moduleName} failed (${signal ?? `exit code ${code}`}); see ${logFile}`);
    }
  });

  const deploymentDir = deploymentDirOf(deploymentId);
  const result = read(deploymentDir, deploymentId);
  if (options.removeJournal ?? true) rmSync(deploymentDir, { recursive: true, force: true });
  return result;
}

/** The addresses of `futures` (name -> Ignition future id) in a completed deployment's deployed_addresses.json. */
export function readAddresses<K extends string>(deploymentDir: string, futures: Record<K, string>): Record<K, Address> {
  const addressesFile = path.join(deploymentDir, "deployed_addresses.json");
  if (!existsSync(addressesFile)) throw new Error(`Ignition wrote no ${addressesFile}`);
  const addresses = JSON.parse(readFileSync(addressesFile, "utf8")) as Record<string, string>;
  const missing = Object.values<string>(futures).filter((future) => !addresses[future]);
  if (missing.length > 0) throw new Error(`${addressesFile} lacks the addresses of ${missing.join(", ")}`);
  return Object.fromEntries(
    Object.entries<string>(futures).map(([name, future]) => [name, getAddress(addresses[future]!)]),
  ) as Record<K, Address>;
}

/** The addresses and the first contract creation's block of a completed Ignition deployment of the platform. */
export function readDeployment(deploymentDir: string, deploymentId: string): PlatformDeployment {
  const futures = {
    artForwarder: "ArtForwarderModule#ArtForwarder",
    artCertificate: "ArtCertificateModule#ArtCertificate",
    artShares: "ArtSharesModule#ArtShares",
    artMarket: "ArtMarketModule#ArtMarket",
    auditAnchor: "AuditAnchorModule#AuditAnchor",
  } as const;
  const deployed = readAddresses(deploymentDir, futures);

  // The journal records each confirmed transaction with its receipt: the contract creations' blocks.
  const creations = new Set<string>(Object.values(futures));
  let startBlock = Number.POSITIVE_INFINITY;
  for (const line of readFileSync(path.join(deploymentDir, "journal.jsonl"), "utf8").split("\n")) {
    if (!line.includes("TRANSACTION_CONFIRM")) continue;
    const entry = JSON.parse(line) as { type: string; futureId: string; receipt?: { blockNumber: number } };
    if (entry.type === "TRANSACTION_CONFIRM" && creations.has(entry.futureId) && entry.receipt) {
      startBlock = Math.min(startBlock, entry.receipt.blockNumber);
    }
  }
  return {
    ...deployed,
    startBlock: Number.isFinite(startBlock) ? startBlock : 0,
    deploymentId,
  };
}
