import { readFileSync } from "node:fs";
import { type Address, createWalletClient, type Hex, http, parseEther, toHex } from "viem";
import { HDKey, hdKeyToAccount } from "viem/accounts";
import { mnemonicToSeedSync } from "@scure/bip39";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import type { TestUser } from "./api.ts";
import { custodyMnemonic } from "./custody.ts";
import { type ArtworkPlatform, publicClient } from "./artworks.ts";
import { testEnvironment } from "./environment.ts";
import { artworkForm, sdkOf } from "./sdk.ts";
import { waitFor } from "./wait.ts";

/**
 * A new artwork of `owner` (uploaded through the SDK, as multipart), certified on-chain and indexed
 * (its certificate is in the indexer's views). Not within a minute: the error says which half is
 * missing (the API's certification and its chain operation, or the indexer and where it is).
 */
export async function certifiedArtwork(
  p: Pick<ArtworkPlatform, "api" | "views"> & Partial<Pick<ArtworkPlatform, "db" | "indexer">>,
  owner: TestUser,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const api = sdkOf(p.api.url, owner);
  const { data: created, response } = await api.POST("/v1/artworks", { body: artworkForm(extra) });
  if (response.status !== 201) throw new Error(`artwork creation answered ${response.status}, not 201`);
  const id = created.id;
  const seen = { status: "unknown", indexed: false };
  await waitFor(
    async () => {
      const { data: got } = await api.GET("/v1/artworks/{id}", { params: { path: { id } } });
      const row = await p.views.selectFrom("certificate").select("token_id").where("artwork_id", "=", id).executeTakeFirst();
      Object.assign(seen, { status: got.status, indexed: row !== undefined });
      return got.status === "certified" && row;
    },
    { timeoutMs: 60_000, what: `certification of ${id}` },
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}; ${await certificationDiagnosis(p, id, seen)}`);
  });
  return id;
}

/** Where a certification stands: the artwork's status, its chain operation, the chain's head, the indexer's block and its log's last lines. */
async function certificationDiagnosis(p: Partial<Pick<ArtworkPlatform, "db" | "indexer">>, id: string, seen: { status: string; indexed: boolean }): Promise<string> {
  const parts = [`artwork status ${seen.status}, in the indexer's views: ${seen.indexed}`];
  const guard = async (what: string, fn: () => Promise<unknown>) => parts.push(`${what}: ${await fn().then((v) => JSON.stringify(v), (e: Error) => `unavailable (${e.message})`)}`);
  if (p.db) await guard("chain operation", () => p.db!.selectFrom("chain_operations").select(["status", "attempts", "tx_hash", "last_error"]).where("key", "=", `certify:${id}`).executeTakeFirst());
  await guard("chain head", async () => Number(await publicClient().getBlockNumber({ cacheTime: 0 })));
  if (p.indexer) {
    await guard("indexer /status", async () => (await fetch(`${p.indexer!.url}/status`)).json());
    parts.push(`indexer log (${p.indexer.logFile}), last lines:\n${readFileSync(p.indexer.logFile, "utf8").trimEnd().split("\n").slice(-12).join("\n")}`);
  }
  return parts.join("; ");
}

/** The indexed certificate of an artwork: its token id and current owner (lower-case). */
export async function indexedCertificate(p: Pick<ArtworkPlatform, "views">, artworkId: string): Promise<{ tokenId: bigint; owner: string }> {
  const row = await p.views.selectFrom("certificate").select(["token_id", "owner"]).where("artwork_id", "=", artworkId).executeTakeFirstOrThrow();
  return { tokenId: BigInt(row.token_id), owner: row.owner.toLowerCase() };
}

export async function ownerOnChain(tokenId: bigint): Promise<string> {
  const owner = await publicClient().readContract({ address: testEnvironment().artCertificateAddress, abi: artCertificateAbi, functionName: "ownerOf", args: [tokenId] });
  return owner.toLowerCase();
}

export async function walletOf(p: Pick<ArtworkPlatform, "db">, userId: string): Promise<string> {
  const row = await p.db.selectFrom("users").select("wallet_address").where("id", "=", userId).executeTakeFirstOrThrow();
  return row.wallet_address.toLowerCase();
}

/**
 * A wallet client holding `userId`'s custodial key (derived from the test file's custodyMnemonic()), funded
 * with test ETH: the user acting on the chain directly, as an external wallet would.
 */
export async function walletClientOf(p: ArtworkPlatform, userId: string) {
  const { custody_index } = await p.db.selectFrom("users").select("custody_index").where("id", "=", userId).executeTakeFirstOrThrow();
  if (custody_index === null) throw new Error(`${userId} has no custodial key`);
  const account = hdKeyToAccount(HDKey.fromMasterSeed(mnemonicToSeedSync(custodyMnemonic())), { addressIndex: custody_index });
  await publicClient().request({ method: "hardhat_setBalance", params: [account.address, toHex(parseEther("10"))] } as never);
  return createWalletClient({ account, transport: http(testEnvironment().rpcUrl) });
}

/** Sends a certificate-contract call from `userId`'s wallet and waits for it to be mined. */
export async function certificateCallFrom(
  p: ArtworkPlatform,
  userId: string,
  call: { functionName: "setApprovalForAll"; args: readonly [Address, boolean] } | { functionName: "transferFrom"; args: readonly [Address, Address, bigint] },
): Promise<Hex> {
  const wallet = await walletClientOf(p, userId);
  const hash = await wallet.writeContract({ chain: null, address: testEnvironment().artCertificateAddress, abi: artCertificateAbi, ...call } as never);
  const receipt = await publicClient().waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new Error(`${call.functionName} from ${userId} reverted`);
  return hash;
}
