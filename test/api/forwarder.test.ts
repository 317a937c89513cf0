/**
 * relayForwarded against the run's chain and the platform Ignition deployed: a custodial wallet that
 * never held ETH approves ArtMarket through ArtForwarder (the relayer pays), then a settlement moves
 * its certificate; an inner revert is named with the target's ABI before anything is sent.
 */
import { randomBytes } from "node:crypto";
import { type Address, type Hash, type Hex, keccak256, parseEther, parseEventLogs, toHex, zeroAddress } from "viem";
import { english, generateMnemonic, generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.ts";
import { artForwarderAbi } from "../../contracts/abi/ArtForwarder.ts";
import { artMarketAbi } from "../../contracts/abi/ArtMarket.ts";
import { type ChainClients, createChainClients } from "../../api/src/chain/clients.ts";
import { CustodyWallet } from "../../api/src/chain/custody.ts";
import { PermanentChainError } from "../../api/src/chain/errors.ts";
import { relayForwarded } from "../../api/src/chain/forwarder.ts";
import { Relayer } from "../../api/src/chain/relayer.ts";
import { setRoleAsDeployer } from "../support/artworks.ts";
import { testEnvironment } from "../support/environment.ts";

const env = testEnvironment();
const custody = new CustodyWallet(generateMnemonic(english));
const buyer = privateKeyToAccount(generatePrivateKey()).address;

let clients: ChainClients;
let relayer: Relayer;

/** A fresh relayer key with the certifier and settler roles, granted by the deployer (account #0). */
async function freshRelayer(): Promise<ChainClients> {
  const relayerClients = createChainClients({ rpcUrl: env.rpcUrl, chainId: env.chainId, relayerPrivateKey: generatePrivateKey() });
  const { publicClient, relayerAccount } = relayerClients;
  await publicClient.request({ method: "hardhat_setBalance", params: [relayerAccount.address, toHex(parseEther("100"))] } as never);
  const grants = [
    { address: env.artCertificateAddress, abi: artCertificateAbi, role: "CERTIFIER_ROLE" },
    { address: env.artMarketAddress, abi: artMarketAbi, role: "SETTLER_ROLE" },
  ] as const;
  for (const grant of grants) {
    const role = (await publicClient.readContract({ address: grant.address, abi: grant.abi, functionName: grant.role })) as Hex;
    await setRoleAsDeployer(grant, role, relayerAccount.address);
  }
  return relayerClients;
}

beforeAll(async () => {
  clients = await freshRelayer();
  relayer = new Relayer({ publicClient: clients.publicClient, account: clients.relayerAccount, chain: clients.chain });
});

const deps = () => ({ relayer, publicClient: clients.publicClient, forwarder: env.artForwarderAddress, chainId: env.chainId });

async function certifyTo(owner: Address): Promise<bigint> {
  const artworkId = `art_fwd_${randomBytes(6).toString("hex")}`;
  await relayer.write({
    address: env.artCertificateAddress,
    abi: artCertificateAbi,
    functionName: "certify",
    args: [owner, artworkId, keccak256(toHex(artworkId)), `ipfs://${artworkId}`, zeroAddress, 0n],
  });
  return clients.publicClient.readContract({
    address: env.artCertificateAddress,
    abi: artCertificateAbi,
    functionName: "tokenIdOfArtwork",
    args: [keccak256(toHex(artworkId))],
  });
}

const forwarderNonce = (address: Address) =>
  clients.publicClient.readContract({ address: env.artForwarderAddress, abi: artForwarderAbi, functionName: "nonces", args: [address] });

describe("relayForwarded", () => {
  it("is what ArtCertificate trusts", async () => {
    const trusted = await clients.publicClient.readContract({ address: env.artCertificateAddress, abi: artCertificateAbi, functionName: "trustedForwarder" });
    expect(trusted).toBe(env.artForwarderAddress);
  });

  it("lets a custodial wallet without ETH approve ArtMarket, after which a settlement moves its certificate", async () => {
    const wallet = custody.accountAt(1);
    const tokenId = await certifyTo(wallet.address);
    const { publicClient } = clients;
    expect(await publicClient.getBalance({ address: wallet.address })).toBe(0n);
    const nonceBefore = await forwarderNonce(wallet.address);

    const submitted: { hash: Hash; nonce: number }[] = [];
    const result = await relayForwarded(deps(), wallet, {
      address: env.artCertificateAddress,
      abi: artCertificateAbi,
      functionName: "setApprovalForAll",
      args: [env.artMarketAddress, true],
      label: "approve ArtMarket",
      onSubmitted: (tx) => void submitted.push(tx),
    });

    expect(result.receipt.status).toBe("success");
    expect(submitted.map((tx) => tx.hash)).toEqual([result.hash]);
    const transaction = await publicClient.getTransaction({ hash: result.hash });
    expect(transaction.from.toLowerCase()).toBe(clients.relayerAccount.address.toLowerCase());
    expect(transaction.to?.toLowerCase()).toBe(env.artForwarderAddress.toLowerCase());
    const events = parseEventLogs({ abi: [...artCertificateAbi, ...artForwarderAbi], logs: result.receipt.logs });
    expect(events.map((e) => e.eventName)).toEqual(["ApprovalForAll", "ExecutedForwardRequest"]);
    expect(events[0]!.args).toEqual({ owner: wallet.address, operator: env.artMarketAddress, approved: true });
    expect(events[1]!.args).toEqual({ signer: wallet.address, nonce: nonceBefore, success: true });
    expect(
      await publicClient.readContract({
        address: env.artCertificateAddress,
        abi: artCertificateAbi,
        functionName: "isApprovedForAll",
        args: [wallet.address, env.artMarketAddress],
      }),
    ).toBe(true);
    expect(await forwarderNonce(wallet.address)).toBe(nonceBefore + 1n);
    expect(await publicClient.getBalance({ address: wallet.address })).toBe(0n);

    const saleId = `txn_fwd_${randomBytes(6).toString("hex")}`;
    await relayer.write({
      address: env.artMarketAddress,
      abi: artMarketAbi,
      functionName: "settle",
      args: [saleId, tokenId, wallet.address, buyer, 25_000n],
    });
    expect(await publicClient.readContract({ address: env.artCertificateAddress, abi: artCertificateAbi, functionName: "ownerOf", args: [tokenId] })).toBe(
      buyer,
    );
  });

  it("names an inner revert with the target's ABI and sends nothing", async () => {
    const wallet = custody.accountAt(2);
    const { publicClient } = clients;
    const relayerNonce = await publicClient.getTransactionCount({ address: clients.relayerAccount.address });
    const missingTokenId = 10n ** 12n;

    const error = await relayForwarded(deps(), wallet, {
      address: env.artCertificateAddress,
      abi: artCertificateAbi,
      functionName: "transferFrom",
      args: [wallet.address, buyer, missingTokenId],
    }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PermanentChainError);
    expect(error).toMatchObject({ code: "reverted", errorName: "ERC721NonexistentToken", args: [missingTokenId] });
    expect(await forwarderNonce(wallet.address)).toBe(0n);
    expect(await publicClient.getTransactionCount({ address: clients.relayerAccount.address })).toBe(relayerNonce);
  });

  it("takes concurrent requests of one signer one after the other", async () => {
    const wallet = custody.accountAt(3);
    const operators = [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address];
    const results = await Promise.all(
      operators.map((operator) =>
        relayForwarded(deps(), wallet, {
          address: env.artCertificateAddress,
          abi: artCertificateAbi,
          functionName: "setApprovalForAll",
          args: [operator, true],
        }),
      ),
    );
    expect(results.map((r) => r.receipt.status)).toEqual(["success", "success"]);
    expect(await forwarderNonce(wallet.address)).toBe(2n);
  });
});
