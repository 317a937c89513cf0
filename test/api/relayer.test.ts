/**
 * The relayer against the shared Hardhat node of the test run (test/support/global-setup.ts), with
 * its own ArtCertificate and ArtShares (test/support/relayer.ts): pipelined nonces, simulation,
 * races, lost responses and resyncs, receipts, share mints, and CertifyBatcher's gas limits. (Ignition's
 * deployment of the same contracts is covered by the global setup; it sends from account #0, whose
 * nonces other files race for.) How node errors are classified: chain-errors.test.ts.
 */
import {
  type Address,
  createWalletClient,
  encodeFunctionData,
  getAbiItem,
  type Hash,
  type Hex,
  http,
  keccak256,
  parseEventLogs,
  toBytes,
  toFunctionSelector,
  toHex,
  TransactionNotFoundError,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artSharesAbi } from "../../contracts/abi/ArtShares.ts";
import { type ChainClients, createChainClients } from "../../api/src/chain/clients.ts";
import { classifyChainError, PermanentChainError, TransientChainError } from "../../api/src/chain/errors.ts";
import { isAlreadyCertified, Relayer } from "../../api/src/chain/relayer.ts";
import { CertifyBatcher } from "../../api/src/modules/artworks/certify-batcher.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { testEnvironment } from "../support/environment.ts";
import { type RelayerContracts, logger, startRpcProxy, useRelayerContracts } from "../support/relayer.ts";

const HARDHAT_ACCOUNT_5_KEY = "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba";
const env = testEnvironment();

const { r, collector, runId, newArtworkId, certifyRequest, toBatchRequest, totalCertified, tokenIdOf, nonceOf } = useRelayerContracts();
let clients: ChainClients;
let relayer: Relayer;
let certificate: Address;
let shares: Address;
let certifierRole: Hex;
let hungRpc: RelayerContracts["hungRpc"];
beforeAll(() => void ({ clients, relayer, certificate, shares, certifierRole, hungRpc } = r));

describe("Relayer.write", () => {
  it("pipelines 50 concurrent certify writes on 50 consecutive nonces into 50 distinct tokens", async () => {
    const { publicClient } = clients;
    const startNonce = await nonceOf(relayer.address, "pending");
    const totalBefore = await totalCertified();
    const ids = Array.from({ length: 50 }, () => newArtworkId());

    const started = performance.now();
    const results = await Promise.all(ids.map((id) => relayer.write(certifyRequest(id))));
    const seconds = (performance.now() - started) / 1000;
    console.log(`[relayer] 50 concurrent certify writes mined in ${seconds.toFixed(2)} s (${(50 / seconds).toFixed(1)} writes/s)`);

    expect(new Set(results.map((r) => r.hash)).size).toBe(50);
    expect(results.map((r) => r.nonce).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => startNonce + i));
    const sent = await Promise.all(results.map((r) => publicClient.getTransaction({ hash: r.hash })));
    sent.forEach((tx, i) => {
      expect(tx.from.toLowerCase()).toBe(relayer.address.toLowerCase());
      expect(tx.nonce).toBe(results[i]!.nonce);
    });

    const tokenIds = results.map((r) => {
      expect(r.receipt.status).toBe("success");
      expect(r.blockNumber).toBe(r.receipt.blockNumber);
      const [event] = parseEventLogs({ abi: artCertificateAbi, eventName: "ArtworkCertified", logs: r.receipt.logs });
      return event!.args.tokenId;
    });
    expect(new Set(tokenIds).size).toBe(50);
    for (const [i, tokenId] of tokenIds.entries()) {
      expect(await publicClient.readContract({ address: certificate, abi: artCertificateAbi, functionName: "ownerOf", args: [tokenId] })).toBe(collector);
      expect(await tokenIdOf(ids[i]!)).toBe(tokenId);
    }
    expect(await totalCertified()).toBe(totalBefore + 50n);
    expect(await nonceOf(relayer.address, "latest")).toBe(startNonce + 50);
  });

  it("refuses a second certify of the same artwork in simulation, decoded, and sends nothing", async () => {
    const id = newArtworkId();
    const first = await relayer.write(certifyRequest(id));
    const tokenId = await tokenIdOf(id);
    const nonceBefore = await nonceOf(relayer.address, "pending");
    const totalBefore = await totalCertified();

    const err = await relayer.write(certifyRequest(id)).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(PermanentChainError);
    expect(err).toMatchObject({ kind: "permanent", code: "reverted", errorName: "ArtCertificateAlreadyCertified", args: [keccak256(toBytes(id)), tokenId], hash: undefined });
    expect((err as PermanentChainError).reason).toContain("ArtCertificateAlreadyCertified");
    expect(isAlreadyCertified(err)).toBe(true);
    expect(isAlreadyCertified(new TransientChainError("timeout", "x"))).toBe(false);
    expect(await nonceOf(relayer.address, "pending")).toBe(nonceBefore);
    expect(await totalCertified()).toBe(totalBefore);
    expect(first.receipt.status).toBe("success");
  });

  it("simulate answers the call's return value against the latest state", async () => {
    const { result } = await relayer.simulate(certifyRequest(newArtworkId()));
    expect(result).toBe((await totalCertified()) + 1n);
  });

  it("lets exactly one of two concurrent certifies of one artwork mint; the other is AlreadyCertified", async () => {
    const id = newArtworkId();
    const totalBefore = await totalCertified();
    const settled = await Promise.allSettled([relayer.write(certifyRequest(id)), relayer.write(certifyRequest(id))]);

    const minted = settled.filter((s) => s.status === "fulfilled");
    const refused = settled.filter((s): s is PromiseRejectedResult => s.status === "rejected");
    expect(minted).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(isAlreadyCertified(refused[0]!.reason)).toBe(true);
    expect(await totalCertified()).toBe(totalBefore + 1n);
    // Whatever path the loser took (refused in simulation, or mined and reverted), the nonces stay usable.
    const next = await relayer.write(certifyRequest(newArtworkId()));
    expect(next.receipt.status).toBe("success");
    expect(await nonceOf(relayer.address, "latest")).toBe(next.nonce + 1);
  });

  it("turns a caller without the role into a permanent AccessControlUnauthorizedAccount", async () => {
    const outsider = privateKeyToAccount(HARDHAT_ACCOUNT_5_KEY);
    const outsiderRelayer = new Relayer({ publicClient: clients.publicClient, account: outsider, chain: clients.chain, logger });
    const totalBefore = await totalCertified();

    const err = await outsiderRelayer.write(certifyRequest(newArtworkId())).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermanentChainError);
    expect(err).toMatchObject({ code: "reverted", errorName: "AccessControlUnauthorizedAccount", args: [outsider.address, certifierRole] });

    const sharesErr = await outsiderRelayer
      .write({ address: shares, abi: artSharesAbi, functionName: "createShareClass", args: [1n, 10n] })
      .catch((e: unknown) => e);
    expect(sharesErr).toMatchObject({ kind: "permanent", errorName: "AccessControlUnauthorizedAccount" });
    expect(await totalCertified()).toBe(totalBefore);
  });

  it("reports a node that is down or hung as transient, and creating the clients never throws", async () => {
    const closedPort = await freePort();
    const down = createChainClients({ rpcUrl: `http://127.0.0.1:${closedPort}`, chainId: env.chainId, relayerPrivateKey: generatePrivateKey(), retryCount: 0 });
    const downRelayer = new Relayer({ publicClient: down.publicClient, account: down.relayerAccount, chain: down.chain, receiptTimeoutMs: 1_000 });
    const err = await downRelayer.write(certifyRequest(newArtworkId())).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransientChainError);
    expect(err).toMatchObject({ kind: "transient", code: "rpc_unavailable", hash: undefined });

    const hung = createChainClients({ rpcUrl: hungRpc.url, chainId: env.chainId, relayerPrivateKey: generatePrivateKey(), retryCount: 0, timeoutMs: 300 });
    const hungRelayer = new Relayer({ publicClient: hung.publicClient, account: hung.relayerAccount, chain: hung.chain });
    expect(await hungRelayer.write(certifyRequest(newArtworkId())).catch((e: unknown) => e)).toMatchObject({ kind: "transient", code: "timeout" });
  });

  it("recovers when a transaction from outside takes the nonce it had assigned", async () => {
    const { publicClient, chain, relayerAccount } = clients;
    await relayer.write(certifyRequest(newArtworkId())); // the relayer now holds its next nonce in memory
    const outsideNonce = await nonceOf(relayer.address, "pending");
    const outsideWallet = createWalletClient({ account: relayerAccount, chain, transport: http(env.rpcUrl) });
    const outsideHash = await outsideWallet.sendTransaction({ to: relayerAccount.address, value: 0n, nonce: outsideNonce });
    expect((await publicClient.waitForTransactionReceipt({ hash: outsideHash })).status).toBe("success");

    const recovered = await relayer.write(certifyRequest(newArtworkId()));
    expect(recovered.nonce).toBe(outsideNonce + 1);
    const after = await Promise.all(Array.from({ length: 5 }, () => relayer.write(certifyRequest(newArtworkId()))));
    expect(after.map((r) => r.nonce).sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6].map((i) => outsideNonce + i));
    expect(after.every((r) => r.receipt.status === "success")).toBe(true);
    expect((await publicClient.getTransaction({ hash: outsideHash })).nonce).toBe(outsideNonce);
    expect(await nonceOf(relayer.address, "latest")).toBe(outsideNonce + 7);
  });

  it("knows a sent transaction whose response was lost by its hash, and resyncs after a send that never arrived", async () => {
    const proxy = await startRpcProxy(env.rpcUrl);
    try {
      const viaProxy = createChainClients({ rpcUrl: proxy.url, chainId: env.chainId, relayerPrivateKey: generatePrivateKey(), retryCount: 0 });
      const proxyRelayer = new Relayer({ publicClient: viaProxy.publicClient, account: clients.relayerAccount, chain: viaProxy.chain, logger });
      const nonceBefore = await nonceOf(relayer.address, "pending");

      proxy.sendRawTransaction = "lose-response";
      const lostId = newArtworkId();
      const recognized = await proxyRelayer.write(certifyRequest(lostId));
      expect(recognized).toMatchObject({ nonce: nonceBefore });
      expect(await tokenIdOf(lostId)).not.toBe(0n);
      expect(await nonceOf(relayer.address, "latest")).toBe(nonceBefore + 1);

      proxy.sendRawTransaction = "drop-request";
      const droppedId = newArtworkId();
      const err = await proxyRelayer.write(certifyRequest(droppedId)).catch((e: unknown) => e);
      expect(err).toMatchObject({ kind: "transient", code: "rpc_unavailable" });
      const maybeSent = (err as TransientChainError).hash!;
      expect(maybeSent).toMatch(/^0x[0-9a-f]{64}$/);
      expect(await clients.publicClient.getTransaction({ hash: maybeSent }).catch((e: unknown) => e)).toBeInstanceOf(TransactionNotFoundError);

      proxy.sendRawTransaction = "forward";
      const retried = await proxyRelayer.write(certifyRequest(droppedId));
      expect(retried.nonce).toBe(nonceBefore + 1); // no gap left by the send that never arrived
      expect(await tokenIdOf(droppedId)).not.toBe(0n);
    } finally {
      await proxy.close();
    }
  });

  it("hands the hash to onSubmitted before the receipt, and waitForReceipt finds an already-mined one", async () => {
    const submitted: Array<{ hash: Hash; nonce: number }> = [];
    const result = await relayer.write({ ...certifyRequest(newArtworkId()), onSubmitted: (tx) => void submitted.push(tx) });
    expect(submitted).toEqual([{ hash: result.hash, nonce: result.nonce }]);

    const resumed = await relayer.waitForReceipt(result.hash);
    expect(resumed).toMatchObject({ hash: result.hash, blockNumber: result.blockNumber });
    expect(resumed.receipt.status).toBe("success");
  });

  it("waitForReceipt of a transaction mined as reverted decodes its custom error by replaying it", async () => {
    const { publicClient, chain, relayerAccount } = clients;
    const id = newArtworkId();
    await relayer.write(certifyRequest(id));
    const tokenId = await tokenIdOf(id);

    // Sent around the relayer (no simulation), as a crashed job's stored hash could be.
    const fees = await publicClient.estimateFeesPerGas();
    const serializedTransaction = await relayerAccount.signTransaction({
      chainId: chain.id,
      type: "eip1559",
      to: certificate,
      data: encodeFunctionData(certifyRequest(id)),
      gas: 500_000n,
      nonce: await nonceOf(relayerAccount.address, "pending"),
      ...fees,
    });
    const hash = keccak256(serializedTransaction);
    // Hardhat answers a reverting transaction with an error, but mines it.
    const answer = await publicClient.sendRawTransaction({ serializedTransaction }).then(
      (sent) => sent,
      (e: unknown) => e,
    );
    expect(answer).toBeInstanceOf(Error);
    expect(classifyChainError(answer, artCertificateAbi)).toMatchObject({ kind: "permanent", code: "reverted", errorName: "ArtCertificateAlreadyCertified" });
    expect((await publicClient.getTransactionReceipt({ hash })).status).toBe("reverted");

    const err = await relayer.waitForReceipt(hash, { abi: artCertificateAbi, label: `certify ${id}` }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermanentChainError);
    expect(err).toMatchObject({ code: "reverted", errorName: "ArtCertificateAlreadyCertified", args: [keccak256(toBytes(id)), tokenId], hash, label: `certify ${id}` });
    expect(isAlreadyCertified(err)).toBe(true);

    // The relayer's nonce in memory is stale now: the next write resyncs and succeeds.
    expect((await relayer.write(certifyRequest(newArtworkId()))).receipt.status).toBe("success");
  });

  it("relays share classes and share mints, and refuses a mint past the cap or a reused purchase key", async () => {
    const { publicClient } = clients;
    const certified = await relayer.write(certifyRequest(newArtworkId()));
    const [event] = parseEventLogs({ abi: artCertificateAbi, eventName: "ArtworkCertified", logs: certified.receipt.logs });
    const tokenId = event!.args.tokenId;
    await relayer.write({ address: shares, abi: artSharesAbi, functionName: "createShareClass", args: [tokenId, 100n], label: "share class" });

    const mint = (amount: bigint, purchaseKey: Hex) =>
      relayer.write({ address: shares, abi: artSharesAbi, functionName: "mintShares", args: [collector, tokenId, amount, purchaseKey] });
    const purchaseA = keccak256(toHex(`fp_${runId}_a`));
    await Promise.all([mint(40n, purchaseA), mint(50n, keccak256(toHex(`fp_${runId}_b`)))]);
    expect(await publicClient.readContract({ address: shares, abi: artSharesAbi, functionName: "balanceOf", args: [collector, tokenId] })).toBe(90n);

    expect(await mint(20n, keccak256(toHex(`fp_${runId}_c`))).catch((e: unknown) => e)).toMatchObject({
      kind: "permanent",
      errorName: "ArtSharesCapExceeded",
      args: [tokenId, 20n, 10n],
    });
    expect(await mint(1n, purchaseA).catch((e: unknown) => e)).toMatchObject({ errorName: "ArtSharesPurchaseAlreadyMinted", args: [purchaseA] });
    expect(await publicClient.readContract({ address: shares, abi: artSharesAbi, functionName: "totalSupply", args: [tokenId] })).toBe(90n);
  });
});

describe("CertifyBatcher's gas limits", () => {
  it("estimates its first batch, sends later ones with a limit learned from receipts, and certifies one by one a batch whose limit fell short", async () => {
    const { publicClient } = clients;
    const batchSelector = toFunctionSelector(getAbiItem({ abi: artCertificateAbi, name: "certifyBatch" }));
    const estimated: Hex[] = [];
    const estimateGas = publicClient.estimateGas;
    publicClient.estimateGas = ((args: Parameters<typeof estimateGas>[0]) => {
      if (args.data) estimated.push(args.data);
      return estimateGas(args);
    }) as typeof estimateGas;
    const batches: { size: number; hash: Hash }[] = [];
    const batcher = new CertifyBatcher({
      relayer,
      address: certificate,
      maxBatch: 10,
      maxInFlight: 1,
      logger,
      onSubmitted: async (ids, { hash }) => void batches.push({ size: ids.length, hash }),
    });
    // Eleven at once: the first leaves alone (`certify`), the other ten in one certifyBatch.
    const round = async () => {
      const ids = Array.from({ length: 11 }, () => newArtworkId());
      await Promise.all(ids.map((id) => batcher.certify({ ...toBatchRequest(id) })));
      for (const id of ids) expect(await tokenIdOf(id)).not.toBe(0n);
      return batches.at(-1)!;
    };
    const batchEstimates = () => estimated.filter((data) => data.startsWith(batchSelector)).length;
    try {
      const first = await round();
      expect(first.size).toBe(10);
      expect(batchEstimates()).toBe(1);
      const firstReceipt = await publicClient.getTransactionReceipt({ hash: first.hash });

      const second = await round();
      expect(second.size).toBe(10);
      expect(batchEstimates()).toBe(1);
      const [tx, receipt] = await Promise.all([publicClient.getTransaction({ hash: second.hash }), publicClient.getTransactionReceipt({ hash: second.hash })]);
      expect(receipt.status).toBe("success");
      // 125 % of the most a certification took, for ten.
      expect(tx.gas).toBe(((firstReceipt.gasUsed / 10n) * 10n * 125n) / 100n);

      // A bound that falls short: the batch reverts on-chain, its ten are certified one by one, and the next batch is estimated again.
      (batcher as unknown as { gasPerCertification: bigint }).gasPerCertification = 20_000n;
      const singlesBefore = batches.length;
      const third = await round();
      const short = batches[singlesBefore + 1]!;
      expect(short.size).toBe(10);
      expect((await publicClient.getTransactionReceipt({ hash: short.hash })).status).toBe("reverted");
      expect(third.size).toBe(1);
      expect(batches.length).toBe(singlesBefore + 2 + 10);
      await round();
      expect(batchEstimates()).toBe(2);
    } finally {
      publicClient.estimateGas = estimateGas;
    }
  });
});
