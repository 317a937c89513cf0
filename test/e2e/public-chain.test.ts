/**
 * The path to a public chain, against a second Hardhat node standing in for it: a chain id of its
 * own (not a local one, so nothing takes the dev-chain shortcuts) and accounts that are not the dev
 * accounts. `npm run deploy:contracts -- --network public --verify` runs as a child process with the
 * environment an operator sets, verifying on a stand-in Sourcify that records what it is sent; an
 * indexer and an API then start on the settings it wrote (ArtExchange included, paid in a stand-in
 * stablecoin deployed first, as USDC would be there already); an artwork certified through the API is
 * read back from the contract (owner, token URI, which resolves) and from the verify page.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { parse as parseEnv } from "dotenv";
import { type Abi, type Address, createPublicClient, createWalletClient, getAddress, type Hex, http, keccak256, toBytes } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artExchangeAbi } from "../../contracts/abi/ArtExchange.ts";
import { artMarketAbi } from "../../contracts/abi/ArtMarket.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { auditAnchorAbi } from "../../contracts/abi/AuditAnchor.ts";
import { fundLocalAccount, type HardhatNode, readChainIdentity, startHardhatNode } from "../../tools/stack/chain.ts";
import { deploymentDirOf } from "../../tools/stack/deploy.ts";
import { binPath, childEnv, freePort, type ManagedProcess, repoRoot, spawnManaged } from "../../tools/stack/processes.ts";
import { startTestApi, type TestApi } from "../support/api.ts";
import { createPlatformDatabase } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";
import { startIndexerForTest, type TestIndexer } from "../support/indexer.ts";
import { artworkForm, createSdkUser, sdk } from "../support/sdk.ts";
import { waitFor } from "../support/wait.ts";

/** Not 31337 or 1337: the deploy script, Hardhat-verify and the indexer treat it as a public chain. */
const STAND_IN_CHAIN_ID = 424_242;
const EXPLORER_URL = "https://explorer.stand-in.example";

const tempDir = () => testEnvironment().tempDir;
const deploymentId = `public-test-${randomBytes(4).toString("hex")}`;
const deployerKey = generatePrivateKey();
const relayerKey = generatePrivateKey();
/** The multisig the contracts' admin role is handed to. */
const multisig = privateKeyToAccount(generatePrivateKey()).address;

let node: HardhatNode;
let sourcify: SourcifyStandIn;
let deploy: ManagedProcess;
let deployLog: string;
let settings: Record<string, string>;
let indexer: TestIndexer;
let api: TestApi;
let dropDatabase: (() => Promise<void>) | undefined;
/** The chain's USD stablecoin: a MockStablecoin standing in for USDC. */
let paymentToken: Address;

/** What `npm run deploy:contracts` is run with: the operator's environment, nothing of the machine's verifiers. */
function operatorEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return childEnv({
    DEPLOY_RPC_URL: node.rpcUrl,
    DEPLOY_CHAIN_ID: String(STAND_IN_CHAIN_ID),
    DEPLOYER_PRIVATE_KEY: deployerKey,
    RELAYER_ADDRESS: privateKeyToAccount(relayerKey).address,
    DEPLOY_ADMIN_ADDRESS: multisig,
    PAYMENT_TOKEN_ADDRESS: paymentToken,
    EXCHANGE_TREASURY_ADDRESS: undefined,
    PLATFORM_FEE_BPS: undefined,
    PUBLIC_BASE_URL: undefined,
    EXPLORER_URL,
    SOURCIFY_API_URL: sourcify.url,
    ETHERSCAN_API_KEY: undefined,
    ETHERSCAN_API_URL: undefined,
    BLOCKSCOUT_URL: undefined,
    // Ignition asks before deploying to a chain other than 31337; an unattended run answers here.
    HARDHAT_IGNITION_CONFIRM_DEPLOYMENT: "true",
    ...overrides,
  });
}

/** `npm run deploy:contracts -- <args>`; `direct` skips npm (the same script, a second sooner). */
function deployContracts(args: string[], env: NodeJS.ProcessEnv, logFile: string, { direct = false } = {}): ManagedProcess {
  const [command, prefix] = direct ? [binPath("tsx"), ["tools/deploy/contracts.ts"]] : ["npm", ["run", "deploy:contracts", "--"]];
  return spawnManaged({ name: "deploy:contracts", command, args: [...prefix, ...args], logFile, env, detached: false });
}

beforeAll(async () => {
  const started = Date.now();
  [node, sourcify] = await Promise.all([
    freePort().then((port) => startHardhatNode({ port, logFile: path.join(tempDir(), "public-chain-node.log"), detached: false, chainId: STAND_IN_CHAIN_ID })),
    startSourcifyStandIn(),
  ]);
  // An operator funds the deployer and the relayer; the node's dev accounts play no part.
  await Promise.all([fundLocalAccount(node.rpcUrl, privateKeyToAccount(deployerKey).address), fundLocalAccount(node.rpcUrl, privateKeyToAccount(relayerKey).address)]);
  paymentToken = await deployStandInStablecoin(node.rpcUrl);

  const apiPort = await freePort();
  const output = path.join(tempDir(), `${deploymentId}.env`);
  deployLog = path.join(tempDir(), `${deploymentId}.log`);
  deploy = deployContracts(
    ["--network", "public", "--verify", "--deployment-id", deploymentId, "--output", output],
    operatorEnv({ PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}` }),
    deployLog,
  );
  const databaseCreated = createPlatformDatabase().then((database) => {
    dropDatabase = database.drop;
    return database;
  });
  // The settings are written before verification starts: the indexer and the API start meanwhile.
  await Promise.race([
    waitFor(() => existsSync(output), { timeoutMs: 90_000, intervalMs: 100, what: "the deployment's settings" }),
    deploy.exited.then(() => {
      if (!existsSync(output)) throw new Error(`deploy:contracts exited without writing its settings:\n${readFileSync(deployLog, "utf8")}`);
    }),
  ]);
  settings = parseEnv(readFileSync(output, "utf8"));
  console.log(`[public chain] deployed in ${Date.now() - started} ms`);

  const database = await databaseCreated;
  const { genesisHash } = await readChainIdentity(settings.CHAIN_RPC_URL!);
  indexer = await startIndexerForTest({
    target: {
      databaseUrl: database.databaseUrl,
      rpcUrl: settings.CHAIN_RPC_URL!,
      wsUrl: node.wsUrl,
      chainId: Number(settings.CHAIN_ID),
      genesisHash,
      artCertificate: settings.ART_CERTIFICATE_ADDRESS!,
      artShares: settings.ART_SHARES_ADDRESS!,
      artMarket: settings.ART_MARKET_ADDRESS!,
      auditAnchor: settings.AUDIT_ANCHOR_ADDRESS!,
      artExchange: settings.ART_EXCHANGE_ADDRESS!,
      startBlock: Number(settings.CONTRACTS_START_BLOCK),
    },
  });
  api = await startTestApi({
    ...settings,
    PORT: String(apiPort),
    DATABASE_URL: database.databaseUrl,
    RELAYER_PRIVATE_KEY: relayerKey,
    INDEXER_URL: indexer.url,
    INDEXER_VIEWS_SCHEMA: indexer.viewsSchema,
    STORAGE_DIR: path.join(tempDir(), `storage-${deploymentId}`),
  });
  console.log(`[public chain] indexer and API up after ${Date.now() - started} ms`);
}, 120_000);

afterAll(async () => {
  await api?.close();
  await indexer?.stop();
  await deploy?.stop("SIGTERM", 5_000);
  await node?.stop();
  await sourcify?.close();
  await dropDatabase?.().catch(() => {});
  rmSync(deploymentDirOf(deploymentId), { recursive: true, force: true });
});

describe("deploying to a public chain", () => {
  it("writes every setting the API and the indexer need, and begins the admin handover to the multisig", async () => {
    const deployer = privateKeyToAccount(deployerKey).address;
    const relayer = privateKeyToAccount(relayerKey).address;
    expect(Object.keys(settings).sort()).toEqual(
      [
        "ART_CERTIFICATE_ADDRESS", "ART_EXCHANGE_ADDRESS", "ART_MARKET_ADDRESS", "ART_SHARES_ADDRESS", "AUDIT_ANCHOR_ADDRESS", "CHAIN_ID", "CHAIN_RPC_URL",
        "CONTRACTS_START_BLOCK", "EXPLORER_URL", "PAYMENT_TOKEN_ADDRESS", "PUBLIC_BASE_URL",
      ].sort(),
    );
    expect(settings.PAYMENT_TOKEN_ADDRESS).toBe(paymentToken);
    expect(settings).toMatchObject({ CHAIN_RPC_URL: node.rpcUrl, CHAIN_ID: String(STAND_IN_CHAIN_ID), EXPLORER_URL, PUBLIC_BASE_URL: api.url });
    // The node was fresh but for the stand-in stablecoin (block 1): the first contract creation is the next block.
    expect(settings.CONTRACTS_START_BLOCK).toBe("2");
    // Printed as well, for the operator to copy.
    const printed = readFileSync(deployLog, "utf8");
    for (const [name, value] of Object.entries(settings)) expect(printed).toContain(`${name}=${value}\n`);

    const client = createPublicClient({ transport: http(settings.CHAIN_RPC_URL) });
    const contracts = [
      { address: settings.ART_CERTIFICATE_ADDRESS, abi: artCertificateAbi, role: "CERTIFIER_ROLE" },
      { address: settings.ART_SHARES_ADDRESS, abi: artSharesAbi, role: "SHARE_ISSUER_ROLE" },
      { address: settings.ART_MARKET_ADDRESS, abi: artMarketAbi, role: "SETTLER_ROLE" },
      { address: settings.AUDIT_ANCHOR_ADDRESS, abi: auditAnchorAbi, role: "ANCHORER_ROLE" },
      { address: settings.ART_EXCHANGE_ADDRESS, abi: artExchangeAbi, role: "ORDER_SIGNER_ROLE" },
    ];
    for (const contract of contracts) {
      const read = (functionName: string, args: unknown[] = []) =>
        client.readContract({ address: contract.address as Address, abi: contract.abi as Abi, functionName, args });
      expect(await read("defaultAdmin")).toBe(deployer);
      const [pendingAdmin] = (await read("pendingDefaultAdmin")) as [Address, number];
      expect(pendingAdmin).toBe(multisig);
      expect(await read("hasRole", [await read(contract.role), relayer])).toBe(true);
    }
    expect(await client.readContract({ address: settings.ART_SHARES_ADDRESS as Address, abi: artSharesAbi, functionName: "uri", args: [1n] })).toBe(
      `${api.url}/v1/fractional/metadata/{id}.json`,
    );
  });

  it("verifies the six contracts' sources on the configured Sourcify (a stand-in here: no internet)", async () => {
    const { code } = await deploy.exited;
    expect(code, readFileSync(deployLog, "utf8")).toBe(0);
    const forwarder = getAddress(readFileSync(deployLog, "utf8").match(/ArtForwarderModule#ArtForwarder - (0x[0-9a-fA-F]{40})/)![1]!);
    const deployed = [settings.ART_CERTIFICATE_ADDRESS, settings.ART_SHARES_ADDRESS, settings.ART_MARKET_ADDRESS, settings.AUDIT_ANCHOR_ADDRESS, settings.ART_EXCHANGE_ADDRESS, forwarder];
    expect(sourcify.submissions.map((s) => s.address).sort()).toEqual(deployed.sort());
    for (const submission of sourcify.submissions) {
      expect(submission.chainId).toBe(String(STAND_IN_CHAIN_ID));
      expect(submission.compilerVersion).toMatch(/^v0\.8\.34\+commit\.[0-9a-f]+$/);
      expect(submission.contract).toMatch(/^project\/contracts\/(ArtCertificate|ArtShares|ArtMarket|AuditAnchor|ArtExchange|ArtForwarder)\.sol:\w+$/);
      expect(submission.sources).toContain(submission.contract.split(":")[0]);
      expect(submission.optimizer).toEqual({ enabled: true, runs: 200 });
    }
  });

  it("certifies an artwork through the API: the contract holds it for the artist, its token URI resolves, the verify page links to the explorer", async () => {
    const artist = await createSdkUser(api.url, { role: "artist" });
    const { data: created, response } = await artist.api.POST("/v1/artworks", { body: artworkForm() });
    expect(response.status).toBe(201);
    const id = created.id;
    const art = await waitFor(
      async () => {
        const { data } = await artist.api.GET("/v1/artworks/{id}", { params: { path: { id } } });
        return data.status === "certified" ? data : null;
      },
      { timeoutMs: 30_000, what: `certification of ${id}` },
    );

    const client = createPublicClient({ transport: http(settings.CHAIN_RPC_URL) });
    const certificate = { address: settings.ART_CERTIFICATE_ADDRESS as Address, abi: artCertificateAbi } as const;
    const tokenId = await client.readContract({ ...certificate, functionName: "tokenIdOfArtwork", args: [keccak256(toBytes(id))] });
    expect(Number(tokenId)).toBe(art.token_id);
    const wallet = (await api.db.selectFrom("users").select("wallet_address").where("id", "=", artist.id).executeTakeFirstOrThrow()).wallet_address;
    expect(await client.readContract({ ...certificate, functionName: "ownerOf", args: [tokenId] })).toBe(getAddress(wallet));
    const onChain = await client.readContract({ ...certificate, functionName: "certificateOf", args: [tokenId] });
    expect(onChain.certificateHash).toBe(art.certificate_hash);
    const tokenUri = await client.readContract({ ...certificate, functionName: "tokenURI", args: [tokenId] });
    expect(tokenUri).toBe(`${settings.PUBLIC_BASE_URL}/v1/artworks/${id}/metadata.json`);
    // Raw HTTP: the token URI exactly as the contract gives it to wallets and marketplaces.
    const metadata = await fetch(tokenUri);
    expect(metadata.status).toBe(200);
    expect(await metadata.json()).toMatchObject({ name: art.title, certificate_hash: art.certificate_hash });

    const { data: from } = await sdk(api.url).GET("/v1/artworks/{id}/certificate", { params: { path: { id } } });
    expect(from).toMatchObject({ chain_id: STAND_IN_CHAIN_ID, contract_address: settings.ART_CERTIFICATE_ADDRESS!.toLowerCase(), token_id: art.token_id });
    const { tx_hash: txHash, block_number: blockNumber, owner } = from as { tx_hash: Hex; block_number: number; owner: string };
    // Sent by the relayer, not by the deployer.
    expect((await client.getTransaction({ hash: txHash })).from).toBe(privateKeyToAccount(relayerKey).address.toLowerCase());

    // Raw HTTP: the verify page is HTML for people, not an API call.
    const page = await fetch(`${settings.PUBLIC_BASE_URL}/verify/${id}`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('data-verdict="match"');
    expect(html).toContain(`chain id ${STAND_IN_CHAIN_ID}`);
    expect(html).toContain(`<img id="artwork-image" src="${settings.PUBLIC_BASE_URL}/v1/artworks/${id}/image"`);
    expect(html).toContain(`<code id="owner"><a href="${EXPLORER_URL}/address/${owner}">${owner}</a></code>`);
    expect(html).toContain(`<code id="tx"><a href="${EXPLORER_URL}/tx/${txHash}">${txHash}</a></code>`);
    expect(html).toContain(`<span id="block"><a href="${EXPLORER_URL}/block/${blockNumber}">${blockNumber}</a></span>`);
    expect(html).toContain(`<code id="contract"><a href="${EXPLORER_URL}/address/${settings.ART_CERTIFICATE_ADDRESS!.toLowerCase()}">`);
  }, 45_000);

  it("refuses, before sending anything, --verify without a verifier and a public chain without RELAYER_ADDRESS or PUBLIC_BASE_URL", async () => {
    const refusals: [Record<string, string | undefined>, string[], RegExp][] = [
      [{ SOURCIFY_API_URL: undefined, PUBLIC_BASE_URL: "https://api.example.com" }, ["--verify"], /--verify needs a verification provider/],
      [{ RELAYER_ADDRESS: undefined, PUBLIC_BASE_URL: "https://api.example.com" }, [], /Set RELAYER_ADDRESS/],
      [{}, [], /Set PUBLIC_BASE_URL/],
      [{ DEPLOY_CHAIN_ID: "1", PUBLIC_BASE_URL: "https://api.example.com" }, [], /configured for chain id 1, but .* serves chain id 424242/],
    ];
    const blockBefore = await createPublicClient({ transport: http(node.rpcUrl) }).getBlockNumber();
    await Promise.all(
      refusals.map(async ([overrides, args, message], i) => {
        const logFile = path.join(tempDir(), `${deploymentId}-refused-${i}.log`);
        const refused = deployContracts(["--network", "public", "--deployment-id", `${deploymentId}-refused`, ...args], operatorEnv(overrides), logFile, { direct: true });
        const { code } = await refused.exited;
        const log = readFileSync(logFile, "utf8");
        expect(code, log).toBe(1);
        expect(log).toMatch(message);
      }),
    );
    expect(existsSync(deploymentDirOf(`${deploymentId}-refused`))).toBe(false);
    expect(await createPublicClient({ transport: http(node.rpcUrl) }).getBlockNumber()).toBe(blockBefore);
  }, 60_000);
});

interface SourcifySubmission {
  chainId: string;
  address: string;
  contract: string;
  compilerVersion: string;
  sources: string[];
  optimizer: unknown;
}

interface SourcifyStandIn {
  url: string;
  submissions: SourcifySubmission[];
  close(): Promise<void>;
}

/**
 * Sourcify's v2 API as Hardhat-verify uses it: a lookup (404: not verified), a submission (recorded,
 * answered with a job id), the job's status (verified).
 */
async function startSourcifyStandIn(): Promise<SourcifyStandIn> {
  const submissions: SourcifySubmission[] = [];
  const json = (res: import("node:http").ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  const server: Server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const url = req.url ?? "";
    let match: RegExpMatchArray | null;
    if (req.method === "GET" && (match = url.match(/^\/server\/v2\/contract\/(\d+)\/(0x[0-9a-fA-F]{40})$/))) {
      return json(res, 404, { match: null, creationMatch: null, runtimeMatch: null, chainId: match[1], address: match[2] });
    }
    if (req.method === "POST" && (match = url.match(/^\/server\/v2\/verify\/(\d+)\/(0x[0-9a-fA-F]{40})$/))) {
      const { stdJsonInput, contractIdentifier, compilerVersion } = JSON.parse(body);
      submissions.push({
        chainId: match[1]!,
        address: match[2]!,
        contract: contractIdentifier,
        compilerVersion,
        sources: Object.keys(stdJsonInput.sources),
        optimizer: stdJsonInput.settings.optimizer,
      });
      return json(res, 202, { verificationId: `job-${submissions.length}` });
    }
    if (req.method === "GET" && (match = url.match(/^\/server\/v2\/verify\/(job-\d+)$/))) {
      return json(res, 200, { isJobCompleted: true, verificationId: match[1], jobStartTime: new Date().toISOString(), contract: { match: "exact_match" } });
    }
    json(res, 404, { customCode: "not_found", message: `${req.method} ${url}`, errorId: "stand-in" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/server`,
    submissions,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Deploys MockStablecoin from the node's first dev account (not the deployer: the token is the chain's, not the platform's). */
async function deployStandInStablecoin(rpcUrl: string): Promise<Address> {
  const artifact = JSON.parse(readFileSync(path.join(repoRoot, "artifacts/contracts/test/MockStablecoin.sol/MockStablecoin.json"), "utf8")) as { abi: Abi; bytecode: Hex };
  const wallet = createWalletClient({ transport: http(rpcUrl) });
  const [account] = await wallet.getAddresses();
  const hash = await wallet.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, account: account!, chain: null });
  const receipt = await createPublicClient({ transport: http(rpcUrl) }).waitForTransactionReceipt({ hash });
  return getAddress(receipt.contractAddress!);
}
