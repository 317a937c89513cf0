/**
 * The relayer's contracts for the relayer and chain-error tests: its own ArtCertificate and
 * ArtShares deployed from the compiled artifacts by a fresh admin, a fresh relayer account holding
 * their roles, on the run's shared Hardhat node. The nonces and totals a file asserts are its own,
 * whatever other files relay from the shared deployment's account #0 meanwhile. Also an RPC that
 * never answers and a proxy that loses or drops sends.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import pino from "pino";
import { type Address, createTestClient, createWalletClient, type Hash, type Hex, http, keccak256, parseEther, toBytes, toHex, zeroAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { type ChainClients, createChainClients } from "../../api/src/chain/clients.ts";
import { Relayer } from "../../api/src/chain/relayer.ts";
import { testEnvironment } from "./environment.ts";

export const logger = pino({ level: process.env.RELAYER_TEST_LOG_LEVEL ?? "silent" });

export interface RelayerContracts {
  clients: ChainClients;
  relayer: Relayer;
  certificate: Address;
  shares: Address;
  certifierRole: Hex;
  hungRpc: { server: Server; sockets: Set<Socket>; url: string };
}

/** The calling file's relayer and contracts (deployed in beforeAll), and the requests and reads the tests make on them. */
export function useRelayerContracts() {
  const env = testEnvironment();
  const admin = privateKeyToAccount(generatePrivateKey());
  const collector = privateKeyToAccount(generatePrivateKey()).address;
  const runId = randomBytes(4).toString("hex");
  let artworkSeq = 0;
  const r = {} as RelayerContracts;

  beforeAll(async () => {
    const clients = createChainClients({ rpcUrl: env.rpcUrl, chainId: env.chainId, relayerPrivateKey: generatePrivateKey() });
    const { chain, publicClient, relayerAccount } = clients;
    const testClient = createTestClient({ mode: "hardhat", chain, transport: http(env.rpcUrl) });
    for (const address of [admin.address, relayerAccount.address]) await testClient.setBalance({ address, value: parseEther("1000") });

    // Sequential: one account, automine; each receipt before the next send.
    const adminWallet = createWalletClient({ account: admin, chain, transport: http(env.rpcUrl) });
    const deployed = async (hash: Hash) => {
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== "success" || !receipt.contractAddress) throw new Error(`deployment ${hash} failed`);
      return receipt.contractAddress;
    };
    const certificate = await deployed(
      await adminWallet.deployContract({ abi: artCertificateAbi, bytecode: artifactBytecode("ArtCertificate"), args: [admin.address, zeroAddress] }),
    );
    const shares = await deployed(
      await adminWallet.deployContract({
        abi: artSharesAbi,
        bytecode: artifactBytecode("ArtShares"),
        args: [admin.address, certificate, "https://api.test.local/v1/fractional/metadata/{id}.json"],
      }),
    );
    const certifierRole = await publicClient.readContract({ address: certificate, abi: artCertificateAbi, functionName: "CERTIFIER_ROLE" });
    const issuerRole = await publicClient.readContract({ address: shares, abi: artSharesAbi, functionName: "SHARE_ISSUER_ROLE" });
    for (const hash of [
      await adminWallet.writeContract({ address: certificate, abi: artCertificateAbi, functionName: "grantRole", args: [certifierRole, relayerAccount.address] }),
      await adminWallet.writeContract({ address: shares, abi: artSharesAbi, functionName: "grantRole", args: [issuerRole, relayerAccount.address] }),
    ]) {
      expect((await publicClient.waitForTransactionReceipt({ hash })).status).toBe("success");
    }

    const relayer = new Relayer({ publicClient, account: relayerAccount, chain, logger, receiptTimeoutMs: 20_000 });
    Object.assign(r, { clients, relayer, certificate, shares, certifierRole, hungRpc: await startHungRpc() });
  });

  afterAll(async () => {
    const { hungRpc } = r;
    if (!hungRpc) return;
    for (const socket of hungRpc.sockets) socket.destroy();
    await new Promise((resolve) => hungRpc.server.close(resolve));
  });

  function newArtworkId(): string {
    artworkSeq += 1;
    return `art_${runId}_${artworkSeq}`;
  }

  function certifyRequest(artworkId: string) {
    return {
      address: r.certificate,
      abi: artCertificateAbi,
      functionName: "certify",
      args: [collector, artworkId, keccak256(toHex(`certificate document of ${artworkId}`)), `https://api.test.local/v1/certificates/${artworkId}`, collector, 500n],
      label: `certify ${artworkId}`,
    } as const;
  }

  /** certifyRequest's arguments as a CertificationRequest (certifyBatch's tuple). */
  function toBatchRequest(artworkId: string) {
    const [to, , certificateHash, tokenURI, royaltyReceiver, royaltyBps] = certifyRequest(artworkId).args;
    return { to, artworkId, certificateHash, tokenURI, royaltyReceiver, royaltyBps };
  }

  function totalCertified(): Promise<bigint> {
    return r.clients.publicClient.readContract({ address: r.certificate, abi: artCertificateAbi, functionName: "totalCertified" });
  }

  function tokenIdOf(artworkId: string): Promise<bigint> {
    return r.clients.publicClient.readContract({ address: r.certificate, abi: artCertificateAbi, functionName: "tokenIdOfArtwork", args: [keccak256(toBytes(artworkId))] });
  }

  function nonceOf(address: Address, blockTag: "pending" | "latest"): Promise<number> {
    return r.clients.publicClient.getTransactionCount({ address, blockTag });
  }

  return { r, admin, collector, runId, newArtworkId, certifyRequest, toBatchRequest, totalCertified, tokenIdOf, nonceOf };
}

export function artifactBytecode(contract: "ArtCertificate" | "ArtShares"): Hex {
  const artifact = JSON.parse(readFileSync(new URL(`../../artifacts/contracts/${contract}.sol/${contract}.json`, import.meta.url), "utf8")) as { bytecode: Hex };
  return artifact.bytecode;
}

/** An "RPC node" that accepts connections and never answers: a hung provider. */
export function startHungRpc(): Promise<{ server: Server; sockets: Set<Socket>; url: string }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      resolve({ server, sockets, url: `http://127.0.0.1:${port}` });
    }),
  );
}

/**
 * A JSON-RPC proxy to `target` that can mistreat eth_sendRawTransaction: `lose-response` forwards it
 * and then drops the connection (the node has the transaction, the caller never hears), and
 * `drop-request` drops it without forwarding.
 */
export async function startRpcProxy(target: string) {
  const server = createHttpServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const isSend = (JSON.parse(body) as { method?: string }).method === "eth_sendRawTransaction";
    if (isSend && proxy.sendRawTransaction === "drop-request") return void res.destroy();
    const upstream = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body });
    const answer = await upstream.text();
    if (isSend && proxy.sendRawTransaction === "lose-response") return void res.destroy();
    res.writeHead(upstream.status, { "content-type": "application/json" }).end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const proxy = {
    url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    sendRawTransaction: "forward" as "forward" | "lose-response" | "drop-request",
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
