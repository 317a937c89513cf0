// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {AccessControlDefaultAdminRules} from "@openzeppelin/contracts/access/extensions/AccessControlDefaultAdminRules.sol";
import {IAuditAnchor} from "./interfaces/IAuditAnchor.sol";

/// @title AuditAnchor
/// @notice Anchors the Merkle roots of the platform's audit ledger, one contiguous range of entries at a
/// time, so that the ledger the API serves can be checked against the chain and can never be rewritten
/// unnoticed. The relayer (`ANCHORER_ROLE`) anchors; nothing anchored ever changes. `DEFAULT_ADMIN_ROLE`
/// has one holder and moves in two steps, after a delay (AccessControlDefaultAdminRules).
contract AuditAnchor is IAuditAnchor, AccessControlDefaultAdminRules {
    /// @inheritdoc IAuditAnchor
    bytes32 public constant ANCHORER_ROLE = keccak256("ANCHORER_ROLE");

    // Time to notice and cancel a mistaken or unauthorized admin transfer; the admin can change it.
    uint48 private constant INITIAL_ADMIN_DELAY = 3 days;

    uint64 private _lastAnchoredSeq;
    Anchor[] private _anchors;

    /// @param admin The account granted `DEFAULT_ADMIN_ROLE` (manages roles); it can hand the role over
    /// with `beginDefaultAdminTransfer`, accepted by the new admin after 3 days.
    constructor(address admin) AccessControlDefaultAdminRules(INITIAL_ADMIN_DELAY, admin) {}

    /// @inheritdoc IAuditAnchor
    function anchor(uint64 firstSeq, uint64 lastSeq, bytes32 merkleRoot, bytes32 headHash)
        external
        onlyRole(ANCHORER_ROLE)
        returns (uint256 anchorIndex)
    {
        uint64 expectedFirstSeq = _lastAnchoredSeq + 1;
        if (firstSeq != expectedFirstSeq) revert AuditAnchorOutOfOrder(expectedFirstSeq, firstSeq);
        if (lastSeq < firstSeq) revert AuditAnchorEmptyRange();
        if (merkleRoot == bytes32(0)) revert AuditAnchorZeroRoot();

        _lastAnchoredSeq = lastSeq;
        _anchors.push(
            Anchor({
                firstSeq: firstSeq,
                lastSeq: lastSeq,
                merkleRoot: merkleRoot,
                headHash: headHash,
                anchoredAt: uint64(block.timestamp)
            })
        );
        anchorIndex = _anchors.length;
        emit LedgerAnchored(anchorIndex, firstSeq, lastSeq, merkleRoot, headHash);
    }

    /// @inheritdoc IAuditAnchor
    function lastAnchoredSeq() external view returns (uint64) {
        return _lastAnchoredSeq;
    }

    /// @inheritdoc IAuditAnchor
    function anchorCount() external view returns (uint256) {
        return _anchors.length;
    }

    /// @inheritdoc IAuditAnchor
    function anchorAt(uint256 anchorIndex) external view returns (Anchor memory) {
        if (anchorIndex == 0 || anchorIndex > _anchors.length) revert AuditAnchorNonexistentAnchor(anchorIndex);
        return _anchors[anchorIndex - 1];
    }

    /// @notice ERC-165: AccessControl (+ default admin rules) and IAuditAnchor.
    function supportsInterface(bytes4 interfaceId) public view override returns (bool) {
        return interfaceId == type(IAuditAnchor).interfaceId || super.supportsInterface(interfaceId);
    }
}
