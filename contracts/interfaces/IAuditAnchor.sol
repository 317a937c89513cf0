// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title IAuditAnchor
/// @notice Merkle roots of the platform's audit ledger, anchored in contiguous ranges of its sequence
/// numbers, so that anyone holding an entry and its proof can check it against the chain. Leaves are
/// the entries' `entry_hash` in seq order, paired with OpenZeppelin's commutative keccak256 of sorted
/// pairs (`MerkleProof.verify`); a lone node at a level is carried up unchanged; one leaf is its own root.
interface IAuditAnchor {
    /// @notice One anchored range of ledger entries.
    struct Anchor {
        uint64 firstSeq;
        uint64 lastSeq;
        bytes32 merkleRoot;
        /// @dev The ledger's hash-chain head at entry `lastSeq`.
        bytes32 headHash;
        uint64 anchoredAt;
    }

    /// @notice The range must start at `expectedFirstSeq` (one past the last anchored entry), not `firstSeq`.
    error AuditAnchorOutOfOrder(uint64 expectedFirstSeq, uint64 firstSeq);
    /// @notice `lastSeq` is below `firstSeq`.
    error AuditAnchorEmptyRange();
    /// @notice The Merkle root is zero.
    error AuditAnchorZeroRoot();
    /// @notice No anchor has the index `anchorIndex`.
    error AuditAnchorNonexistentAnchor(uint256 anchorIndex);

    /// @notice Emitted right after ledger entries `firstSeq`..`lastSeq` were anchored as anchor `anchorIndex`.
    event LedgerAnchored(uint256 indexed anchorIndex, uint64 firstSeq, uint64 lastSeq, bytes32 merkleRoot, bytes32 headHash);

    /// @notice Anchors ledger entries `firstSeq`..`lastSeq` (inclusive, 1-based, contiguous with the previous
    /// anchor: `firstSeq` must be `lastAnchoredSeq() + 1`) under `merkleRoot`, with the chain's `headHash`.
    /// Only callable by holders of `ANCHORER_ROLE`.
    /// @return anchorIndex The new anchor's index; indexes are sequential from 1.
    function anchor(uint64 firstSeq, uint64 lastSeq, bytes32 merkleRoot, bytes32 headHash)
        external
        returns (uint256 anchorIndex);

    /// @notice The last ledger seq anchored so far, 0 before the first anchor.
    function lastAnchoredSeq() external view returns (uint64);

    /// @notice How many anchors were recorded (also the highest anchor index).
    function anchorCount() external view returns (uint256);

    /// @notice The anchor `anchorIndex`; reverts with `AuditAnchorNonexistentAnchor` when absent.
    function anchorAt(uint256 anchorIndex) external view returns (Anchor memory);

    /// @notice The role allowed to anchor.
    function ANCHORER_ROLE() external view returns (bytes32);
}
