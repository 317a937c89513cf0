import type { Kysely } from "kysely";
import { lockNamed } from "../db/locks.ts";
import type { Logger } from "pino";
import {
  type Abi,
  type Address,
  type Chain,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type ContractFunctionReturnType,
  decodeFunctionResult,
  Eip1559FeesNotSupportedError,
  encodeFunctionData,
  type Hash,
  type Hex,
  keccak256,
  type LocalAccount,
  type PublicClient,
  type TransactionReceipt,
  type Transport,
} from "viem";
import { ChainWriteError, classifyChainError, isRevertWith, PermanentChainError, TransientChainError } from "./errors.ts";

type WriteMutability = "nonpayable" | "payable";

/** One contract call to relay. `label` names it in logs and errors (`certify art_…`). */
export interface WriteRequest<
  abi extends Abi = Abi,
  functionName extends ContractFunctionName<abi, WriteMutability> = ContractFunctionName<abi, WriteMutability>,
  args extends ContractFunctionArgs<abi, WriteMutability, functionName> = ContractFunctionArgs<abi, WriteMutability, functionName>,
> {
  address: Address;
  abi: abi;
  functionName: functionName;
  args: args;
  value?: bigint | undefined;
  label?: string | undefined;
  /**
   * The gas limit, when the caller knows one that suffices (e.g. learned from receipts of the same
   * call): no estimate is made, so the node executes the call once (when mined) instead of twice.
   * A revert then shows on-chain: a PermanentChainError from the receipt, decoded by replaying it.
   */
  gas?: bigint | undefined;
  /**
   * Called once the transaction is in the node's pool, before its receipt is awaited: a job stores
   * the hash here so that, after a crash, it resumes with `waitForReceipt(hash)` instead of resending.
   * If it throws, `write` rejects with that error although the transaction is on its way.
   */
  onSubmitted?: ((tx: { hash: Hash; nonce: number }) => void | Promise<void>) | undefined;
}

export interface WriteResult {
  hash: Hash;
  receipt: TransactionReceipt;
  blockNumber: bigint;
}

export interface RelayerOptions {
  publicClient: PublicClient<Transport, Chain>;
  /** The relayer's key; it must hold the contracts' minter roles. */
  account: LocalAccount;
  chain: Chain;
  logger?: Logger | undefined;
  /** How long `write` and `waitForReceipt` wait for the receipt (default 120 s). */
  receiptTimeoutMs?: number | undefined;
  /** Blocks on top of the transaction's before it counts as done (default 1: mined). */
  confirmations?: number | undefined;
  /**
   * The database the processes signing with this key share: each send then takes the nonce under a
   * Postgres advisory lock of the account, re-read from the node's pending count, so that several
   * worker processes never sign two transactions with one nonce. Without it, nonces are assigned
   * in memory: one process per key.
   */
  sharedNonces?: Kysely<any> | undefined;
}

/** Attempts of one write when the node refuses its nonce or its fees (each attempt re-reads them). */
const MAX_SEND_ATTEMPTS = 3;
/** Headroom over the gas estimate: concurrent writes run against a slightly different state than the estimate saw. */
const GAS_HEADROOM_PERCENT = 120n;

export type Fees = { type: "eip1559"; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { type: "legacy"; gasPrice: bigint };

/**
 * Relays contract writes from one account, safely under concurrency.
 *
 * Every write is simulated first (a revert is a PermanentChainError carrying the decoded custom
 * error, and nothing is sent), then signed with a nonce this process assigns under a lock, sent,
 * and its receipt awaited outside the lock, so concurrent writes pipeline one nonce after another.
 * Nonces start from the account's pending transaction count and are re-read from the chain after
 * any send failure; a refused nonce or fee is retried with fresh values a few times.
 *
 * Several processes with one key: with `sharedNonces` (the shared database), a send takes a Postgres
 * advisory lock of the account, reads the node's pending nonce under it, signs and sends, and
 * releases it, so the processes take turns and never sign one nonce twice (each keeps its own
 * pipelining of receipts). Without it, nonces are assigned in memory and one process per key is the
 * rule: two would race for nonces and fail each other's writes with nonce conflicts.
 */
export class Relayer {
  private readonly publicClient: PublicClient<Transport, Chain>;
  private readonly account: LocalAccount;
  private readonly chain: Chain;
  private readonly log: Logger | undefined;
  private readonly receiptTimeoutMs: number;
  private readonly confirmations: number;
  private readonly sharedNonces: Kysely<any> | undefined;

  /** The next nonce to assign; undefined means "read it from the chain first". */
  private nextNonce: number | undefined;
  /** Tail of the promise chain that serializes nonce assignment and sending. */
  private nonceLock: Promise<unknown> = Promise.resolve();

  constructor(options: RelayerOptions) {
    this.publicClient = options.publicClient;
    this.account = options.account;
    this.chain = options.chain;
    this.log = options.logger?.child({ component: "relayer", relayer: options.account.address });
    this.receiptTimeoutMs = options.receiptTimeoutMs ?? 120_000;
    this.confirmations = options.confirmations ?? 1;
    this.sharedNonces = options.sharedNonces;
  }

  get address(): Address {
    return this.account.address;
  }

  /** Signs EIP-712 data with the relayer's key (it also holds ArtExchange's ORDER_SIGNER_ROLE: the platform's order key). */
  signTypedData(...args: Parameters<LocalAccount["signTypedData"]>): Promise<Hex> {
    return this.account.signTypedData(...args);
  }

  /**
   * Runs the call against the latest state from the relayer's address. Resolves with the function's
   * return value (as of now: concurrent writes may change it by the time one is mined), rejects with
   * a PermanentChainError on a revert and a TransientChainError when the node cannot answer.
   */
  async simulate<
    const abi extends Abi,
    functionName extends ContractFunctionName<abi, WriteMutability>,
    const args extends ContractFunctionArgs<abi, WriteMutability, functionName>,
  >(request: WriteRequest<abi, functionName, args>): Promise<{ result: ContractFunctionReturnType<abi, WriteMutability, functionName, args> }> {
    const data = encodeCall(request);
    const label = labelOf(request);
    try {
      const { data: returned } = await this.publicClient.call({
        account: this.account.address,
        to: request.address,
        data,
        value: request.value,
      });
      const result = decodeFunctionResult({ abi: request.abi as Abi, functionName: request.functionName as string, data: returned ?? "0x" });
      return { result: result as ContractFunctionReturnType<abi, WriteMutability, functionName, args> };
    } catch (err) {
      throw classifyChainError(err, request.abi, { label });
    }
  }

  /**
   * Estimates, sends and waits for the receipt of one write. Rejects with a PermanentChainError
   * when the call reverts (in the estimate: nothing was sent, and the revert is decoded by
   * simulating the call; on-chain: `hash` is set and the revert is decoded by replaying the call)
   * and with a TransientChainError when the chain cannot take it now (`hash` set when it may still
   * be mined: resume with `waitForReceipt`). The estimate executes the call already, so a call
   * that goes through is executed once before it is sent, not twice.
   */
  async write<
    const abi extends Abi,
    functionName extends ContractFunctionName<abi, WriteMutability>,
    const args extends ContractFunctionArgs<abi, WriteMutability, functionName>,
  >(request: WriteRequest<abi, functionName, args>): Promise<WriteResult & { nonce: number }> {
    const label = labelOf(request);
    const data = encodeCall(request);
    const call = { to: request.address, data, value: request.value ?? 0n };
    let gas: bigint;
    let fees: Fees;
    if (request.gas !== undefined) {
      gas = request.gas;
      try {
        fees = await this.estimateFees();
      } catch (err) {
        throw classifyChainError(err, request.abi, { label });
      }
    } else {
      try {
        [gas, fees] = await Promise.all([this.publicClient.estimateGas({ account: this.account.address, ...call }), this.estimateFees()]);
      } catch (err) {
        // A revert: the simulation names it (its error data, decoded with the ABI). Should the call
        // pass now (the state moved), the estimate's own error stands.
        await this.simulate(request);
        throw classifyChainError(err, request.abi, { label });
      }
      gas = (gas * GAS_HEADROOM_PERCENT) / 100n;
    }

    let submitted: { hash: Hash; nonce: number } | undefined;
    for (let attempt = 1; !submitted; attempt++) {
      try {
        submitted = await this.submit({ ...call, gas, fees }, request.abi, label);
      } catch (err) {
        const refused = classifyChainError(err, request.abi, { label });
        // The node has not taken the transaction: the next attempt re-reads the nonce (and the fees).
        if (!(refused.code === "nonce_conflict" || refused.code === "underpriced") || attempt >= MAX_SEND_ATTEMPTS) throw refused;
        this.log?.warn({ label, attempt, code: refused.code, err: refused.message }, "send refused; retrying");
        if (refused.code === "underpriced") {
          try {
            fees = await this.estimateFees();
          } catch (feeErr) {
            throw classifyChainError(feeErr, undefined, { label });
          }
        }
      }
    }

    await request.onSubmitted?.(submitted);
    const mined = await this.waitForReceipt(submitted.hash, { abi: request.abi, label });
    return { ...mined, nonce: submitted.nonce };
  }

  /**
   * Sends `value` wei to an account that runs no code (21,000 gas), through the same nonce path as
   * `write`, and waits for it to be mined: what a custodial wallet that signs its own transaction is
   * given to pay that transaction's gas with.
   */
  async transferValue({ to, value, label }: { to: Address; value: bigint; label: string }): Promise<WriteResult> {
    let fees: Fees;
    try {
      fees = await this.estimateFees();
    } catch (err) {
      throw classifyChainError(err, undefined, { label });
    }
    const submitted = await this.submit({ to, data: "0x", value, gas: 21_000n, fees }, [], label);
    return this.waitForReceipt(submitted.hash, { label });
  }

  /**
   * Waits for the receipt of a transaction this relayer sent (also one sent before a crash, by its
   * stored hash). A reverted receipt rejects with a PermanentChainError whose custom error is decoded
   * with `abi` by replaying the call on the state of its block; a replacement by another transaction
   * of the same nonce, or no receipt within the timeout, reject with a TransientChainError.
   */
  async waitForReceipt(hash: Hash, { abi, label }: { abi?: Abi | undefined; label?: string | undefined } = {}): Promise<WriteResult> {
    let replacedBy: { reason: string; hash: Hash } | undefined;
    let receipt: TransactionReceipt;
    try {
      receipt = await this.publicClient.waitForTransactionReceipt({
        hash,
        confirmations: this.confirmations,
        timeout: this.receiptTimeoutMs,
        onReplaced: (replacement) => {
          replacedBy = { reason: replacement.reason, hash: replacement.transaction.hash };
        },
      });
    } catch (err) {
      throw classifyChainError(err, abi, { hash, label });
    }
    // viem resolves with the replacement's receipt: only a re-priced copy of our call counts as ours.
    if (replacedBy && replacedBy.reason !== "repriced") {
      throw new TransientChainError("replaced", `transaction ${hash} was ${replacedBy.reason} by ${replacedBy.hash}`, { hash, label });
    }
    if (receipt.status === "reverted") {
      const reverted = await this.explainRevert(receipt, abi, label);
      this.log?.warn({ label, hash, block: receipt.blockNumber, err: reverted.message }, "transaction reverted on-chain");
      throw reverted;
    }
    this.log?.info({ label, hash: receipt.transactionHash, block: receipt.blockNumber, gasUsed: receipt.gasUsed }, "transaction mined");
    return { hash: receipt.transactionHash, receipt, blockNumber: receipt.blockNumber };
  }

  /**
   * Assigns the next nonce, signs and sends, all under the nonce lock (never held while waiting for
   * receipts; with `sharedNonces`, also under the account's advisory lock shared by the processes).
   * Any failure makes the next assignment re-read the nonce from the chain.
   */
  private submit(
    tx: { to: Address; data: Hex; value: bigint; gas: bigint; fees: Fees },
    abi: Abi,
    label: string,
  ): Promise<{ hash: Hash; nonce: number }> {
    if (this.sharedNonces) {
      const shared = this.sharedNonces;
      // Another process may have sent since: the nonce is read from the node under the lock, every time.
      return this.exclusive(() =>
        shared.transaction().execute(async (trx) => {
          await lockNonces(trx, this.account.address);
          return this.signAndSend(await this.syncNonce(), tx, abi, label);
        }),
      );
    }
    return this.exclusive(async () => this.signAndSend(this.nextNonce ?? (await this.syncNonce()), tx, abi, label));
  }

  private async signAndSend(
    nonce: number,
    tx: { to: Address; data: Hex; value: bigint; gas: bigint; fees: Fees },
    abi: Abi,
    label: string,
  ): Promise<{ hash: Hash; nonce: number }> {
    const serializedTransaction = await this.account.signTransaction(
      { chainId: this.chain.id, to: tx.to, data: tx.data, value: tx.value, gas: tx.gas, nonce, ...tx.fees },
      { serializer: this.chain.serializers?.transaction },
    );
    const hash = keccak256(serializedTransaction);
    try {
      await sendSigned(this.publicClient, serializedTransaction, { abi, label });
    } catch (err) {
      this.nextNonce = undefined;
      throw err;
    }
    this.nextNonce = nonce + 1;
    this.log?.debug({ label, hash, nonce }, "transaction sent");
    return { hash, nonce };
  }

  private async syncNonce(): Promise<number> {
    const nonce = await pendingNonce(this.publicClient, this.account.address);
    this.log?.debug({ nonce }, "nonce read from the chain");
    return nonce;
  }

  private estimateFees(): Promise<Fees> {
    return estimateFees(this.publicClient, this.chain);
  }

  /** Replays a reverted transaction on its block's state to name the custom error it reverted with. */
  private async explainRevert(receipt: TransactionReceipt, abi: Abi | undefined, label: string | undefined): Promise<ChainWriteError> {
    const hash = receipt.transactionHash;
    try {
      const tx = await this.publicClient.getTransaction({ hash });
      await this.publicClient.call({
        account: tx.from,
        to: tx.to,
        data: tx.input,
        value: tx.value,
        gas: tx.gas,
        blockNumber: receipt.blockNumber,
      });
    } catch (err) {
      const replayed = classifyChainError(err, abi, { hash, label });
      if (replayed instanceof PermanentChainError) return replayed;
    }
    return new PermanentChainError("reverted", `transaction ${hash} reverted in block ${receipt.blockNumber}`, {
      hash,
      label,
      reason: "reverted on-chain; replaying it on its block's state did not reproduce the revert",
    });
  }

  private exclusive<T>(critical: () => Promise<T>): Promise<T> {
    const run = this.nonceLock.then(critical);
    this.nonceLock = run.catch(() => undefined);
    return run;
  }
}

// What every sender of a transaction shares (this Relayer for its key, CustodialSender for a
// custodial wallet's own transactions): nonces under one lock per address, fees, the send.

/**
 * Takes the lock under which the nonces of `address` are assigned, shared by every process and
 * every sender of that address (a transaction-scoped advisory lock: inside a transaction).
 */
export function lockNonces(trx: Kysely<any>, address: Address): Promise<void> {
  return lockNamed(trx, `relayer_nonce:${address.toLowerCase()}`);
}

/** The next nonce of `address`: its pending transaction count on the node. */
export function pendingNonce(publicClient: PublicClient<Transport, Chain>, address: Address): Promise<number> {
  return publicClient.getTransactionCount({ address, blockTag: "pending" });
}

/** Fees for a transaction now: EIP-1559's estimate, or the gas price on a chain without a base fee. */
export async function estimateFees(publicClient: PublicClient<Transport, Chain>, chain: Chain = publicClient.chain): Promise<Fees> {
  try {
    const { maxFeePerGas, maxPriorityFeePerGas } = await publicClient.estimateFeesPerGas({ chain, type: "eip1559" });
    return { type: "eip1559", maxFeePerGas, maxPriorityFeePerGas };
  } catch (err) {
    if (!(err instanceof Eip1559FeesNotSupportedError)) throw err;
    return { type: "legacy", gasPrice: await publicClient.getGasPrice() };
  }
}

/**
 * Sends a signed transaction; its hash. A failure is a ChainWriteError (errors.ts), unless the node
 * has this exact transaction: a retried HTTP request can land twice ("already known", or "nonce too
 * low" once mined), and Hardhat answers a reverting transaction with an error although it mined it.
 * An error that may hide a transaction on its way (the node unreachable, a timeout) carries its hash.
 */
export async function sendSigned(publicClient: PublicClient<Transport, Chain>, serializedTransaction: Hex, { abi, label }: { abi?: Abi | undefined; label: string }): Promise<Hash> {
  const hash = keccak256(serializedTransaction);
  try {
    await publicClient.sendRawTransaction({ serializedTransaction });
  } catch (err) {
    if (!(await isKnown(publicClient, hash))) {
      const failed = classifyChainError(err, abi, { label });
      // Refused outright, the transaction does not exist; lost on the way, it may still be mined.
      const mayHaveLanded = failed.code === "rpc_unavailable" || failed.code === "timeout" || failed.code === "unknown";
      throw mayHaveLanded ? classifyChainError(err, abi, { label, hash }) : failed;
    }
  }
  return hash;
}

async function isKnown(publicClient: PublicClient<Transport, Chain>, hash: Hash): Promise<boolean> {
  try {
    await publicClient.getTransaction({ hash });
    return true;
  } catch {
    return false;
  }
}

/** Whether `err` is the revert of a second `certify` of the same artwork: the certificate exists, the job is done. */
export function isAlreadyCertified(err: unknown): err is PermanentChainError {
  return isRevertWith(err, "ArtCertificateAlreadyCertified");
}

/** The calldata; the typed request already checked the name and arguments against the ABI. */
function encodeCall(request: { abi: Abi; functionName: string; args: unknown }): Hex {
  return encodeFunctionData({ abi: request.abi, functionName: request.functionName, args: request.args as readonly unknown[] });
}

function labelOf(request: { label?: string | undefined; functionName: string }): string {
  return request.label ?? request.functionName;
}
