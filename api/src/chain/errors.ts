import {
  type Abi,
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  decodeErrorResult,
  ExecutionRevertedError,
  type Hash,
  type Hex,
  HttpRequestError,
  InsufficientFundsError,
  InternalRpcError,
  InvalidParamsRpcError,
  isHex,
  LimitExceededRpcError,
  NonceMaxValueError,
  NonceTooHighError,
  NonceTooLowError,
  RawContractError,
  RpcRequestError,
  TimeoutError,
  TransactionReceiptNotFoundError,
  WaitForTransactionReceiptTimeoutError,
} from "viem";

/**
 * Why a chain write failed, in the two kinds a job queue acts on:
 * - `permanent`: this exact request can never succeed (the contract refuses it, or it is malformed):
 *   fail the job, do not retry.
 * - `transient`: the request may succeed later (node down, timeout, rate limit, nonce race, fees,
 *   relayer out of gas money): retry with backoff.
 *
 * | viem error (anywhere in the cause chain)                                   | kind      | code                |
 * |----------------------------------------------------------------------------|-----------|---------------------|
 * | ContractFunctionRevertedError with revert data (decoded or raw)            | permanent | `reverted`          |
 * | ExecutionRevertedError / RawContractError / RPC code 3 (CallExecutionError,|           |                     |
 * |   EstimateGasExecutionError, TransactionExecutionError), a reverted receipt| permanent | `reverted`          |
 * | ContractFunctionZeroDataError (no contract at the address), InvalidParams  |           |                     |
 * |   (-32602), NonceMaxValue, any viem error that never reached the node (ABI |           |                     |
 * |   encoding, bad address)                                                   | permanent | `invalid_request`   |
 * | HttpRequestError, socket errors                                            | transient | `rpc_unavailable`   |
 * | TimeoutError                                                               | transient | `timeout`           |
 * | LimitExceeded (-32005), HTTP 429, code 429 / -32007                        | transient | `rate_limited`      |
 * | NonceTooLow/High, `already known`, `known transaction`,                    |           |                     |
 * |   `replacement transaction underpriced`                                    | transient | `nonce_conflict`    |
 * | `transaction underpriced`, fee cap below base fee, tip above fee cap       | transient | `underpriced`       |
 * | InsufficientFundsError (the relayer's balance, not the request)            | transient | `insufficient_funds`|
 * | WaitForTransactionReceiptTimeoutError, receipt not found                   | transient | `receipt_timeout`   |
 * | the transaction was replaced by another one with its nonce                 | transient | `replaced`          |
 * | InternalRpcError (-32603) without revert data, any other RPC error, and    |           |                     |
 * |   anything unrecognized                                                    | transient | `unknown`           |
 *
 * Insufficient funds is transient on purpose: the request is fine, the relayer needs topping up, and
 * §2 of the contract says a chain write is queued, never failed, when the chain side is not ready.
 * Unrecognized failures are transient too: a needless retry is bounded by the job's attempts, a
 * write failed for good that would have succeeded is not recoverable.
 */
export type ChainErrorKind = "permanent" | "transient";

export type PermanentChainErrorCode = "reverted" | "invalid_request";
export type TransientChainErrorCode =
  | "rpc_unavailable"
  | "timeout"
  | "rate_limited"
  | "nonce_conflict"
  | "underpriced"
  | "insufficient_funds"
  | "receipt_timeout"
  | "replaced"
  | "unknown";

interface ChainWriteErrorOptions {
  cause?: unknown;
  /** The transaction, when one was signed (it may or may not have reached the chain). */
  hash?: Hash | undefined;
  /** The caller's label of the write (`certify art_…`), for logs. */
  label?: string | undefined;
}

export abstract class ChainWriteError extends Error {
  abstract readonly kind: ChainErrorKind;
  readonly code: PermanentChainErrorCode | TransientChainErrorCode;
  readonly hash: Hash | undefined;
  readonly label: string | undefined;

  constructor(code: PermanentChainErrorCode | TransientChainErrorCode, message: string, options: ChainWriteErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.hash = options.hash;
    this.label = options.label;
  }
}

/** A refusal that no retry can change: a revert (with the decoded custom error when the ABI knows it) or a malformed request. */
export class PermanentChainError extends ChainWriteError {
  override name = "PermanentChainError";
  readonly kind = "permanent";
  declare readonly code: PermanentChainErrorCode;
  /** The custom error's name (`ArtCertificateAlreadyCertified`), `Error` for `require` strings, `Panic` for panics. */
  readonly errorName: string | undefined;
  /** The custom error's decoded arguments. */
  readonly args: readonly unknown[] | undefined;
  /** A human-readable reason: the `Error(string)` text, the panic, or the node's message. */
  readonly reason: string | undefined;
  /** The 4-byte selector of a custom error the ABI does not know. */
  readonly signature: Hex | undefined;
  /** The raw revert data, when the node returned it. */
  readonly data: Hex | undefined;

  constructor(
    code: PermanentChainErrorCode,
    message: string,
    details: {
      errorName?: string | undefined;
      args?: readonly unknown[] | undefined;
      reason?: string | undefined;
      signature?: Hex | undefined;
      data?: Hex | undefined;
    } & ChainWriteErrorOptions = {},
  ) {
    super(code, message, details);
    this.errorName = details.errorName;
    this.args = details.args;
    this.reason = details.reason;
    this.signature = details.signature;
    this.data = details.data;
  }
}

/** A failure worth retrying later: the node, the network, fees, funds or a nonce race. */
export class TransientChainError extends ChainWriteError {
  override name = "TransientChainError";
  readonly kind = "transient";
  declare readonly code: TransientChainErrorCode;

  constructor(code: TransientChainErrorCode, message: string, options: ChainWriteErrorOptions = {}) {
    super(code, message, options);
  }
}

const NONCE_CONFLICT = /nonce too low|nonce too high|already known|known transaction|transaction already imported|replacement transaction underpriced|nonce has already been used|invalid nonce/;
const UNDERPRICED = /underpriced|fee cap less than block base fee|max fee per gas less than block base fee|is too low for the next block|tip above fee cap|max priority fee per gas higher than max fee per gas|transaction is outdated/;
const INSUFFICIENT_FUNDS = /insufficient funds|exceeds transaction sender account balance|doesn't have enough funds|outoffunds/;
const RATE_LIMITED = /rate limit|too many requests|request limit/;
const REVERT_TEXT = /revert|vm exception|invalid opcode|panic/;

/**
 * Maps anything a viem call can throw to a PermanentChainError or a TransientChainError (see the
 * table above). `abi` decodes custom errors the call's own ABI did not cover (raw revert data of
 * `call`, `estimateGas`, `sendRawTransaction`). A ChainWriteError is returned unchanged.
 */
export function classifyChainError(err: unknown, abi?: Abi, options: ChainWriteErrorOptions = {}): ChainWriteError {
  if (err instanceof ChainWriteError) return err;
  const chain = causeChain(err);
  const text = chain.map(messageOf).join("\n").toLowerCase();
  const summary = summarize(err);
  const opts = { cause: err, ...options };

  // viem also wraps a -32603 internal error of a call in ContractFunctionRevertedError: only revert
  // data, the revert code 3 or the node's own revert wording make it a revert.
  const reverted = chain.find((e): e is ContractFunctionRevertedError => e instanceof ContractFunctionRevertedError);
  const nodeText = chain.map((e) => (e instanceof RpcRequestError ? e.details : "")).join("\n").toLowerCase();
  if (
    reverted &&
    (reverted.data ||
      (reverted.raw && reverted.raw !== "0x") ||
      reverted.signature ||
      chain.some((e) => rpcCode(e) === ExecutionRevertedError.code) ||
      REVERT_TEXT.test(nodeText))
  ) {
    return revertError(reverted, abi, opts);
  }

  if (chain.some((e) => e instanceof TimeoutError)) return new TransientChainError("timeout", summary, opts);
  if (chain.some((e) => e instanceof WaitForTransactionReceiptTimeoutError || e instanceof TransactionReceiptNotFoundError)) {
    return new TransientChainError("receipt_timeout", summary, opts);
  }
  if (chain.some((e) => e instanceof LimitExceededRpcError || rpcCode(e) === 429 || rpcCode(e) === -32007 || httpStatus(e) === 429)) {
    return new TransientChainError("rate_limited", summary, opts);
  }
  if (chain.some((e) => e instanceof HttpRequestError || isSocketError(e))) {
    return new TransientChainError("rpc_unavailable", summary, opts);
  }
  if (chain.some((e) => e instanceof NonceMaxValueError)) return new PermanentChainError("invalid_request", summary, opts);
  if (chain.some((e) => e instanceof NonceTooLowError || e instanceof NonceTooHighError) || NONCE_CONFLICT.test(text)) {
    return new TransientChainError("nonce_conflict", summary, opts);
  }
  if (chain.some((e) => e instanceof InsufficientFundsError) || INSUFFICIENT_FUNDS.test(text)) {
    return new TransientChainError("insufficient_funds", summary, opts);
  }
  if (UNDERPRICED.test(text)) return new TransientChainError("underpriced", summary, opts);

  const revertMarker = chain.find(
    (e) => e instanceof ExecutionRevertedError || e instanceof RawContractError || rpcCode(e) === ExecutionRevertedError.code,
  );
  if (revertMarker || (chain.some((e) => rpcCode(e) === InternalRpcError.code) && revertData(chain))) {
    return revertFromData(revertData(chain), abi, revertReason(chain), summary, opts);
  }
  if (RATE_LIMITED.test(text)) return new TransientChainError("rate_limited", summary, opts);

  if (chain.some((e) => e instanceof ContractFunctionZeroDataError || e instanceof InvalidParamsRpcError)) {
    return new PermanentChainError("invalid_request", summary, opts);
  }
  // A viem error that never reached a node (ABI encoding, invalid address, missing account) is a bug
  // in the request, not a chain condition.
  if (err instanceof BaseError && !chain.some((e) => e instanceof RpcRequestError || rpcCode(e) !== undefined)) {
    return new PermanentChainError("invalid_request", summary, opts);
  }
  return new TransientChainError("unknown", summary, opts);
}

/** Whether `err` is a revert carrying the custom error `errorName`. */
export function isRevertWith(err: unknown, errorName: string): err is PermanentChainError {
  return err instanceof PermanentChainError && err.code === "reverted" && err.errorName === errorName;
}

function revertError(reverted: ContractFunctionRevertedError, abi: Abi | undefined, opts: ChainWriteErrorOptions): PermanentChainError {
  // The call's own ABI could not name the error: try the caller's wider one (e.g. a library's errors).
  if (!reverted.data && reverted.raw && reverted.raw !== "0x" && abi) {
    return revertFromData(reverted.raw, abi, reverted.reason, reverted.shortMessage, opts);
  }
  const errorName = reverted.data?.errorName;
  const args = reverted.data?.args;
  const reason = reverted.reason ?? (errorName ? formatCall(errorName, args) : reverted.details || reverted.signature);
  return new PermanentChainError("reverted", describeRevert(errorName, args, reason), {
    ...opts,
    errorName,
    args,
    reason,
    signature: reverted.signature,
    data: reverted.raw,
  });
}

function revertFromData(
  data: Hex | undefined,
  abi: Abi | undefined,
  nodeReason: string | undefined,
  fallback: string,
  opts: ChainWriteErrorOptions,
): PermanentChainError {
  if (data && data !== "0x") {
    try {
      const decoded = decodeErrorResult({ abi: abi ?? [], data });
      const reason =
        decoded.errorName === "Error"
          ? String(decoded.args?.[0])
          : decoded.errorName === "Panic"
            ? `panic ${String(decoded.args?.[0])}`
            : formatCall(decoded.errorName, decoded.args);
      return new PermanentChainError("reverted", describeRevert(decoded.errorName, decoded.args, reason), {
        ...opts,
        errorName: decoded.errorName,
        args: decoded.args,
        reason,
        data,
      });
    } catch {
      // an error the ABI does not know: keep the selector
      const signature = data.length >= 10 ? (data.slice(0, 10) as Hex) : undefined;
      return new PermanentChainError("reverted", describeRevert(undefined, undefined, nodeReason ?? signature ?? fallback), {
        ...opts,
        reason: nodeReason,
        signature,
        data,
      });
    }
  }
  return new PermanentChainError("reverted", describeRevert(undefined, undefined, nodeReason ?? fallback), { ...opts, reason: nodeReason });
}

function describeRevert(errorName: string | undefined, args: readonly unknown[] | undefined, reason: string | undefined): string {
  if (errorName && errorName !== "Error" && errorName !== "Panic") return `reverted with ${formatCall(errorName, args)}`;
  return `reverted${reason ? `: ${reason}` : ""}`;
}

function formatCall(name: string, args: readonly unknown[] | undefined): string {
  return `${name}(${(args ?? []).map((a) => String(a)).join(", ")})`;
}

/** `err` and its causes, outermost first (viem errors and plain objects with `cause`). */
function causeChain(err: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = err;
  while (current !== undefined && current !== null && chain.length < 16 && !chain.includes(current)) {
    chain.push(current);
    current = typeof current === "object" ? (current as { cause?: unknown }).cause : undefined;
  }
  return chain;
}

function messageOf(e: unknown): string {
  if (e instanceof BaseError) return `${e.shortMessage}\n${e.details ?? ""}`;
  if (e instanceof Error) return e.message;
  if (typeof e === "object" && e !== null && typeof (e as { message?: unknown }).message === "string") return (e as { message: string }).message;
  return typeof e === "string" ? e : "";
}

function summarize(err: unknown): string {
  if (err instanceof BaseError) {
    const details = err.details && !err.shortMessage.includes(err.details) ? `: ${err.details}` : "";
    return `${err.shortMessage}${details}`;
  }
  return err instanceof Error ? err.message : String(err);
}

function rpcCode(e: unknown): number | undefined {
  if (typeof e !== "object" || e === null) return undefined;
  const code = (e as { code?: unknown }).code;
  return typeof code === "number" ? code : undefined;
}

function httpStatus(e: unknown): number | undefined {
  if (e instanceof HttpRequestError || e instanceof RpcRequestError) return e.status;
  return undefined;
}

function isSocketError(e: unknown): boolean {
  return e instanceof BaseError && /^(WebSocketRequestError|SocketClosedError)$/.test(e.name);
}

/** The revert data a node attached to its error (`data: "0x…"` or `data: { data: "0x…" }`). */
function revertData(chain: unknown[]): Hex | undefined {
  for (const e of chain) {
    if (typeof e !== "object" || e === null) continue;
    const data = (e as { data?: unknown }).data;
    if (typeof data === "string" && isHex(data)) return data;
    if (typeof data === "object" && data !== null) {
      const nested = (data as { data?: unknown }).data;
      if (typeof nested === "string" && isHex(nested)) return nested;
    }
  }
  return undefined;
}

function revertReason(chain: unknown[]): string | undefined {
  for (const e of chain) {
    if (e instanceof ExecutionRevertedError || e instanceof RpcRequestError) return e.details || undefined;
  }
  return undefined;
}
