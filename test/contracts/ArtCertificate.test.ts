import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { artifacts, network } from "hardhat";
import { getAddress, keccak256, parseEventLogs, toBytes, zeroAddress, zeroHash } from "viem";

import { ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID, ADMIN_DELAY_SECONDS, interfaceId, named } from "./helpers.js";

const { viem, networkHelpers } = await network.create();
const publicClient = await viem.getPublicClient();
const { admin, relayer, alice, bob } = named(await viem.getWalletClients(), "admin", "relayer", "alice", "bob");

const CERTIFIER_ROLE = keccak256(toBytes("CERTIFIER_ROLE"));
const DEFAULT_ADMIN_ROLE = zeroHash;
const HASH_1 = keccak256(toBytes("certificate document 1"));
const HASH_2 = keccak256(toBytes("certificate document 2"));

async function deployCertificate() {
  const certificate = await viem.deployContract("ArtCertificate", [admin.account.address, zeroAddress]);
  await certificate.write.grantRole([CERTIFIER_ROLE, relayer.account.address]);
  const asRelayer = { account: relayer.account };
  return { certificate, asRelayer };
}

describe("ArtCertificate", () => {
  describe("certify", () => {
    it("test_certify_assignsSequentialIdsFromOne", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      assert.equal(await certificate.read.totalCertified(), 0n);
      for (const [index, artworkId] of ["art_1", "art_2", "art_3"].entries()) {
        await certificate.write.certify([alice.account.address, artworkId, HASH_1, `ipfs://${artworkId}`, zeroAddress, 0n], asRelayer);
        const tokenId = BigInt(index + 1);
        assert.equal(await certificate.read.tokenIdOfArtwork([keccak256(toBytes(artworkId))]), tokenId);
        assert.equal(await certificate.read.ownerOf([tokenId]), getAddress(alice.account.address));
      }
      assert.equal(await certificate.read.totalCertified(), 3n);
      assert.equal(await certificate.read.balanceOf([alice.account.address]), 3n);
    });

    it("test_certify_emitsArtworkCertifiedAndTransfer", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      const hash = await certificate.write.certify(
        [alice.account.address, "art_01H", HASH_1, "ipfs://meta/1", bob.account.address, 500n],
        asRelayer,
      );
      await viem.assertions.emitWithArgs(hash, certificate, "ArtworkCertified", [
        1n,
        keccak256(toBytes("art_01H")),
        getAddress(alice.account.address),
        "art_01H",
        HASH_1,
        "ipfs://meta/1",
        getAddress(bob.account.address),
        500n,
      ]);
      await viem.assertions.emitWithArgs(hash, certificate, "Transfer", [zeroAddress, getAddress(alice.account.address), 1n]);
    });

    it("test_certify_emitsArtworkCertifiedAfterTheMint", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      const hash = await certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", zeroAddress, 0n], asRelayer);
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      const names = parseEventLogs({ abi: certificate.abi, logs: receipt.logs }).map((log) => log.eventName);
      assert.deepEqual(names, ["Transfer", "MetadataUpdate", "ArtworkCertified"]);
    });

    it("test_certify_storesTheCertificate", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      const hash = await certificate.write.certify([alice.account.address, "art_1", HASH_1, "ipfs://1", zeroAddress, 0n], asRelayer);
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
      assert.deepEqual(await certificate.read.certificateOf([1n]), {
        artworkKey: keccak256(toBytes("art_1")),
        certificateHash: HASH_1,
        certifiedAt: block.timestamp,
      });
    });

    it("test_certify_keysArtworksByKeccakOfUtf8Bytes", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      const artworkId = "œuvre-été-01";
      assert.equal(await certificate.read.artworkKeyOf([artworkId]), keccak256(toBytes(artworkId)));
      await certificate.write.certify([alice.account.address, artworkId, HASH_1, "u", zeroAddress, 0n], asRelayer);
      assert.equal(await certificate.read.tokenIdOfArtwork([keccak256(toBytes(artworkId))]), 1n);
    });

    it("test_certify_revertsWhenArtworkAlreadyCertified", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", zeroAddress, 0n], asRelayer);
      await certificate.write.certify([alice.account.address, "art_2", HASH_1, "u", zeroAddress, 0n], asRelayer);
      // A retried job with a different hash, owner and URI still cannot mint a second certificate.
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.certify([bob.account.address, "art_1", HASH_2, "other", zeroAddress, 0n], asRelayer),
        certificate,
        "ArtCertificateAlreadyCertified",
        [keccak256(toBytes("art_1")), 1n],
      );
      assert.equal(await certificate.read.totalCertified(), 2n);
      assert.equal((await certificate.read.certificateOf([1n])).certificateHash, HASH_1);
    });

    it("test_certify_revertsOnEmptyArtworkId", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await viem.assertions.revertWithCustomError(
        certificate.write.certify([alice.account.address, "", HASH_1, "u", zeroAddress, 0n], asRelayer),
        certificate,
        "ArtCertificateEmptyArtworkId",
      );
    });

    it("test_certify_revertsOnZeroHash", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await viem.assertions.revertWithCustomError(
        certificate.write.certify([alice.account.address, "art_1", zeroHash, "u", zeroAddress, 0n], asRelayer),
        certificate,
        "ArtCertificateEmptyHash",
      );
    });

    it("test_certify_revertsWhenRoyaltyAboveMax", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      assert.equal(await certificate.read.MAX_ROYALTY_BPS(), 1000n);
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", bob.account.address, 1001n], asRelayer),
        certificate,
        "ArtCertificateRoyaltyTooHigh",
        [1001n, 1000n],
      );
      // The cap itself is allowed.
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", bob.account.address, 1000n], asRelayer);
      assert.deepEqual(await certificate.read.royaltyInfo([1n, 10_000n]), [getAddress(bob.account.address), 1000n]);
    });

    it("test_certify_revertsOnZeroRoyaltyReceiverWithRoyalty", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", zeroAddress, 250n], asRelayer),
        certificate,
        "ERC2981InvalidTokenRoyaltyReceiver",
        [1n, zeroAddress],
      );
    });

    it("test_certify_revertsOnZeroRecipient", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.certify([zeroAddress, "art_1", HASH_1, "u", zeroAddress, 0n], asRelayer),
        certificate,
        "ERC721InvalidReceiver",
        [zeroAddress],
      );
    });

    it("test_certify_mintsToContractsWithoutReceiverHook", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      // A contract with no onERC721Received (the certificate contract itself) still receives: `_mint`, not `_safeMint`.
      await certificate.write.certify([certificate.address, "art_1", HASH_1, "u", zeroAddress, 0n], asRelayer);
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(certificate.address));
    });

    it("test_certify_setsPerTokenRoyalty", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", bob.account.address, 750n], asRelayer);
      await certificate.write.certify([alice.account.address, "art_2", HASH_1, "u", bob.account.address, 0n], asRelayer);
      await certificate.write.certify([alice.account.address, "art_3", HASH_1, "u", alice.account.address, 1n], asRelayer);
      assert.deepEqual(await certificate.read.royaltyInfo([1n, 1_000_000n]), [getAddress(bob.account.address), 75_000n]);
      assert.deepEqual(await certificate.read.royaltyInfo([2n, 1_000_000n]), [zeroAddress, 0n]);
      assert.deepEqual(await certificate.read.royaltyInfo([3n, 1_000_000n]), [getAddress(alice.account.address), 100n]);
    });

    it("test_certify_setsTokenURI", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "https://api.example/v1/certificates/1.json", zeroAddress, 0n], asRelayer);
      assert.equal(await certificate.read.tokenURI([1n]), "https://api.example/v1/certificates/1.json");
      assert.equal(await certificate.read.name(), "Art Platform Certificate");
      assert.equal(await certificate.read.symbol(), "ARTC");
    });

    it("test_certify_revertsForNonCertifier", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      for (const caller of [admin, alice]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", zeroAddress, 0n], { account: caller.account }),
          certificate,
          "AccessControlUnauthorizedAccount",
          [getAddress(caller.account.address), CERTIFIER_ROLE],
        );
      }
    });
  });

  describe("certifyBatch", () => {
    const request = (artworkId: string, hash = HASH_1, to = alice.account.address) => ({
      to,
      artworkId,
      certificateHash: hash,
      tokenURI: `ipfs://${artworkId}`,
      royaltyReceiver: to,
      royaltyBps: 500n,
    });

    it("test_certifyBatch_mintsEachInOrderAsCertifyWould", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      const hash = await certificate.write.certifyBatch([[request("art_1"), request("art_2", HASH_2, bob.account.address)]], asRelayer);
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      const certified = parseEventLogs({ abi: certificate.abi, logs: receipt.logs, eventName: "ArtworkCertified" });
      assert.deepEqual(
        certified.map((log) => [log.args.tokenId, log.args.artworkId, log.args.owner, log.args.certificateHash, log.args.tokenURI]),
        [
          [1n, "art_1", getAddress(alice.account.address), HASH_1, "ipfs://art_1"],
          [2n, "art_2", getAddress(bob.account.address), HASH_2, "ipfs://art_2"],
        ],
      );
      assert.equal(await certificate.read.ownerOf([2n]), getAddress(bob.account.address));
      assert.equal(await certificate.read.tokenIdOfArtwork([keccak256(toBytes("art_2"))]), 2n);
      assert.deepEqual(await certificate.read.royaltyInfo([2n, 10_000n]), [getAddress(bob.account.address), 500n]);
      assert.equal(await certificate.read.totalCertified(), 2n);
    });

    it("test_certifyBatch_skipsArtworksAlreadyCertifiedAndReturnsTheirTokens", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", zeroAddress, 0n], asRelayer);
      // A retried batch, with a duplicate inside it: one token per artwork, nothing reverts.
      const batch = [request("art_1", HASH_2, bob.account.address), request("art_2"), request("art_2", HASH_2, bob.account.address)];
      const { result } = await publicClient.simulateContract({ address: certificate.address, abi: certificate.abi, functionName: "certifyBatch", args: [batch], account: relayer.account });
      assert.deepEqual(result, [1n, 2n, 2n]);
      const hash = await certificate.write.certifyBatch([batch], asRelayer);
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      const certified = parseEventLogs({ abi: certificate.abi, logs: receipt.logs, eventName: "ArtworkCertified" });
      assert.deepEqual(certified.map((log) => log.args.artworkId), ["art_2"]);
      assert.equal(await certificate.read.totalCertified(), 2n);
      assert.equal((await certificate.read.certificateOf([1n])).certificateHash, HASH_1);
      assert.equal((await certificate.read.certificateOf([2n])).certificateHash, HASH_1);
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(alice.account.address));
    });

    it("test_certifyBatch_revertsWholeBatchOnAnInvalidRequest", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await viem.assertions.revertWithCustomError(
        certificate.write.certifyBatch([[request("art_1"), request("")]], asRelayer),
        certificate,
        "ArtCertificateEmptyArtworkId",
      );
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.certifyBatch([[request("art_1"), { ...request("art_2"), royaltyBps: 1001n }]], asRelayer),
        certificate,
        "ArtCertificateRoyaltyTooHigh",
        [1001n, 1000n],
      );
      assert.equal(await certificate.read.totalCertified(), 0n);
    });

    it("test_certifyBatch_revertsForNonCertifier", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.certifyBatch([[request("art_1")]], { account: alice.account }),
        certificate,
        "AccessControlUnauthorizedAccount",
        [getAddress(alice.account.address), CERTIFIER_ROLE],
      );
    });

    it("test_certifyBatch_acceptsAnEmptyBatch", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certifyBatch([[]], asRelayer);
      assert.equal(await certificate.read.totalCertified(), 0n);
    });
  });

  describe("roles", () => {
    it("test_constructor_grantsAdminRoleOnly", async () => {
      const certificate = await viem.deployContract("ArtCertificate", [bob.account.address, zeroAddress]);
      assert.equal(await certificate.read.CERTIFIER_ROLE(), CERTIFIER_ROLE);
      assert.equal(await certificate.read.hasRole([DEFAULT_ADMIN_ROLE, bob.account.address]), true);
      assert.equal(await certificate.read.hasRole([DEFAULT_ADMIN_ROLE, admin.account.address]), false);
      assert.equal(await certificate.read.hasRole([CERTIFIER_ROLE, bob.account.address]), false);
    });

    it("test_grantRole_thenRevokeRole_controlsCertify", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      const asAlice = { account: alice.account };
      await viem.assertions.emitWithArgs(
        certificate.write.grantRole([CERTIFIER_ROLE, alice.account.address]),
        certificate,
        "RoleGranted",
        [CERTIFIER_ROLE, getAddress(alice.account.address), getAddress(admin.account.address)],
      );
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", zeroAddress, 0n], asAlice);
      await certificate.write.revokeRole([CERTIFIER_ROLE, alice.account.address]);
      assert.equal(await certificate.read.hasRole([CERTIFIER_ROLE, alice.account.address]), false);
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.certify([alice.account.address, "art_2", HASH_1, "u", zeroAddress, 0n], asAlice),
        certificate,
        "AccessControlUnauthorizedAccount",
        [getAddress(alice.account.address), CERTIFIER_ROLE],
      );
    });

    it("test_constructor_revertsForZeroAdmin", async () => {
      await assert.rejects(viem.deployContract("ArtCertificate", [zeroAddress, zeroAddress]), /AccessControlInvalidDefaultAdmin/);
    });

    it("test_grantRole_revertsForDefaultAdminRole", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      // The admin role has one holder and moves only in two steps (beginDefaultAdminTransfer).
      for (const write of [certificate.write.grantRole, certificate.write.revokeRole]) {
        await viem.assertions.revertWithCustomError(
          write([DEFAULT_ADMIN_ROLE, bob.account.address]),
          certificate,
          "AccessControlEnforcedDefaultAdminRules",
        );
      }
      assert.equal(await certificate.read.defaultAdmin(), getAddress(admin.account.address));
      assert.equal(await certificate.read.owner(), getAddress(admin.account.address));
    });

    it("test_beginDefaultAdminTransfer_movesTheAdminAfterTheDelay", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      assert.equal(await certificate.read.defaultAdminDelay(), ADMIN_DELAY_SECONDS);
      await certificate.write.beginDefaultAdminTransfer([bob.account.address]);
      const [, acceptSchedule] = await certificate.read.pendingDefaultAdmin();
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.acceptDefaultAdminTransfer({ account: bob.account }),
        certificate,
        "AccessControlEnforcedDefaultAdminDelay",
        [acceptSchedule],
      );
      await networkHelpers.time.increaseTo(acceptSchedule + 1);
      await certificate.write.acceptDefaultAdminTransfer({ account: bob.account });
      assert.equal(await certificate.read.hasRole([DEFAULT_ADMIN_ROLE, bob.account.address]), true);
      assert.equal(await certificate.read.hasRole([DEFAULT_ADMIN_ROLE, admin.account.address]), false);
      // Roles granted by the old admin stay: the relayer keeps certifying across an admin handover.
      assert.equal(await certificate.read.hasRole([CERTIFIER_ROLE, relayer.account.address]), true);
    });

    it("test_grantRole_revertsForNonAdmin", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.grantRole([CERTIFIER_ROLE, alice.account.address], { account: relayer.account }),
        certificate,
        "AccessControlUnauthorizedAccount",
        [getAddress(relayer.account.address), DEFAULT_ADMIN_ROLE],
      );
    });
  });

  describe("setTokenURI", () => {
    it("test_setTokenURI_emitsMetadataUpdateAndKeepsTheCertificate", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "ipfs://old", zeroAddress, 0n], asRelayer);
      const before = await certificate.read.certificateOf([1n]);
      await networkHelpers.time.increase(3600);
      await viem.assertions.emitWithArgs(certificate.write.setTokenURI([1n, "ipfs://new"]), certificate, "MetadataUpdate", [1n]);
      assert.equal(await certificate.read.tokenURI([1n]), "ipfs://new");
      assert.deepEqual(await certificate.read.certificateOf([1n]), before);
    });

    it("test_setTokenURI_revertsForNonAdmin", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "ipfs://old", zeroAddress, 0n], asRelayer);
      for (const caller of [relayer, alice]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          certificate.write.setTokenURI([1n, "ipfs://new"], { account: caller.account }),
          certificate,
          "AccessControlUnauthorizedAccount",
          [getAddress(caller.account.address), DEFAULT_ADMIN_ROLE],
        );
      }
      assert.equal(await certificate.read.tokenURI([1n]), "ipfs://old");
    });

    it("test_setTokenURI_revertsForNonexistentToken", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.setTokenURI([1n, "ipfs://new"]),
        certificate,
        "ArtCertificateNonexistentToken",
        [1n],
      );
    });
  });

  describe("immutability", () => {
    it("test_certificate_survivesTransfersAndURIChanges", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", bob.account.address, 300n], asRelayer);
      const before = await certificate.read.certificateOf([1n]);
      await certificate.write.transferFrom([alice.account.address, bob.account.address, 1n], { account: alice.account });
      await certificate.write.safeTransferFrom([bob.account.address, alice.account.address, 1n], { account: bob.account });
      await certificate.write.setTokenURI([1n, "v2"]);
      assert.deepEqual(await certificate.read.certificateOf([1n]), before);
      assert.equal(await certificate.read.ownerOf([1n]), getAddress(alice.account.address));
      assert.deepEqual(await certificate.read.royaltyInfo([1n, 10_000n]), [getAddress(bob.account.address), 300n]);
    });

    it("test_abi_offersNoWayToChangeAHashOrBurn", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      const writes = certificate.abi
        .filter((item) => item.type === "function" && item.stateMutability !== "view" && item.stateMutability !== "pure")
        .map((item) => (item.type === "function" ? item.name : ""))
        .sort();
      assert.deepEqual(writes, [
        "acceptDefaultAdminTransfer",
        "approve",
        "beginDefaultAdminTransfer",
        "cancelDefaultAdminTransfer",
        "certify",
        "certifyBatch",
        "changeDefaultAdminDelay",
        "grantRole",
        "renounceRole",
        "revokeRole",
        "rollbackDefaultAdminDelay",
        "safeTransferFrom",
        "safeTransferFrom",
        "setApprovalForAll",
        "setTokenURI",
        "transferFrom",
      ]);
    });

    it("test_transferFrom_revertsToZeroAddress", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", zeroAddress, 0n], asRelayer);
      await viem.assertions.revertWithCustomErrorWithArgs(
        certificate.write.transferFrom([alice.account.address, zeroAddress, 1n], { account: alice.account }),
        certificate,
        "ERC721InvalidReceiver",
        [zeroAddress],
      );
      assert.equal(await certificate.read.totalCertified(), 1n);
    });
  });

  describe("lookups", () => {
    it("test_certificateOf_revertsForNonexistentToken", async () => {
      const { certificate, asRelayer } = await networkHelpers.loadFixture(deployCertificate);
      await certificate.write.certify([alice.account.address, "art_1", HASH_1, "u", zeroAddress, 0n], asRelayer);
      for (const tokenId of [0n, 2n]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          certificate.read.certificateOf([tokenId]),
          certificate,
          "ArtCertificateNonexistentToken",
          [tokenId],
        );
      }
    });

    it("test_tokenIdOfArtwork_isZeroWhenNotCertified", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      assert.equal(await certificate.read.tokenIdOfArtwork([keccak256(toBytes("art_unknown"))]), 0n);
    });
  });

  describe("supportsInterface", () => {
    it("test_supportsInterface_reportsEveryStandard", async () => {
      const { certificate } = await networkHelpers.loadFixture(deployCertificate);
      const { abi } = await artifacts.readArtifact("IArtCertificate");
      const supported = {
        erc165: "0x01ffc9a7",
        erc721: "0x80ac58cd",
        erc721Metadata: "0x5b5e139f",
        erc2981: "0x2a55205a",
        erc4906: "0x49064906",
        accessControl: "0x7965db0b",
        accessControlDefaultAdminRules: ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID,
        artCertificate: interfaceId(abi),
      } as const;
      for (const [name, id] of Object.entries(supported)) {
        assert.equal(await certificate.read.supportsInterface([id]), true, name);
      }
      for (const id of ["0xffffffff", "0xd9b67a26"] as const) {
        assert.equal(await certificate.read.supportsInterface([id]), false, id);
      }
    });
  });
});
