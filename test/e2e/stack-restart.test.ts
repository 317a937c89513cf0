/**
 * `npm start` again on the same DATA_DIR: the chain comes back from its journal and the database is
 * kept (a user's key works, the certified artwork is there and the chain names the same owner, a
 * wallet's own transfer stands, nothing is archived, the admin key is kept and `npm run admin-key`
 * makes another). A database recorded before ArtExchange existed gains one, deployed over the same
 * platform, its data kept. A chain changed from outside the stack cannot come back: its journal and the
 * database are archived, saying why. `npm start -- --fresh` starts empty on purpose. The tests run
 * in order on one data dir, each start following the one before (a start takes seconds, not a
 * data dir of its own each).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { type Address, createPublicClient, createWalletClient, type Hex, http, parseEther, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { hardhat } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artExchangeAbi } from "../../contracts/abi/ArtExchange.ts";
import { runningClusterUrl, withClient } from "../../tools/stack/postgres.ts";
import { binPath, childEnv, repoRoot } from "../../tools/stack/processes.ts";
import { adminSdk, apiError, artworkForm, createSdkUser, sdk, type SdkUser } from "../support/sdk.ts";
import { HARDHAT_ACCOUNT_0_KEY } from "../../tools/stack/settings.ts";
import { type BootedStack, bootStack } from "../support/stack.ts";
import { waitFor } from "../support/wait.ts";

const dataDir = mkdtempSync(path.join(os.tmpdir(), "art-platform-restart-"));
const boot = (args: string[] = []) => bootStack({ env: { DATA_DIR: dataDir }, args });
const archives = () => (existsSync(path.join(dataDir, "archive")) ? readdirSync(path.join(dataDir, "archive")).sort() : []);
const chainOf = (stack: BootedStack) => createPublicClient({ chain: hardhat, transport: http(stack.rpcUrl) });
/** Ctrl-C, and the exit 0 of an ordered shutdown (else the output and the logs, to see why). */
async function stopCleanly(running: BootedStack): Promise<void> {
  expect(await running.stop(), running.diagnostics()).toEqual({ code: 0, signal: null });
}
const artCertificateOf = (stack: BootedStack) => /ArtCertificate:\s+(0x[0-9a-fA-F]{40})/.exec(stack.output())![1] as Address;
const artExchangeOf = (stack: BootedStack) => /ArtExchange:\s+(0x[0-9a-fA-F]{40})/.exec(stack.output())![1] as Address;

/** What the first start made: a user with a key, a certified artwork, a wallet that sent its own transfer. */
let before: {
  adminKey: string;
  artist: SdkUser;
  artistWallet: Address;
  artworkId: string;
  tokenId: bigint;
  walletKey: Hex;
  walletBalance: bigint;
  head: { number: bigint; hash: Hex };
};
let stack: BootedStack | null = null;

afterAll(async () => {
  await stack?.dispose();
  if (process.env.KEEP_TEST_DIR !== "1") rmSync(dataDir, { recursive: true, force: true });
}, 90_000);

beforeAll(async () => {
  stack = await boot();
  const adminKey = stack.adminApiKey!;
  const artist = await createSdkUser(stack.url, { role: "artist", admin: adminSdk(stack.url, adminKey) });
  const { data: created } = await artist.api.POST("/v1/artworks", { body: artworkForm() });
  const certified = await waitFor(
    async () => {
      const { data } = await sdk(stack!.url).GET("/v1/artworks/{id}", { params: { path: { id: created.id } } });
      return data.status === "certified" ? data : null;
    },
    { timeoutMs: 60_000, what: `certification of ${created.id}` },
  );
  const { data: me } = await artist.api.GET("/v1/users/me");

  // A wallet of its own, funded by a dev account, sends a transfer it signed itself.
  const chain = chainOf(stack);
  const walletKey = generatePrivateKey();
  const wallet = createWalletClient({ account: privateKeyToAccount(walletKey), chain: hardhat, transport: http(stack.rpcUrl) });
  const [devAccount] = await createWalletClient({ chain: hardhat, transport: http(stack.rpcUrl) }).getAddresses();
  await chain.waitForTransactionReceipt({
    hash: await createWalletClient({ chain: hardhat, transport: http(stack.rpcUrl) }).sendTransaction({ account: devAccount!, to: wallet.account.address, value: parseEther("3") }),
  });
  await chain.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: devAccount!, value: parseEther("1") }) });

  const head = await chain.getBlock();
  before = {
    adminKey,
    artist,
    artistWallet: me.wallet_address as Address,
    artworkId: created.id,
    tokenId: BigInt(certified.token_id!),
    walletKey,
    walletBalance: await chain.getBalance({ address: wallet.account.address }),
    head: { number: head.number, hash: head.hash },
  };
  await stopCleanly(stack);
}, 240_000);

describe("a second npm start on the same data", () => {
  it("brings the chain back and keeps the database: the key works, the artwork and its owner on chain, the wallet's transfer; nothing archived", async () => {
    stack = await boot();
    const output = stack.output();
    expect(output).toMatch(/Chain journal:\s+\S+blocks\.jsonl \(\d+ blocks brought back from an earlier start\)/);
    expect(output).toContain("Admin API key:   kept from an earlier start (not shown again; npm run admin-key prints a new one)");
    expect(stack.adminApiKey).toBeNull();
    expect(output).not.toMatch(/Archived:|Moved|Deploying/);
    expect(archives()).toEqual([]);

    // Every block mined before the Ctrl-C is there, under the same hash.
    const chain = chainOf(stack);
    expect((await chain.getBlock({ blockNumber: before.head.number })).hash).toBe(before.head.hash);
    const owner = await chain.readContract({ address: artCertificateOf(stack), abi: artCertificateAbi, functionName: "ownerOf", args: [before.tokenId] });
    expect(owner).toBe(before.artistWallet);
    expect(await chain.getBalance({ address: privateKeyToAccount(before.walletKey).address })).toBe(before.walletBalance);

    const artist = sdk(stack.url, { apiKey: before.artist.apiKey });
    const { data: me } = await artist.GET("/v1/users/me");
    expect(me.id).toBe(before.artist.id);
    const { data: artwork } = await sdk(stack.url).GET("/v1/artworks/{id}", { params: { path: { id: before.artworkId } } });
    expect({ status: artwork.status, token_id: artwork.token_id, artist_id: artwork.artist_id }).toEqual({
      status: "certified",
      token_id: Number(before.tokenId),
      artist_id: before.artist.id,
    });
    // The old admin key still works, and npm run admin-key makes another for the same admin.
    const { data: admin } = await adminSdk(stack.url, before.adminKey).GET("/v1/users/me");
    const printed = await promisify(execFile)(binPath("tsx"), ["tools/admin-key.ts"], {
      cwd: repoRoot,
      env: childEnv({ DATA_DIR: dataDir, DATABASE_URL: "", CUSTODY_MNEMONIC: "" }),
    });
    const newKey = /^Admin API key \(shown once\): (sk_\S+)$/m.exec(printed.stdout)?.[1];
    expect(newKey, printed.stdout + printed.stderr).toBeDefined();
    const { data: again } = await adminSdk(stack.url, newKey!).GET("/v1/users/me");
    expect({ id: again.id, role: again.role }).toEqual({ id: admin.id, role: "admin" });
  }, 180_000);

  it("records what is mined while it runs, up to the Ctrl-C", async () => {
    const chain = chainOf(stack!);
    const wallet = createWalletClient({ account: privateKeyToAccount(before.walletKey), chain: hardhat, transport: http(stack!.rpcUrl) });
    await chain.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: wallet.account.address, value: 1n }) });
    const head = await chain.getBlock();
    await stopCleanly(stack!);

    stack = await boot();
    expect(stack.output()).not.toMatch(/Archived:/);
    expect((await chainOf(stack).getBlock({ blockNumber: head.number })).hash).toBe(head.hash);
  }, 180_000);

  it("keeps a cheat made through the Chain RPC: hardhat_setBalance is journaled where it happened and comes back", async () => {
    const chain = chainOf(stack!);
    const someone = privateKeyToAccount(generatePrivateKey());
    await chain.request({ method: "hardhat_setBalance", params: [someone.address, toHex(parseEther("77"))] } as never);
    const wallet = createWalletClient({ account: someone, chain: hardhat, transport: http(stack!.rpcUrl) });
    await chain.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: someone.address, value: 1n }) });
    const balance = await chain.getBalance({ address: someone.address });
    await stopCleanly(stack!);

    stack = await boot();
    expect(stack.output()).not.toMatch(/Archived:|could not be brought back/);
    expect(await chainOf(stack).getBalance({ address: someone.address })).toBe(balance);
  }, 180_000);

  it("loses nothing anyone was told of when the Hardhat node is killed with writes in flight: the next start keeps the database", async () => {
    // Certifications and a wallet's transfers under way; the node is killed as soon as one certification is confirmed.
    const artist = await createSdkUser(stack!.url, { role: "artist", admin: adminSdk(stack!.url, stack!.adminApiKey ?? before.adminKey) });
    const created = await Promise.all([0, 1, 2, 3].map(async () => (await artist.api.POST("/v1/artworks", { body: artworkForm() })).data.id as string));
    const chain = chainOf(stack!);
    const wallet = createWalletClient({ account: privateKeyToAccount(before.walletKey), chain: hardhat, transport: http(stack!.rpcUrl) });
    const transfers = [1n, 2n, 3n].map((value) => wallet.sendTransaction({ to: wallet.account.address, value }).catch(() => null));
    await waitFor(
      async () => {
        const { data } = await sdk(stack!.url).GET("/v1/artworks/{id}", { params: { path: { id: created[0]! } } });
        return data.status === "certified" ? data : null;
      },
      { timeoutMs: 60_000, what: `certification of ${created[0]}` },
    );
    await Promise.all(transfers);
    // One more transfer, and the kill the moment its receipt is in: the block a client was just told of.
    const last = await chain.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: wallet.account.address, value: 4n }), pollingInterval: 20 });
    const node = stack!.processes.find((p) => p.name === "hardhat node")!;
    process.kill(node.pid, "SIGKILL");
    const head = { number: last.blockNumber, hash: last.blockHash };
    expect((await stack!.exited).code).toBe(1);
    const archivedBefore = archives().length;

    stack = await boot();
    const output = stack.output();
    expect(output, stack.diagnostics()).not.toMatch(/has seen more of the chain than its journal|could not be brought back|Archived:/);
    expect(archives()).toHaveLength(archivedBefore);
    // Every block a client saw is back under its hash, and the platform finishes what was under way.
    expect((await chainOf(stack).getBlock({ blockNumber: head.number })).hash).toBe(head.hash);
    const { data: me } = await sdk(stack.url, { apiKey: artist.apiKey }).GET("/v1/users/me");
    expect(me.id).toBe(artist.id);
    for (const id of created) {
      await waitFor(
        async () => {
          const { data } = await sdk(stack!.url).GET("/v1/artworks/{id}", { params: { path: { id } } });
          return data.status === "certified" ? data : null;
        },
        { timeoutMs: 90_000, what: `certification of ${id} after the restart` },
      );
    }
  }, 300_000);

  it("adds ArtExchange to a chain deployed before it, over the same platform, keeping the data", async () => {
    const [certificate, oldExchange] = [artCertificateOf(stack!), artExchangeOf(stack!)];
    // As a database recorded by the version before the exchange.
    let databaseUrl = runningClusterUrl(path.join(dataDir, "postgres"), "art_platform")!;
    await withClient(databaseUrl, (client) => client.query("update chain_deployment set art_exchange_address = null, payment_token_address = null"));
    await stopCleanly(stack!);

    stack = await boot();
    databaseUrl = runningClusterUrl(path.join(dataDir, "postgres"), "art_platform")!;
    const output = stack.output();
    expect(output).toContain("Deploying MockStablecoin and ArtExchange with Hardhat Ignition...");
    expect(output).not.toMatch(/Deploying ArtForwarder|Archived:/);
    expect(artCertificateOf(stack)).toBe(certificate);
    expect(artExchangeOf(stack)).not.toBe(oldExchange);
    const chain = chainOf(stack);
    const exchange = { address: artExchangeOf(stack), abi: artExchangeAbi } as const;
    expect(await chain.readContract({ ...exchange, functionName: "certificate" })).toBe(certificate);
    const relayer = privateKeyToAccount(HARDHAT_ACCOUNT_0_KEY).address;
    expect(await chain.readContract({ ...exchange, functionName: "hasRole", args: [await chain.readContract({ ...exchange, functionName: "ORDER_SIGNER_ROLE" }), relayer] })).toBe(true);
    const { data: me } = await sdk(stack.url, { apiKey: before.artist.apiKey }).GET("/v1/users/me");
    expect(me.id).toBe(before.artist.id);

    // Recorded, so the next start finds it (as the second start above found the first one).
    const { rows } = await withClient(databaseUrl, (client) => client.query("select art_exchange_address from chain_deployment"));
    expect(rows).toEqual([{ art_exchange_address: exchange.address }]);
  }, 180_000);
});

describe("a chain that cannot be brought back", () => {
  it("is archived with its database when state was changed from outside the stack, saying why, and the stack starts empty", async () => {
    // A cheat call made on the node itself, past the Chain RPC (which would have journaled it), then a
    // block on top of it: the journal cannot give that block back.
    const chain = chainOf(stack!);
    const node = createPublicClient({ chain: hardhat, transport: http(stack!.nodeRpcUrl()) });
    await node.request({ method: "hardhat_setBalance", params: [privateKeyToAccount(before.walletKey).address, toHex(parseEther("1000"))] } as never);
    const wallet = createWalletClient({ account: privateKeyToAccount(before.walletKey), chain: hardhat, transport: http(stack!.rpcUrl) });
    await chain.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: wallet.account.address, value: 1n }) });
    await stopCleanly(stack!);

    stack = await boot();
    const output = stack.output();
    expect(output).toMatch(/The local chain could not be brought back from its journal: block \d+ came out as 0x[0-9a-f]{64} where the journal recorded 0x[0-9a-f]{64} \(state changed from outside the stack/);
    expect(output).toMatch(/Moved the journal aside to \S+archive\/\S+\/chain/);
    expect(output).toMatch(/The local database belongs to another chain/);
    expect(output).toMatch(/Archived:\s+\S+archive\/\S+ \(the earlier data; the chain's journal did not replay/);
    const [archived] = archives();
    expect(archives()).toHaveLength(1);
    expect(readdirSync(path.join(dataDir, "archive", archived!)).sort()).toEqual(["chain", "postgres"]);
    expect(output).toMatch(/Chain journal:\s+\S+ \(a new chain\)/);
    expect(stack.adminApiKey).toMatch(/^sk_/);
    expect((await apiError(sdk(stack.url, { apiKey: before.artist.apiKey }).GET("/v1/users/me"))).status).toBe(401);
    expect((await apiError(adminSdk(stack.url, before.adminKey).GET("/v1/users/me"))).status).toBe(401);
  }, 180_000);

  it("archives a database that saw blocks the journal lost (a stack killed outright), keeping the chain it has", async () => {
    // A certification, then the journal loses every block from the one that holds it.
    const artist = await createSdkUser(stack!.url, { role: "artist", admin: adminSdk(stack!.url, stack!.adminApiKey!) });
    const { data: created } = await artist.api.POST("/v1/artworks", { body: artworkForm() });
    const certified = await waitFor(
      async () => {
        const { data } = await sdk(stack!.url).GET("/v1/artworks/{id}/certificate", { params: { path: { id: created.id } } });
        return data.verified && data.block_number ? data : null;
      },
      { timeoutMs: 60_000, what: `certification of ${created.id}` },
    );
    await stopCleanly(stack!);
    const journal = path.join(dataDir, "chain", "blocks.jsonl");
    const lines = readFileSync(journal, "utf8").trimEnd().split("\n");
    const kept = lines.filter((line) => {
      const entry = JSON.parse(line) as { type: string; number?: number };
      return entry.type !== "block" || entry.number! < Number(certified.block_number);
    });
    expect(kept.length).toBeLessThan(lines.length);
    writeFileSync(journal, `${kept.join("\n")}\n`);
    const archivedBefore = archives().length;

    stack = await boot();
    const output = stack.output();
    expect(output).toMatch(/The local database has seen more of the chain than its journal brought back \((the indexer had reached block \d+, the chain ends at block \d+|chain operation \S+ was confirmed in transaction 0x[0-9a-f]{64}, which the chain does not have)\)/);
    expect(output).toMatch(/Chain journal:\s+\S+ \(\d+ blocks brought back from an earlier start\)/);
    expect(archives()).toHaveLength(archivedBefore + 1);
    expect(readdirSync(path.join(dataDir, "archive", archives().at(-1)!))).toEqual(["postgres"]);
    // A new database (a new admin key, the old artist unknown) on the chain that was brought back.
    expect(stack.adminApiKey).toMatch(/^sk_/);
    expect((await apiError(sdk(stack.url, { apiKey: artist.apiKey }).GET("/v1/users/me"))).status).toBe(401);
  }, 240_000);

  it("npm start -- --fresh starts empty on purpose, the earlier data archived", async () => {
    const previousKey = stack!.adminApiKey!;
    const archivedBefore = archives().length;
    await stopCleanly(stack!);

    stack = await boot(["--fresh"]);
    const output = stack.output();
    expect(output).toMatch(/Starting empty \(--fresh\): moved the earlier database and chain journal aside to \S+archive/);
    expect(output).toMatch(/Archived:\s+\S+ \(the earlier data; npm start -- --fresh\)/);
    expect(output).not.toMatch(/belongs to another chain|could not be brought back/);
    expect(archives()).toHaveLength(archivedBefore + 1);
    expect(readdirSync(path.join(dataDir, "archive", archives().at(-1)!)).sort()).toEqual(["chain", "postgres"]);
    expect(stack.adminApiKey).toMatch(/^sk_/);
    expect(stack.adminApiKey).not.toBe(previousKey);
    expect((await apiError(adminSdk(stack.url, previousKey).GET("/v1/users/me"))).status).toBe(401);
  }, 180_000);
});
