/**
 * `npm run deploy:contracts -- --network <name> [--verify] [--deployment-id <id>] [--output <file>]`
 *
 * Deploys the platform's contracts with Hardhat Ignition to a network of hardhat.config.ts (`public`:
 * DEPLOY_RPC_URL, DEPLOYER_PRIVATE_KEY, DEPLOY_CHAIN_ID), then prints and writes the settings the API
 * and the indexer need. docs/operators/deploying.md is the operator's guide. From the environment:
 *
 *   RELAYER_ADDRESS        the API's relayer (address of its RELAYER_PRIVATE_KEY): granted CERTIFIER_ROLE,
 *                          SHARE_ISSUER_ROLE, SETTLER_ROLE and ANCHORER_ROLE (default on a local chain: the deployer)
 *   DEPLOY_ADMIN_ADDRESS   the contracts' admin to be (a multisig): the deployment begins the two-step
 *                          handover of DEFAULT_ADMIN_ROLE to it (default: the deployer stays admin)
 *   PUBLIC_BASE_URL        the API's public URL: the ERC-1155 metadata URI of ArtShares is built on it
 *                          (default on a local chain: http://127.0.0.1:3000)
 *   PAYMENT_TOKEN_ADDRESS  the USD stablecoin (6 decimals, e.g. USDC) ArtExchange is paid in; unset: no
 *                          exchange is deployed (the API then answers 503 to on-chain purchases)
 *   EXCHANGE_TREASURY_ADDRESS  paid ArtExchange's fee (default: DEPLOY_ADMIN_ADDRESS, else the deployer)
 *   PLATFORM_FEE_BPS       ArtExchange's fee in basis points, the API's setting of the same name (default 250)
 *   EXPLORER_URL           the chain's block explorer, passed on to the API's settings
 *   ETHERSCAN_API_KEY, BLOCKSCOUT_URL, SOURCIFY_API_URL, ...   with --verify (tools/deploy/verification.ts)
 *
 * Ignition keeps the deployment's journal in ignition/deployments/<id> (default id `chain-<chain id>`):
 * running the command again resumes an interrupted deployment and changes nothing in a complete one.
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import type { ConfigurationVariable, SensitiveString } from "hardhat/types/config";
import { type Address, createWalletClient, getAddress, type Hex, http, isAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import hardhatConfig from "../../hardhat.config.ts";
import { chainClient, isLocalChainId } from "../stack/chain.ts";
import {
  deploymentDirOf,
  type ExchangeDeployment,
  ignitionDeployArgs,
  PLATFORM_MODULE,
  type PlatformDeployment,
  readAddresses,
  readDeployment,
  withParametersFile,
} from "../stack/deploy.ts";
import { binPath, childEnv, repoRoot } from "../stack/processes.ts";
import { enabledVerifiers } from "./verification.ts";

const HANDOVER_MODULE = "ignition/modules/ArtPlatformAdminHandoverModule.ts";
const EXCHANGE_MODULE = "ignition/modules/ArtExchangeModule.ts";
const EXCHANGE_HANDOVER_MODULE = "ignition/modules/ArtExchangeAdminHandoverModule.ts";
const LOCAL_PUBLIC_BASE_URL = "http://127.0.0.1:3000";

class DeployError extends Error {
  override name = "DeployError";
}

interface Target {
  network: string;
  rpcUrl: string;
  chainId: number;
  deployer: Address;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      network: { type: "string" },
      verify: { type: "boolean", default: false },
      "deployment-id": { type: "string" },
      output: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help || !values.network) {
    console.log("Usage: npm run deploy:contracts -- --network <name> [--verify] [--deployment-id <id>] [--output <file>]\nSee docs/operators/deploying.md.");
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  const env = process.env;
  const verifiers = enabledVerifiers(env);
  if (values.verify && verifiers.length === 0) {
    throw new DeployError("--verify needs a verification provider: set ETHERSCAN_API_KEY, BLOCKSCOUT_URL or SOURCIFY_API_URL");
  }
  const target = await resolveTarget(values.network, env);
  const local = isLocalChainId(target.chainId);
  const relayer = optionalAddress(env, "RELAYER_ADDRESS") ?? (local ? target.deployer : missing("RELAYER_ADDRESS", "the address of the API's RELAYER_PRIVATE_KEY"));
  const admin = optionalAddress(env, "DEPLOY_ADMIN_ADDRESS");
  const publicBaseUrl = (optionalUrl(env, "PUBLIC_BASE_URL") ?? (local ? LOCAL_PUBLIC_BASE_URL : missing("PUBLIC_BASE_URL", "the API's public URL, e.g. https://api.example.com"))).replace(/\/+$/, "");
  const explorerUrl = optionalUrl(env, "EXPLORER_URL")?.replace(/\/+$/, "");
  const handover = admin !== undefined && admin !== target.deployer;
  const paymentToken = optionalAddress(env, "PAYMENT_TOKEN_ADDRESS");
  const treasury = optionalAddress(env, "EXCHANGE_TREASURY_ADDRESS") ?? admin ?? target.deployer;
  const feeBps = Number(env.PLATFORM_FEE_BPS?.trim() || 250);
  if (!Number.isInteger(feeBps) || feeBps < 0 || feeBps > 1000) throw new DeployError(`PLATFORM_FEE_BPS must be an integer from 0 to 1000 (ArtExchange's cap), got ${env.PLATFORM_FEE_BPS}`);
  const deploymentId = values["deployment-id"] ?? `chain-${target.chainId}`;

  const client = chainClient(target.rpcUrl);
  if ((await client.getBalance({ address: target.deployer })) === 0n) {
    throw new DeployError(`The deployer ${target.deployer} holds no ether on chain ${target.chainId}: fund it first`);
  }
  console.log(
    [
      `Deploying the platform to network ${target.network} (chain id ${target.chainId}) as deployment ${deploymentId}:`,
      `  deployer         ${target.deployer} (sends the transactions; the contracts' admin${handover ? " until the handover" : ""})`,
      `  relayer          ${relayer} (CERTIFIER_ROLE, SHARE_ISSUER_ROLE, SETTLER_ROLE, ANCHORER_ROLE)`,
      `  admin            ${handover ? `${admin} (handover begun now, accepted after 3 days)` : `${target.deployer} (the deployer)`}`,
      `  shares URI       ${publicBaseUrl}/v1/fractional/metadata/{id}.json`,
      paymentToken
        ? `  exchange         ArtExchange paid in ${paymentToken}, fee ${feeBps} bps to ${treasury}; order signer ${relayer}`
        : "  exchange         none: PAYMENT_TOKEN_ADDRESS is not set (set it to the chain's USD stablecoin, e.g. USDC, and run again to add ArtExchange)",
      "",
    ].join("\n"),
  );

  const parameters = {
    ArtPlatformModule: { relayer },
    ArtSharesModule: { sharesUri: `${publicBaseUrl}/v1/fractional/metadata/{id}.json` },
    ...(handover ? { ArtPlatformAdminHandoverModule: { newAdmin: admin } } : {}),
  };
  const modulePath = handover ? HANDOVER_MODULE : PLATFORM_MODULE;
  await ignitionDeploy(modulePath, parameters, target.network, deploymentId);

  const deploymentDir = deploymentDirOf(deploymentId);
  const deployment = readDeployment(deploymentDir, deploymentId);
  // The exchange joins the same Ignition deployment, so `ignition verify <id>` covers it too.
  let exchange: ExchangeDeployment | undefined;
  if (paymentToken) {
    const exchangeParameters = {
      ArtExchangeModule: { certificate: deployment.artCertificate, paymentToken, orderSigner: relayer, treasury, feeBps },
      ...(handover ? { ArtExchangeAdminHandoverModule: { newAdmin: admin } } : {}),
    };
    await ignitionDeploy(handover ? EXCHANGE_HANDOVER_MODULE : EXCHANGE_MODULE, exchangeParameters, target.network, deploymentId);
    exchange = { ...readAddresses(deploymentDir, { artExchange: "ArtExchangeModule#ArtExchange" }), paymentToken };
  }
  const [currentAdmin, [pendingAdmin, acceptableAt]] = await Promise.all([
    client.readContract({ address: deployment.artCertificate, abi: artCertificateAbi, functionName: "defaultAdmin" }),
    client.readContract({ address: deployment.artCertificate, abi: artCertificateAbi, functionName: "pendingDefaultAdmin" }),
  ]);
  const settings = platformSettings({
    rpcUrl: target.rpcUrl,
    chainId: target.chainId,
    deployment,
    exchange,
    publicBaseUrl,
    explorerUrl,
  });
  const output = path.resolve(values.output ?? path.join(deploymentDir, "platform.env"));
  mkdirSync(path.dirname(output), { recursive: true });
  // The RPC URL may carry a provider's key.
  writeFileSync(output, `# The platform on chain ${target.chainId}, Ignition deployment ${deploymentId}; ArtForwarder ${deployment.artForwarder}\n${settings}`, { mode: 0o600 });
  chmodSync(output, 0o600);
  console.log(
    [
      "",
      `Deployed. ArtCertificate's admin is ${currentAdmin}${pendingAdmin !== "0x0000000000000000000000000000000000000000" ? `; ${pendingAdmin} can accept the role from ${new Date(acceptableAt * 1000).toISOString()} (acceptDefaultAdminTransfer on ArtCertificate, ArtShares, ArtMarket, AuditAnchor${exchange ? " and ArtExchange" : ""})` : ""}.`,
      `The API and the indexer need these settings (written to ${path.relative(process.cwd(), output) || output}):`,
      "",
      settings,
      ...(exchange ? [] : ["No ArtExchange was deployed (PAYMENT_TOKEN_ADDRESS unset): the API answers 503 to on-chain purchases until it is."]),
    ].join("\n"),
  );

  if (values.verify) {
    console.log(`Verifying the sources on ${verifiers.join(", ")}...`);
    const code = await run(["ignition", "verify", deploymentId, "--network", target.network]);
    if (code !== 0) {
      throw new DeployError(
        `Verification failed (exit code ${code}); the deployment stands. Retry with: npx hardhat ignition verify ${deploymentId} --network ${target.network}`,
      );
    }
  }
}

/** `hardhat ignition deploy <modulePath>` on `network` into `deploymentId`, with `parameters`. */
async function ignitionDeploy(modulePath: string, parameters: Record<string, Record<string, unknown>>, network: string, deploymentId: string): Promise<void> {
  await withParametersFile(parameters, async (parametersFile) => {
    const code = await run(ignitionDeployArgs({ modulePath, network, parametersFile, deploymentId }));
    if (code !== 0) throw new DeployError(`Ignition's deploy of ${path.basename(modulePath, ".ts")} failed (exit code ${code}); run the same command again to resume it`);
  });
}

/** The network's RPC URL and chain id, and the account Ignition deploys from (the first of the network's accounts). */
async function resolveTarget(network: string, env: NodeJS.ProcessEnv): Promise<Target> {
  const config = hardhatConfig.networks?.[network];
  if (!config || config.type !== "http") {
    const names = Object.entries(hardhatConfig.networks ?? {}).filter(([, n]) => n.type === "http").map(([name]) => name);
    throw new DeployError(`No http network "${network}" in hardhat.config.ts (there are: ${names.join(", ")})`);
  }
  const rpcUrl = resolveVariable(config.url, env, `the url of network ${network}`);
  const chainId = await chainClient(rpcUrl).getChainId();
  if (config.chainId !== undefined && config.chainId !== chainId) {
    throw new DeployError(`Network ${network} is configured for chain id ${config.chainId}, but ${new URL(rpcUrl).host} serves chain id ${chainId}`);
  }
  let deployer: Address | undefined;
  if (Array.isArray(config.accounts)) {
    const key = resolveVariable(config.accounts[0]!, env, `the deployer's private key of network ${network}`);
    deployer = privateKeyToAccount(key as Hex).address;
  } else if (config.accounts === undefined || config.accounts === "remote") {
    [deployer] = await createWalletClient({ transport: http(rpcUrl) }).getAddresses();
  }
  if (!deployer) throw new DeployError(`Network ${network} has no account to deploy from`);
  return { network, rpcUrl, chainId, deployer: getAddress(deployer) };
}

/** A configuration variable, as Hardhat resolves it first: from the environment (else its default). */
function resolveVariable(value: SensitiveString, env: NodeJS.ProcessEnv, what: string): string {
  if (typeof value === "string") return value;
  const variable = value as ConfigurationVariable;
  const resolved = env[variable.name]?.trim() || variable.default;
  if (!resolved) throw new DeployError(`${variable.name} is not set (${what})`);
  return resolved;
}

function optionalAddress(env: NodeJS.ProcessEnv, name: string): Address | undefined {
  const value = env[name]?.trim();
  if (!value) return undefined;
  if (!isAddress(value, { strict: false })) throw new DeployError(`${name} is not an address: ${value}`);
  return getAddress(value);
}

function optionalUrl(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  if (!value) return undefined;
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) throw new DeployError(`${name} is not an http(s) URL: ${value}`);
  return value;
}

function missing(name: string, what: string): never {
  throw new DeployError(`Set ${name} (${what}): the chain is not a local one`);
}

/** The API's and the indexer's settings for a deployment, as lines of a .env file. */
function platformSettings(options: {
  rpcUrl: string;
  chainId: number;
  deployment: PlatformDeployment;
  exchange: ExchangeDeployment | undefined;
  publicBaseUrl: string;
  explorerUrl: string | undefined;
}): string {
  const { deployment } = options;
  const settings: [string, string | number | undefined][] = [
    ["CHAIN_RPC_URL", options.rpcUrl],
    ["CHAIN_ID", options.chainId],
    ["ART_CERTIFICATE_ADDRESS", deployment.artCertificate],
    ["ART_SHARES_ADDRESS", deployment.artShares],
    ["ART_MARKET_ADDRESS", deployment.artMarket],
    ["AUDIT_ANCHOR_ADDRESS", deployment.auditAnchor],
    ["ART_EXCHANGE_ADDRESS", options.exchange?.artExchange],
    ["PAYMENT_TOKEN_ADDRESS", options.exchange?.paymentToken],
    ["CONTRACTS_START_BLOCK", deployment.startBlock],
    ["PUBLIC_BASE_URL", options.publicBaseUrl],
    ["EXPLORER_URL", options.explorerUrl],
  ];
  return settings.filter(([, value]) => value !== undefined).map(([name, value]) => `${name}=${value}\n`).join("");
}

/** `hardhat <args>` in the repository, on the terminal (Ignition's progress, its confirmation prompt). */
function run(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(binPath("hardhat"), args, { cwd: repoRoot, env: childEnv(), stdio: "inherit" });
    child.once("error", reject);
    child.once("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

main().catch((error: Error) => {
  console.error(`deploy:contracts: ${error instanceof DeployError ? error.message : (error.stack ?? error.message)}`);
  process.exitCode = 1;
});
