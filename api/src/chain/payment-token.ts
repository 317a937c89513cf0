import { type Address, erc20Abi, type Hex, keccak256, type LocalAccount, parseSignature, toBytes } from "viem";

/**
 * The payment token's EIP-3009 `transferWithAuthorization` (USDC's, and MockStablecoin's on a local
 * chain): a holder's EIP-712 signature lets anyone move its balance once per nonce. The platform
 * withdraws a custodial wallet's payment token this way: the custodial key signs, the relayer sends
 * (the custodial wallet needs no ETH), and the nonce is the withdrawal's, so the chain refuses a
 * second transfer of it.
 */

export const TRANSFER_WITH_AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

/** ERC-20 and EIP-3009 as USDC has them (v, r, s signatures), with MockStablecoin's errors to decode its reverts. */
export const paymentTokenAbi = [
  ...erc20Abi,
  {
    type: "function",
    name: "transferWithAuthorization",
    stateMutability: "nonpayable",
    inputs: [...TRANSFER_WITH_AUTHORIZATION_TYPES.TransferWithAuthorization, { name: "v", type: "uint8" }, { name: "r", type: "bytes32" }, { name: "s", type: "bytes32" }],
    outputs: [],
  },
  { type: "function", name: "authorizationState", stateMutability: "view", inputs: [{ name: "authorizer", type: "address" }, { name: "nonce", type: "bytes32" }], outputs: [{ type: "bool" }] },
  { type: "error", name: "MockStablecoinAuthorizationUsed", inputs: [{ name: "authorizer", type: "address" }, { name: "nonce", type: "bytes32" }] },
  { type: "error", name: "MockStablecoinAuthorizationNotValidNow", inputs: [{ name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }] },
  { type: "error", name: "MockStablecoinInvalidSignature", inputs: [{ name: "from", type: "address" }] },
] as const;

/** The EIP-3009 nonce of a platform record (a withdrawal's id): one transfer per record, ever. */
export function authorizationNonce(recordId: string): Hex {
  return keccak256(toBytes(recordId));
}

/**
 * `from`'s signed authorization to move `value` to `to` until `validBefore` (unix seconds), with
 * `nonce`: the arguments of transferWithAuthorization. `domain`: the token's name and EIP-712 version
 * (USDC: "USD Coin" or "USDC", version "2").
 */
export async function signTransferAuthorization(
  signer: LocalAccount,
  domain: { name: string; version: string; chainId: number; verifyingContract: Address },
  message: { to: Address; value: bigint; validBefore: bigint; nonce: Hex },
) {
  const full = { from: signer.address, to: message.to, value: message.value, validAfter: 0n, validBefore: message.validBefore, nonce: message.nonce };
  const signature = await signer.signTypedData({ domain, types: TRANSFER_WITH_AUTHORIZATION_TYPES, primaryType: "TransferWithAuthorization", message: full });
  const { v, r, s } = parseSignature(signature);
  return [full.from, full.to, full.value, full.validAfter, full.validBefore, full.nonce, Number(v ?? 27n), r, s] as const;
}
