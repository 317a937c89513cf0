import { readFileSync } from "node:fs";
import { createWalletClient, getAddress, type Hex, http, parseEther, toHex } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";
import type { TestApi } from "../api/helpers.ts";
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
