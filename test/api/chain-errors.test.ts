/**
 * classifyChainError on errors of a real node (the run's shared Hardhat node, the relayer's own
 * contracts of test/support/relayer.ts) and on hand-built ones a local automining node does not
 * produce: reverts decoded with the ABI, refused sends, transport failures, requests that can never
 * work.
 */
import {
  type Abi,
  type Address,
  createTestClient,
  createWalletClient,
  encodeFunctionData,
  http,
  keccak256,
  parseEther,
  toHex,
  zeroAddress,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { type ChainClients, createChainClients } from "../../api/src/chain/clients.ts";
import { classifyChainError, PermanentChainError } from "../../api/src/chain/errors.ts";
import { Relayer } from "../../api/src/chain/relayer.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { testEnvironment } from "../support/environment.ts";
import { type RelayerContracts, useRelayerContracts } from "../support/relayer.ts";

const env = testEnvironment();

const { r, runId, newArtworkId, certifyRequest, totalCertified } = useRelayerContracts();
let clients: ChainClients;
let relayer: Relayer;
let certificate: Address;
let hungRpc: RelayerContracts["hungRpc"];
beforeAll(() => void ({ clients, relayer, certificate, hungRpc } = r));

describe("classifyChainError on errors of a real node", () => {
  it("decodes reverts of call and estimateGas with the ABI, and names undecodable ones by selector", async () => {
    const { publicClient } = clients;
    const id = newArtworkId();
    await relayer.write(certifyRequest(id));
    const call = { account: relayer.address, to: certificate, data: encodeFunctionData(certifyRequest(id)) };

    for (const err of [await publicClient.call(call).catch((e: unknown) => e), await publicClient.estimateGas(call).catch((e: unknown) => e)]) {
      expect(classifyChainError(err, artCertificateAbi)).toMatchObject({ kind: "permanent", code: "reverted", errorName: "ArtCertificateAlreadyCertified" });
      const undecoded = classifyChainError(err);
      expect(undecoded).toMatchObject({ kind: "permanent", code: "reverted", errorName: undefined });
      expect((undecoded as PermanentChainError).signature).toMatch(/^0x[0-9a-f]{8}$/);
    }
  });

  it("classifies refused sends: stale nonce, fee below the base fee, and an unfunded sender", async () => {
    const { publicClient, chain } = clients;
    const scratch = privateKeyToAccount(generatePrivateKey());
    await createTestClient({ mode: "hardhat", chain, transport: http(env.rpcUrl) }).setBalance({ address: scratch.address, value: parseEther("1") });
    const wallet = createWalletClient({ account: scratch, chain, transport: http(env.rpcUrl, { retryCount: 0 }) });
    const hash = await wallet.sendTransaction({ to: scratch.address, value: 0n });
    await publicClient.waitForTransactionReceipt({ hash });

    const stale = await wallet.sendTransaction({ to: scratch.address, value: 1n, nonce: 0 }).catch((e: unknown) => e);
    expect(classifyChainError(stale)).toMatchObject({ kind: "transient", code: "nonce_conflict" });

    const cheap = await wallet.sendTransaction({ to: scratch.address, value: 0n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n }).catch((e: unknown) => e);
    expect(classifyChainError(cheap)).toMatchObject({ kind: "transient", code: "underpriced" });

    const pauper = createWalletClient({ account: privateKeyToAccount(generatePrivateKey()), chain, transport: http(env.rpcUrl, { retryCount: 0 }) });
    const broke = await pauper.sendTransaction({ to: scratch.address, value: 1n }).catch((e: unknown) => e);
    expect(classifyChainError(broke)).toMatchObject({ kind: "transient", code: "insufficient_funds" });
  });

  it("classifies transport failures and a receipt that never comes as transient", async () => {
    const down = createChainClients({ rpcUrl: `http://127.0.0.1:${await freePort()}`, chainId: env.chainId, relayerPrivateKey: generatePrivateKey(), retryCount: 0 });
    expect(classifyChainError(await down.publicClient.getBlockNumber().catch((e: unknown) => e))).toMatchObject({ kind: "transient", code: "rpc_unavailable" });

    const hung = createChainClients({ rpcUrl: hungRpc.url, chainId: env.chainId, relayerPrivateKey: generatePrivateKey(), retryCount: 0, timeoutMs: 200 });
    expect(classifyChainError(await hung.publicClient.getChainId().catch((e: unknown) => e))).toMatchObject({ kind: "transient", code: "timeout" });

    const never = await clients.publicClient
      .waitForTransactionReceipt({ hash: keccak256(toHex(`never_${runId}`)), timeout: 300 })
      .catch((e: unknown) => e);
    expect(classifyChainError(never)).toMatchObject({ kind: "transient", code: "receipt_timeout" });
  });

  it("classifies requests that can never work as permanent invalid_request", async () => {
    const { publicClient } = clients;
    // certificate code is absent at the zero address: the call returns no data
    const noContract = await publicClient.readContract({ address: zeroAddress, abi: artCertificateAbi, functionName: "totalCertified" }).catch((e: unknown) => e);
    expect(classifyChainError(noContract)).toMatchObject({ kind: "permanent", code: "invalid_request" });

    const badArgs = await relayer
      .simulate({ address: certificate, abi: artCertificateAbi as Abi, functionName: "certify", args: ["not-an-address"] })
      .catch((e: unknown) => e);
    expect(classifyChainError(badArgs)).toMatchObject({ kind: "permanent", code: "invalid_request" });
  });

  it("classifies node messages a local automining node does not produce (hand-built)", async () => {
    const { RpcRequestError, HttpRequestError, LimitExceededRpcError, InternalRpcError } = await import("viem");
    const rpc = (code: number, message: string) => new RpcRequestError({ body: {}, error: { code, message }, url: "http://node" });
    expect(classifyChainError(rpc(-32000, "already known"))).toMatchObject({ code: "nonce_conflict" });
    expect(classifyChainError(rpc(-32000, "replacement transaction underpriced"))).toMatchObject({ code: "nonce_conflict" });
    expect(classifyChainError(rpc(-32000, "transaction underpriced"))).toMatchObject({ code: "underpriced" });
    expect(classifyChainError(new HttpRequestError({ url: "http://node", status: 429 }))).toMatchObject({ code: "rate_limited" });
    expect(classifyChainError(new LimitExceededRpcError(rpc(-32005, "limit exceeded")))).toMatchObject({ code: "rate_limited" });
    expect(classifyChainError(new InternalRpcError(rpc(-32603, "header not found")))).toMatchObject({ kind: "transient", code: "unknown" });
    expect(classifyChainError(new HttpRequestError({ url: "http://node", status: 502 }))).toMatchObject({ code: "rpc_unavailable" });
  });
});
