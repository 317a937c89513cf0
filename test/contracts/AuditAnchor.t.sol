// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {Hashes} from "@openzeppelin/contracts/utils/cryptography/Hashes.sol";
import {AuditAnchor} from "../../contracts/AuditAnchor.sol";
import {IAuditAnchor} from "../../contracts/interfaces/IAuditAnchor.sol";
import {Test} from "./utils/Test.sol";

/// @notice Fuzz tests of AuditAnchor: ranges stay contiguous whatever is tried, and the Merkle convention of
/// IAuditAnchor (sorted-pair keccak256, a lone node carried up) gives roots that OpenZeppelin's
/// MerkleProof.verify accepts for every leaf.
contract AuditAnchorFuzzTest is Test {
    AuditAnchor private _anchor;
    address private constant ANCHORER = address(0xA4C);

    function setUp() public {
        _anchor = new AuditAnchor(address(this));
        _anchor.grantRole(_anchor.ANCHORER_ROLE(), ANCHORER);
    }

    function testFuzz_anchor_keepsRangesContiguous(uint64[6] calldata lengths, uint64[6] calldata tries) public {
        uint64 last;
        vm.startPrank(ANCHORER);
        for (uint256 i = 0; i < lengths.length; ++i) {
            // Any other first seq is refused with the expected one.
            uint64 wrongFirst = tries[i];
            if (wrongFirst != last + 1) {
                vm.expectRevert(abi.encodeWithSelector(IAuditAnchor.AuditAnchorOutOfOrder.selector, last + 1, wrongFirst));
                _anchor.anchor(wrongFirst, wrongFirst, keccak256("root"), bytes32(0));
            }
            uint64 length = uint64(bound(lengths[i], 1, 1_000_000));
            uint256 index = _anchor.anchor(last + 1, last + length, keccak256(abi.encode(i)), bytes32(i));
            vm.assertEq(index, i + 1, "anchor indexes are not sequential");
            last += length;
            vm.assertEq(uint256(_anchor.lastAnchoredSeq()), uint256(last), "last anchored seq");
        }
        vm.stopPrank();
        for (uint256 i = 2; i <= lengths.length; ++i) {
            vm.assertEq(
                uint256(_anchor.anchorAt(i).firstSeq), uint256(_anchor.anchorAt(i - 1).lastSeq) + 1, "a gap or an overlap"
            );
        }
    }

    function testFuzz_merkleConvention_verifiesEveryLeaf(bytes32 seed, uint256 count) public pure {
        count = bound(count, 1, 40);
        bytes32[] memory leaves = new bytes32[](count);
        for (uint256 i = 0; i < count; ++i) leaves[i] = keccak256(abi.encode(seed, i));
        bytes32 root = _root(leaves);
        if (count == 1) require(root == leaves[0], "one leaf is its own root");
        for (uint256 i = 0; i < count; ++i) {
            require(MerkleProof.verify(_proof(leaves, i), root, leaves[i]), "a proof did not verify");
        }
    }

    // The ledger's tree, as IAuditAnchor states it: levels of sorted-pair hashes, a lone last node carried up.
    function _root(bytes32[] memory level) private pure returns (bytes32) {
        while (level.length > 1) level = _next(level);
        return level[0];
    }

    function _proof(bytes32[] memory level, uint256 index) private pure returns (bytes32[] memory proof) {
        bytes32[] memory path = new bytes32[](64);
        uint256 length;
        while (level.length > 1) {
            uint256 sibling = index ^ 1;
            if (sibling < level.length) path[length++] = level[sibling]; // a lone node has no sibling: nothing to prove
            level = _next(level);
            index /= 2;
        }
        proof = new bytes32[](length);
        for (uint256 i = 0; i < length; ++i) proof[i] = path[i];
    }

    function _next(bytes32[] memory level) private pure returns (bytes32[] memory next) {
        next = new bytes32[]((level.length + 1) / 2);
        for (uint256 i = 0; i < next.length; ++i) {
            next[i] = 2 * i + 1 < level.length ? Hashes.commutativeKeccak256(level[2 * i], level[2 * i + 1]) : level[2 * i];
        }
    }
}
