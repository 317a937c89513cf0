import { readFileSync } from "node:fs";
import { type Address, createWalletClient, erc20Abi, getAddress, type Hex, http, parseEther, toHex } from "viem";
import { generatePrivateKey, nonceManager, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import { auditAnchorAbi } from "../../contracts/abi/AuditAnchor.ts";
import type { TestApi } from "./api.ts";
import { publicClient } from "./artworks.ts";
import { testEnvironment } from "./environment.ts";

/**
 * A SIWE message for the test API's domain with a fresh nonce, signed by `signer` for `address` (the
 * signer's own, unless a contract wallet's): the body of POST /v1/users/me/wallets and of a sign-in.
 */
export async function signedLink(
  api: Pick<TestApi, "request" | "config">,
  signer: PrivateKeyAccount,
  address: `0x${string}` = signer.address,
  overrides: Partial<Parameters<typeof createSiweMessage>[0]> = {},
): Promise<{ message: string; signature: `0x${string}` }> {
  const nonce = await api.request("POST", "/v1/auth/siwe/nonce");
  if (nonce.status !== 201) throw new Error(`nonce answered ${nonce.status}`);
  const message = createSiweMessage({
    domain: "api.test.local",
    address,
    statement: "Link this wallet to my account",
    uri: "https://api.test.local/wallets",
    version: "1",
    chainId: api.config.chain.id,
    nonce: nonce.body.nonce,
    issuedAt: new Date(),
    ...overrides,
  });
  return { message, signature: await signer.signMessage({ message }) };
}

/** Links `signer`'s wallet to the user of `token`, by its signature; its lower-case address. */
export async function linkedWallet(api: Pick<TestApi, "request" | "config">, token: string, signer: PrivateKeyAccount): Promise<`0x${string}`> {
  const res = await api.request("POST", "/v1/users/me/wallets", { token, body: await signedLink(api, signer) });
  if (res.status !== 201) throw new Error(`linking answered ${res.status}: ${res.text}`);
  return signer.address.toLowerCase() as `0x${string}`;
}

/**
 * A smart-contract wallet (contracts/test/ERC1271WalletMock.sol) that `owner`'s signatures speak for
 * (ERC-1271), deployed from a key of its own, funded here: no shared account's nonces to race. It
 * has no onERC721Received.
 */
export async function erc1271Wallet(owner: PrivateKeyAccount): Promise<`0x${string}`> {
  const client = publicClient();
  const deployerAccount = privateKeyToAccount(generatePrivateKey());
  await client.request({ method: "hardhat_setBalance", params: [deployerAccount.address, toHex(parseEther("1"))] } as never);
  const deployer = createWalletClient({ account: deployerAccount, transport: http(testEnvironment().rpcUrl) });
  const artifact = JSON.parse(readFileSync("artifacts/contracts/test/ERC1271WalletMock.sol/ERC1271WalletMock.json", "utf8"));
  const hash = await deployer.deployContract({ chain: null, abi: artifact.abi, bytecode: artifact.bytecode as Hex, args: [owner.address] });
  return getAddress((await client.waitForTransactionReceipt({ hash })).contractAddress!);
}

/** The local payment token (MockStablecoin): an ERC-20 with an open mint. */
export const stablecoinAbi = [
  ...erc20Abi,
  { type: "function", name: "mint", stateMutability: "nonpayable", inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }], outputs: [] },
] as const;

/** The payment token's balance of `owner`, in base units (6 decimals). */
export function tokenBalance(owner: string): Promise<bigint> {
  return publicClient().readContract({ address: testEnvironment().paymentTokenAddress, abi: erc20Abi, functionName: "balanceOf", args: [getAddress(owner)] });
}

/**
 * A wallet of its own key (no account on the platform), funded with test ETH and `usd` dollars of the
 * local payment token (MockStablecoin's open mint): a buyer on-chain. `client` sends its transactions;
 * `concurrentSends` when it sends several at once.
 */
export async function stablecoinBuyer(usd: number, options: { concurrentSends?: boolean } = {}) {
  // A nonce manager hands out nonces in turn when the wallet sends several transactions at once.
  const account = privateKeyToAccount(generatePrivateKey(), options.concurrentSends ? { nonceManager } : {});
  const client = createWalletClient({ account, transport: http(testEnvironment().rpcUrl) });
  await publicClient().request({ method: "hardhat_setBalance", params: [account.address, toHex(parseEther("1"))] } as never);
  const hash = await client.writeContract({ chain: null, address: testEnvironment().paymentTokenAddress, abi: stablecoinAbi, functionName: "mint", args: [account.address, BigInt(Math.round(usd * 100)) * 10_000n] });
  if ((await publicClient().waitForTransactionReceipt({ hash })).status !== "success") throw new Error("minting the payment token failed");
  return { account, client, address: account.address.toLowerCase() as `0x${string}` };
}

/**
 * Sends a step's transaction from `client` and waits for its receipt: `status` success, or reverted
 * with the revert's data (`revert`, e.g. a custom error's selector and arguments). With `gas` given
 * the node is not asked to estimate first, so a transaction that loses a race is sent and refused by
 * the node as it mines it (Hardhat answers the send with the revert).
 */
export async function sendStep(client: Awaited<ReturnType<typeof stablecoinBuyer>>["client"], tx: { to: string; data: string }, gas?: bigint): Promise<{ status: "success" | "reverted"; transactionHash?: Hex; revert?: Hex }> {
  try {
    const hash = await client.sendTransaction({ chain: null, to: getAddress(tx.to), data: tx.data as Hex, ...(gas ? { gas } : {}) });
    const receipt = await publicClient().waitForTransactionReceipt({ hash });
    return { status: receipt.status, transactionHash: receipt.transactionHash };
  } catch (error) {
    const revert = revertData(error);
    if (!revert) throw error;
    return { status: "reverted", revert };
  }
}

function revertData(error: unknown): Hex | undefined {
  for (let e = error as { data?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.data === "string" && e.data.startsWith("0x")) return e.data as Hex;
  }
  return undefined;
}

/** A fresh funded account, so a file's data never collides with other tests'. */
export async function fundedAccount() {
  const account = privateKeyToAccount(generatePrivateKey());
  await publicClient().request({
    method: "hardhat_setBalance",
    params: [account.address, toHex(parseEther("100"))],
  } as never);
  return { account, wallet: createWalletClient({ account, transport: http(testEnvironment().rpcUrl) }) };
}

/** Deploys an AuditAnchor administered by a fresh account, which also holds ANCHORER_ROLE. */
export async function deployAuditAnchor(): Promise<{ address: Address; anchorer: Awaited<ReturnType<typeof fundedAccount>>["wallet"] }> {
  const { account, wallet } = await fundedAccount();
  const artifact = JSON.parse(
    readFileSync(new URL("../../artifacts/contracts/AuditAnchor.sol/AuditAnchor.json", import.meta.url), "utf8"),
  ) as { bytecode: Hex };
  const deployHash = await wallet.deployContract({ abi: auditAnchorAbi, bytecode: artifact.bytecode, args: [account.address], chain: null });
  const { contractAddress } = await publicClient().waitForTransactionReceipt({ hash: deployHash });
  const role = await publicClient().readContract({ address: contractAddress!, abi: auditAnchorAbi, functionName: "ANCHORER_ROLE" });
  const grantHash = await wallet.writeContract({ address: contractAddress!, abi: auditAnchorAbi, functionName: "grantRole", args: [role, account.address], chain: null });
  await publicClient().waitForTransactionReceipt({ hash: grantHash });
  return { address: contractAddress!, anchorer: wallet };
}
