import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { artifacts, network } from "hardhat";
import { getAddress, keccak256, toBytes, zeroHash } from "viem";

import { ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID, ADMIN_DELAY_SECONDS, interfaceId, named } from "./helpers.js";

const { viem, networkHelpers } = await network.create();
const publicClient = await viem.getPublicClient();
const { admin, relayer, alice } = named(await viem.getWalletClients(), "admin", "relayer", "alice");

const ANCHORER_ROLE = keccak256(toBytes("ANCHORER_ROLE"));
const DEFAULT_ADMIN_ROLE = zeroHash;
const asRelayer = { account: relayer.account };

const root = (label: string) => keccak256(toBytes(`root ${label}`));
const head = (label: string) => keccak256(toBytes(`head ${label}`));

async function deployAnchor() {
  const anchor = await viem.deployContract("AuditAnchor", [admin.account.address]);
  await anchor.write.grantRole([ANCHORER_ROLE, relayer.account.address]);
  return { anchor };
}

describe("AuditAnchor", () => {
  describe("anchor", () => {
    it("test_anchor_recordsContiguousRangesWithSequentialIndexes", async () => {
      const { anchor } = await networkHelpers.loadFixture(deployAnchor);
      assert.equal(await anchor.read.lastAnchoredSeq(), 0n);
      assert.equal(await anchor.read.anchorCount(), 0n);

      const hash = await anchor.write.anchor([1n, 10n, root("a"), head("a")], asRelayer);
      await viem.assertions.emitWithArgs(hash, anchor, "LedgerAnchored", [1n, 1n, 10n, root("a"), head("a")]);
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      const block = await publicClient.getBlock({ blockNumber: receipt.blockNumber });
      // One entry is a range too.
      await viem.assertions.emitWithArgs(anchor.write.anchor([11n, 11n, root("b"), head("b")], asRelayer), anchor, "LedgerAnchored", [
        2n, 11n, 11n, root("b"), head("b"),
      ]);
      const { result } = await publicClient.simulateContract({
        address: anchor.address,
        abi: anchor.abi,
        functionName: "anchor",
        args: [12n, 40n, root("c"), head("c")],
        account: relayer.account,
      });
      assert.equal(result, 3n);
      await anchor.write.anchor([12n, 40n, root("c"), head("c")], asRelayer);

      assert.equal(await anchor.read.lastAnchoredSeq(), 40n);
      assert.equal(await anchor.read.anchorCount(), 3n);
      assert.deepEqual(await anchor.read.anchorAt([1n]), {
        firstSeq: 1n,
        lastSeq: 10n,
        merkleRoot: root("a"),
        headHash: head("a"),
        anchoredAt: block.timestamp,
      });
      assert.deepEqual((await anchor.read.anchorAt([3n])).lastSeq, 40n);
    });

    it("test_anchor_revertsOutOfOrder", async () => {
      const { anchor } = await networkHelpers.loadFixture(deployAnchor);
      // The first range starts at 1.
      for (const firstSeq of [0n, 2n]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          anchor.write.anchor([firstSeq, 5n, root("a"), head("a")], asRelayer),
          anchor,
          "AuditAnchorOutOfOrder",
          [1n, firstSeq],
        );
      }
      await anchor.write.anchor([1n, 5n, root("a"), head("a")], asRelayer);
      // A gap, an overlap, or the same range again.
      for (const firstSeq of [7n, 5n, 1n]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          anchor.write.anchor([firstSeq, 9n, root("b"), head("b")], asRelayer),
          anchor,
          "AuditAnchorOutOfOrder",
          [6n, firstSeq],
        );
      }
      assert.equal(await anchor.read.lastAnchoredSeq(), 5n);
      assert.equal(await anchor.read.anchorCount(), 1n);
    });

    it("test_anchor_revertsOnAnEmptyRange", async () => {
      const { anchor } = await networkHelpers.loadFixture(deployAnchor);
      await viem.assertions.revertWithCustomError(anchor.write.anchor([1n, 0n, root("a"), head("a")], asRelayer), anchor, "AuditAnchorEmptyRange");
    });

    it("test_anchor_revertsOnAZeroRoot", async () => {
      const { anchor } = await networkHelpers.loadFixture(deployAnchor);
      await viem.assertions.revertWithCustomError(anchor.write.anchor([1n, 3n, zeroHash, head("a")], asRelayer), anchor, "AuditAnchorZeroRoot");
    });

    it("test_anchor_revertsForNonAnchorer", async () => {
      const { anchor } = await networkHelpers.loadFixture(deployAnchor);
      for (const caller of [admin, alice]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          anchor.write.anchor([1n, 3n, root("a"), head("a")], { account: caller.account }),
          anchor,
          "AccessControlUnauthorizedAccount",
          [getAddress(caller.account.address), ANCHORER_ROLE],
        );
      }
      assert.equal(await anchor.read.anchorCount(), 0n);
    });
  });

  describe("anchorAt", () => {
    it("test_anchorAt_revertsForNonexistentAnchor", async () => {
      const { anchor } = await networkHelpers.loadFixture(deployAnchor);
      await anchor.write.anchor([1n, 3n, root("a"), head("a")], asRelayer);
      for (const anchorIndex of [0n, 2n]) {
        await viem.assertions.revertWithCustomErrorWithArgs(
          anchor.read.anchorAt([anchorIndex]),
          anchor,
          "AuditAnchorNonexistentAnchor",
          [anchorIndex],
        );
      }
    });
  });

  describe("roles", () => {
    it("test_constructor_grantsAdminRoleOnly", async () => {
      const anchor = await viem.deployContract("AuditAnchor", [alice.account.address]);
      assert.equal(await anchor.read.ANCHORER_ROLE(), ANCHORER_ROLE);
      assert.equal(await anchor.read.hasRole([DEFAULT_ADMIN_ROLE, alice.account.address]), true);
      assert.equal(await anchor.read.hasRole([ANCHORER_ROLE, alice.account.address]), false);
      assert.equal(await anchor.read.defaultAdminDelay(), ADMIN_DELAY_SECONDS);
    });

    it("test_supportsInterface_reportsEveryStandard", async () => {
      const { anchor } = await networkHelpers.loadFixture(deployAnchor);
      const { abi } = await artifacts.readArtifact("IAuditAnchor");
      for (const id of ["0x01ffc9a7", "0x7965db0b", ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID, interfaceId(abi)] as const) {
        assert.equal(await anchor.read.supportsInterface([id]), true, id);
      }
      assert.equal(await anchor.read.supportsInterface(["0xffffffff"]), false);
    });
  });
});
