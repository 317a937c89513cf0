/**
 * CustodialSender (api/src/chain/custodial-sender.ts) against the run's Hardhat node: a custodial
 * wallet's own transaction is signed once, kept by its caller, sent as it is by every attempt (the
 * node having it already counts as sent), its gas given by the relayer; a nonce the wallet spent on
 * another transaction fails it for good; another unsettled transaction of the wallet makes it wait.
 */
import pino from "pino";
import { createWalletClient, type Hex, http, parseEther, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createChainClients } from "../../api/src/chain/clients.ts";
import { CustodialSender, type SignedTransaction, type SignedTransactionStore } from "../../api/src/chain/custodial-sender.ts";
import { PermanentChainError, TransientChainError } from "../../api/src/chain/errors.ts";
import { Relayer } from "../../api/src/chain/relayer.ts";
import { createDb } from "../../api/src/db/connection.ts";
import { testEnvironment } from "../support/environment.ts";

const env = testEnvironment();
const db = createDb(env.databaseUrl, 2);
const clients = createChainClients({ rpcUrl: env.rpcUrl, chainId: env.chainId, relayerPrivateKey: generatePrivateKey() });
const { publicClient, chain, relayerAccount } = clients;
let sender: CustodialSender;

beforeAll(async () => {
  await publicClient.request({ method: "hardhat_setBalance", params: [relayerAccount.address, toHex(parseEther("10"))] } as never);
  const relayer = new Relayer({ publicClient, account: relayerAccount, chain, logger: pino({ level: "silent" }), receiptTimeoutMs: 20_000, sharedNonces: db });
  sender = new CustodialSender({ db, publicClient, relayer, chainId: env.chainId });
});
afterAll(() => db.destroy());

/** A store in memory, counting what it was asked to keep. */
function memoryStore(unsettled: string | null = null): SignedTransactionStore & { kept: SignedTransaction[] } {
  const kept: SignedTransaction[] = [];
  return { kept, signed: async () => kept[0] ?? null, unsettled: async () => unsettled, keep: async (_db, signed) => void kept.push(signed) };
}

/** A plain transfer of nothing from a new custodial wallet, which holds no ETH. */
function callOf(label: string) {
  return { account: privateKeyToAccount(generatePrivateKey()), to: privateKeyToAccount(generatePrivateKey()).address, data: "0x" as Hex, gas: 21_000n, abi: [], label };
}

it("signs a custodial wallet's transaction once and sends that one whatever runs it, with the gas the relayer gave it", async () => {
  const call = callOf("custodial once");
  const store = memoryStore();
  const submitted: string[] = [];
  const withHook = { ...call, onSubmitted: (hash: string) => void submitted.push(hash) };
  // Two attempts at once, then one after both: one signature, one transaction.
  const results = await Promise.all([sender.send(withHook, store), sender.send(withHook, store)]);
  const again = await sender.send(withHook, store);
  expect(store.kept).toHaveLength(1);
  const hash = store.kept[0]!.hash;
  expect([...results, again].map((r) => r.hash)).toEqual([hash, hash, hash]);
  expect(submitted).toEqual([hash, hash, hash]);
  expect(again.receipt.status).toBe("success");
  expect(await publicClient.getTransactionCount({ address: call.account.address, blockTag: "latest" })).toBe(1);
  expect((await publicClient.getTransaction({ hash })).from.toLowerCase()).toBe(call.account.address.toLowerCase());
});

it("fails for good once the wallet's nonce went to another transaction, and sends nothing", async () => {
  const call = callOf("custodial nonce spent");
  const store = memoryStore();
  const signed = await sender.signOnce(call, store);
  // The wallet spends that nonce elsewhere (a transaction of its own, as a wallet's owner could sign).
  await publicClient.request({ method: "hardhat_setBalance", params: [call.account.address, toHex(parseEther("1"))] } as never);
  const wallet = createWalletClient({ account: call.account, chain, transport: http(env.rpcUrl) });
  const other = await wallet.sendTransaction({ to: call.account.address, value: 0n, nonce: signed.nonce });
  expect((await publicClient.waitForTransactionReceipt({ hash: other })).status).toBe("success");

  const refused = await sender.send(call, store).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(PermanentChainError);
  expect((refused as Error).message).toContain(`nonce ${signed.nonce}`);
  expect(await publicClient.getTransactionReceipt({ hash: signed.hash }).catch(() => null)).toBeNull();
});

it("waits, signing nothing, while another transaction of the wallet is signed and unsettled", async () => {
  const call = callOf("custodial waits");
  const store = memoryStore("the wallet's withdrawal wdr_1");
  const waited = await sender.send(call, store).catch((err: unknown) => err);
  expect(waited).toBeInstanceOf(TransientChainError);
  expect(waited).toMatchObject({ code: "nonce_conflict" });
  expect((waited as Error).message).toContain("wdr_1");
  expect(store.kept).toEqual([]);
  expect(await publicClient.getTransactionCount({ address: call.account.address, blockTag: "pending" })).toBe(0);
});
