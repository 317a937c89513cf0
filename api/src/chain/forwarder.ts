import {
  type Abi,
  type Address,
  concat,
  encodeFunctionData,
  type Hash,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import { artCertificateAbi } from "../../../contracts/abi/ArtCertificate.ts";
import { artForwarderAbi } from "../../../contracts/abi/ArtForwarder.ts";
import { classifyChainError, isRevertWith, PermanentChainError, TransientChainError } from "./errors.ts";
import type { Relayer, WriteResult } from "./relayer.ts";

/** The EIP-712 domain of ArtForwarder (OpenZeppelin's ERC2771Forwarder named "ArtPlatformForwarder"), without chain and address. */
export const FORWARDER_DOMAIN = { name: "ArtPlatformForwarder", version: "1" } as const;

/** OpenZeppelin 5's ForwardRequest: the nonce is signed (the forwarder's `nonces(from)`), not sent. */
export const FORWARD_REQUEST_TYPES = {
  ForwardRequest: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "gas", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint48" },
    { name: "data", type: "bytes" },
  ],
} as const;

const DEADLINE_SECONDS = 3600;
/** Headroom over the inner call's estimate (which already counts a transaction's base cost it does not pay). */
const GAS_HEADROOM_PERCENT = 120n;

export interface ForwarderDeps {
  relayer: Relayer;
  publicClient: PublicClient;
  /** ArtForwarder: ArtCertificate's `trustedForwarder()`. */
  forwarder: Address;
  chainId: number;
}

export interface ForwardedCall {
  address: Address;
  abi: Abi;
  functionName: string;
  args: readonly unknown[];
  label?: string | undefined;
  onSubmitted?: ((tx: { hash: Hash; nonce: number }) => void | Promise<void>) | undefined;
}

// The forwarder's nonce is per signer: one request of a signer at a time in this process (other
// processes racing for it are told apart below).
const inFlight = new Map<string, Promise<unknown>>();

/**
 * Relays a call as `signer` (a custodial account from CustodyWallet.accountAt) through the ERC-2771 forwarder: signs the
 * EIP-712 ForwardRequest (nonce read from the forwarder, deadline now + 1 h) and sends ArtForwarder.execute from the relayer.
 * Resolves once mined (WriteResult); a revert of the inner call is a PermanentChainError decoded with `abi`.
 *
 * OpenZeppelin's forwarder does not bubble the inner call's revert data (`execute` reverts with `FailedCall()`),
 * so the inner call is first run as the forwarder would run it (from the forwarder, the signer appended to
 * the calldata): that names its error before anything is signed or sent, and gives the gas to forward. A
 * request that loses its nonce to another process's request of the same signer is a TransientChainError
 * (`nonce_conflict`): retrying signs with the new nonce.
 */
export async function relayForwarded(deps: ForwarderDeps, signer: LocalAccount, call: ForwardedCall): Promise<WriteResult> {
  const key = `${deps.forwarder.toLowerCase()}:${signer.address.toLowerCase()}`;
  const previous = inFlight.get(key) ?? Promise.resolve();
  const run = previous.catch(() => undefined).then(() => relay(deps, signer, call));
  const tail = run.catch(() => undefined);
  inFlight.set(key, tail);
  void tail.then(() => {
    if (inFlight.get(key) === tail) inFlight.delete(key);
  });
  return run;
}

async function relay({ relayer, publicClient, forwarder, chainId }: ForwarderDeps, signer: LocalAccount, call: ForwardedCall): Promise<WriteResult> {
  const label = call.label ?? `${call.functionName} as ${signer.address}`;
  const data = encodeFunctionData({ abi: call.abi, functionName: call.functionName, args: call.args });
  const inner = { account: forwarder, to: call.address, data: concat([data, signer.address]) };

  let nonce: bigint;
  let gas: bigint;
  let now: bigint;
  try {
    [nonce, gas, { timestamp: now }] = await Promise.all([
      publicClient.readContract({ address: forwarder, abi: artForwarderAbi, functionName: "nonces", args: [signer.address] }),
      publicClient.estimateGas(inner),
      publicClient.getBlock({ blockTag: "latest" }),
    ]);
  } catch (err) {
    throw classifyChainError(err, call.abi, { label });
  }

  const request = {
    from: signer.address,
    to: call.address,
    value: 0n,
    gas: (gas * GAS_HEADROOM_PERCENT) / 100n,
    deadline: Number(now) + DEADLINE_SECONDS,
    data,
  };
  const signature = await signer.signTypedData({
    domain: { ...FORWARDER_DOMAIN, chainId, verifyingContract: forwarder },
    types: FORWARD_REQUEST_TYPES,
    primaryType: "ForwardRequest",
    message: { ...request, nonce },
  });

  try {
    return await relayer.write({
      address: forwarder,
      abi: [...artForwarderAbi, ...call.abi] as Abi,
      functionName: "execute",
      args: [{ ...request, signature }],
      label,
      onSubmitted: call.onSubmitted,
    });
  } catch (err) {
    if (isRevertWith(err, "FailedCall")) throw (await innerRevert(publicClient, inner, call.abi, label, err)) ?? err;
    if (isRevertWith(err, "ERC2771ForwarderInvalidSigner")) {
      throw new TransientChainError("nonce_conflict", `${label}: the forwarder's nonce of ${signer.address} moved on (another request of the signer)`, {
        cause: err,
        hash: err.hash,
        label,
      });
    }
    throw err;
  }
}

/** The inner call's own revert, replayed as the forwarder makes it (the state may have changed since: then null). */
async function innerRevert(
  publicClient: PublicClient,
  inner: { account: Address; to: Address; data: Hex },
  abi: Abi,
  label: string,
  failed: PermanentChainError,
): Promise<PermanentChainError | null> {
  try {
    await publicClient.call(inner);
    return null;
  } catch (err) {
    const replayed = classifyChainError(err, abi, { label, hash: failed.hash });
    return replayed instanceof PermanentChainError ? replayed : null;
  }
}

const forwarders = new Map<string, Promise<Address>>();

/** ArtCertificate's `trustedForwarder()` (immutable: read once per process and certificate; a failed read is tried again). */
export function trustedForwarderOf(publicClient: PublicClient, certificate: Address): Promise<Address> {
  const key = certificate.toLowerCase();
  let found = forwarders.get(key);
  if (!found) {
    found = publicClient.readContract({ address: certificate, abi: artCertificateAbi, functionName: "trustedForwarder" }).catch((err: unknown) => {
      forwarders.delete(key);
      throw err;
    });
    forwarders.set(key, found);
  }
  return found;
}
