// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {AccessControlDefaultAdminRules} from "@openzeppelin/contracts/access/extensions/AccessControlDefaultAdminRules.sol";
import {ERC1155} from "@openzeppelin/contracts/token/ERC1155/ERC1155.sol";
import {ERC1155Supply} from "@openzeppelin/contracts/token/ERC1155/extensions/ERC1155Supply.sol";
import {ERC1155Utils} from "@openzeppelin/contracts/token/ERC1155/utils/ERC1155Utils.sol";
import {IArtCertificate} from "./interfaces/IArtCertificate.sol";
import {IArtShares} from "./interfaces/IArtShares.sol";

/// @title ArtShares
/// @notice Fractional shares of certified artworks: ERC-1155 token id `n` is the share class of
/// `ArtCertificate` token `n`. The platform's relayer (`SHARE_ISSUER_ROLE`) creates each class once
/// with a fixed cap and mints shares per purchase; holders trade them with the ERC-1155 transfers.
/// `DEFAULT_ADMIN_ROLE` has one holder and moves in two steps, after a delay (AccessControlDefaultAdminRules).
contract ArtShares is IArtShares, ERC1155Supply, AccessControlDefaultAdminRules {
    /// @inheritdoc IArtShares
    bytes32 public constant SHARE_ISSUER_ROLE = keccak256("SHARE_ISSUER_ROLE");

    // Time to notice and cancel a mistaken or unauthorized admin transfer; the admin can change it.
    uint48 private constant INITIAL_ADMIN_DELAY = 3 days;

    IArtCertificate private immutable _certificate;
    mapping(uint256 tokenId => uint256 cap) private _shareCaps;
    mapping(bytes32 purchaseKey => bool minted) private _purchaseMinted;

    /// @param admin The account granted `DEFAULT_ADMIN_ROLE` (manages roles and the metadata URI); it can
    /// hand the role over with `beginDefaultAdminTransfer`, accepted by the new admin after 3 days.
    /// @param certificate_ The `ArtCertificate` contract whose tokens are fractionalized.
    /// @param uri_ The ERC-1155 metadata URI template, with `{id}` replaced by clients.
    constructor(address admin, IArtCertificate certificate_, string memory uri_)
        ERC1155(uri_)
        AccessControlDefaultAdminRules(INITIAL_ADMIN_DELAY, admin)
    {
        _certificate = certificate_;
    }

    /// @inheritdoc IArtShares
    function createShareClass(uint256 tokenId, uint256 cap) external onlyRole(SHARE_ISSUER_ROLE) {
        // Certificate ids are sequential from 1 and never burned: this range is exactly the certified tokens.
        if (tokenId == 0 || tokenId > _certificate.totalCertified()) revert ArtSharesNotCertified(tokenId);
        if (cap == 0) revert ArtSharesZeroAmount();
        if (_shareCaps[tokenId] != 0) revert ArtSharesClassExists(tokenId);

        _shareCaps[tokenId] = cap;
        emit ShareClassCreated(tokenId, cap);
    }

    /// @inheritdoc IArtShares
    function mintShares(address to, uint256 tokenId, uint256 amount, bytes32 purchaseKey)
        external
        onlyRole(SHARE_ISSUER_ROLE)
    {
        // The key first: a retried purchase that took the last shares must read as minted, not as sold out.
        if (_purchaseMinted[purchaseKey]) revert ArtSharesPurchaseAlreadyMinted(purchaseKey);
        uint256 cap = _shareCaps[tokenId];
        if (cap == 0) revert ArtSharesUnknownClass(tokenId);
        if (amount == 0) revert ArtSharesZeroAmount();
        uint256 available = cap - totalSupply(tokenId);
        if (amount > available) revert ArtSharesCapExceeded(tokenId, amount, available);
        if (to == address(0)) revert ERC1155InvalidReceiver(address(0));

        // `_mint` would call the recipient's hook before our event: record and emit everything first, so a
        // reentrant call sees the purchase minted and the supply taken, and the hook runs last.
        _purchaseMinted[purchaseKey] = true;
        _update(address(0), to, _singleton(tokenId), _singleton(amount));
        emit SharesMinted(tokenId, to, purchaseKey, amount);
        ERC1155Utils.checkOnERC1155Received(_msgSender(), address(0), to, tokenId, amount, "");
    }

    /// @notice Replaces the ERC-1155 metadata URI template (`{id}` is replaced by clients).
    /// Only callable by holders of `DEFAULT_ADMIN_ROLE`.
    function setURI(string calldata newUri) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _setURI(newUri);
    }

    /// @inheritdoc IArtShares
    function shareCap(uint256 tokenId) external view returns (uint256) {
        return _shareCaps[tokenId];
    }

    /// @inheritdoc IArtShares
    function purchaseMinted(bytes32 purchaseKey) external view returns (bool) {
        return _purchaseMinted[purchaseKey];
    }

    /// @inheritdoc IArtShares
    function certificate() external view returns (address) {
        return address(_certificate);
    }

    /// @notice ERC-165: ERC-1155 (+ metadata URI), AccessControl (+ default admin rules) and IArtShares.
    function supportsInterface(bytes4 interfaceId)
        public
        view
        override(ERC1155, AccessControlDefaultAdminRules)
        returns (bool)
    {
        return interfaceId == type(IArtShares).interfaceId || super.supportsInterface(interfaceId);
    }

    function _singleton(uint256 value) private pure returns (uint256[] memory array) {
        array = new uint256[](1);
        array[0] = value;
    }
}
