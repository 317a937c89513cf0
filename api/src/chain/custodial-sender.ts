import type { Kysely } from "kysely";
import { type Abi, type Address, type Chain, type Hash, type Hex, keccak256, type LocalAccount, parseTransaction, type PublicClient, type Transport } from "viem";
import { PermanentChainError, TransientChainError } from "./errors.ts";
import { estimateFees, lockNonces, pendingNonce, type Relayer, sendSigned, type WriteResult } from "./relayer.ts";

/** A transaction signed once by a custodial wallet, kept by its caller, sent as it is on every attempt. */
export interface SignedTransaction {
  raw: Hex;
  hash: Hash;
  nonce: number;
}

/** A signed transaction's hash (keccak256 of its raw bytes): known before it is sent, so its caller keeps only the transaction. */
export function signedTransactionHash(raw: Hex): Hash {
  return keccak256(raw);
}

/** What a caller keeps of its signed transaction (a row of its own), read and written under the wallet's nonce lock. */
export interface SignedTransactionStore {
  /** The transaction signed for this effect by an earlier attempt, if any. */
  signed(db: Kysely<any>): Promise<SignedTransaction | null>;
  /**
   * Another transaction of the wallet signed and not settled yet, described, or null: this one waits
   * for it (its nonce would wait behind one that may never be sent).
   */
  unsettled(db: Kysely<any>): Promise<string | null>;
  /** Keeps the transaction just signed, in the transaction that holds the wallet's nonce lock. */
  keep(db: Kysely<any>, signed: SignedTransaction): Promise<void>;
}

/** A call a custodial wallet makes itself (a contract that trusts no forwarder), with the gas it is signed with. */
export interface CustodialCall {
  account: LocalAccount;
  to: Address;
  data: Hex;
  gas: bigint;
  /** Decodes a revert of the mined transaction. */
  abi: Abi;
  label: string;
  /** Called once the transaction is in the node's pool (or mined), before its receipt is awaited. */
  onSubmitted?: ((hash: Hash) => void | Promise<void>) | undefined;
}

/** Room for the base fee to double before it is mined: the transaction is never signed again. */
const FEE_HEADROOM = 2n;

/**
 * The transactions a custodial wallet signs itself, sent the way the Relayer sends its own: the nonce
 * read from the node under the address's nonce lock (`lockNonces`, shared by the processes), a send
 * that the node already has counts as sent, failures classified by errors.ts, receipts awaited by
 * the Relayer. Unlike the Relayer's, such a transaction is signed once and kept (by the caller's
 * store) before it is sent, so every attempt sends that same transaction and its effect happens at
 * most once whatever is retried; one signed, unsettled transaction per wallet at a time. The wallet
 * is given the ETH that transaction's gas can cost by the Relayer (a second top-up only leaves change).
 */
export class CustodialSender {
  constructor(private readonly deps: { db: Kysely<any>; publicClient: PublicClient<Transport, Chain>; relayer: Relayer; chainId: number }) {}

  /**
   * Signs `call` once (or finds it signed), sends it unless it is mined already, and resolves once it
   * is mined. The wallet's nonce used by another transaction is a PermanentChainError: nothing of this
   * call can be sent any more.
   */
  async send(call: CustodialCall, store: SignedTransactionStore): Promise<WriteResult> {
    const { db, publicClient, relayer } = this.deps;
    const from = call.account.address;
    const signed = (await store.signed(db)) ?? (await this.signOnce(call, store));
    if (!(await this.mined(signed.hash))) {
      if ((await publicClient.getTransactionCount({ address: from, blockTag: "latest" })) > signed.nonce && !(await this.mined(signed.hash))) {
        throw new PermanentChainError("invalid_request", `the nonce ${signed.nonce} of ${from} was used by another transaction than ${signed.hash}`, { hash: signed.hash, label: call.label });
      }
      await this.fundGas(from, signed.raw, call);
      await sendSigned(publicClient, signed.raw, { abi: call.abi, label: call.label });
    }
    await call.onSubmitted?.(signed.hash);
    return relayer.waitForReceipt(signed.hash, { abi: call.abi, label: call.label });
  }

  /** Signs `call` with the wallet's next nonce and has the store keep it, under the wallet's nonce lock; waits while another of the wallet's is unsettled. */
  async signOnce(call: CustodialCall, store: SignedTransactionStore): Promise<SignedTransaction> {
    const { db, publicClient, chainId } = this.deps;
    return db.transaction().execute(async (trx) => {
      await lockNonces(trx, call.account.address);
      // Signed meanwhile by another attempt (a lease that ran out): that transaction, never a second.
      const mine = await store.signed(trx);
      if (mine) return mine;
      const other = await store.unsettled(trx);
      if (other) throw new TransientChainError("nonce_conflict", `${other} is being sent from ${call.account.address}: this one follows it`, { label: call.label });
      const [nonce, fees] = await Promise.all([pendingNonce(publicClient, call.account.address), estimateFees(publicClient)]);
      const raw = await call.account.signTransaction({
        chainId,
        to: call.to,
        data: call.data,
        value: 0n,
        gas: call.gas,
        nonce,
        ...(fees.type === "eip1559"
          ? { type: "eip1559", maxFeePerGas: fees.maxFeePerGas * FEE_HEADROOM, maxPriorityFeePerGas: fees.maxPriorityFeePerGas }
          : { type: "legacy", gasPrice: fees.gasPrice * FEE_HEADROOM }),
      });
      const signed = { raw, hash: signedTransactionHash(raw), nonce };
      await store.keep(trx, signed);
      return signed;
    });
  }

  private async mined(hash: Hash): Promise<boolean> {
    return (await this.deps.publicClient.getTransactionReceipt({ hash }).catch(() => null)) !== null;
  }

  /** Tops the wallet up to what the transaction's gas can cost at its fee cap. */
  private async fundGas(from: Address, raw: Hex, call: CustodialCall): Promise<void> {
    const tx = parseTransaction(raw);
    const gasCost = call.gas * (tx.maxFeePerGas ?? tx.gasPrice ?? 0n);
    const balance = await this.deps.publicClient.getBalance({ address: from });
    if (balance < gasCost) await this.deps.relayer.transferValue({ to: from, value: gasCost - balance, label: `${call.label} gas` });
  }
}
