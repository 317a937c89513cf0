// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {AccessControlDefaultAdminRules} from "@openzeppelin/contracts/access/extensions/AccessControlDefaultAdminRules.sol";
import {IERC2981} from "@openzeppelin/contracts/interfaces/IERC2981.sol";
import {IERC721} from "@openzeppelin/contracts/token/ERC721/IERC721.sol";
import {IArtMarket} from "./interfaces/IArtMarket.sol";

/// @title ArtMarket
/// @notice Settles the platform's sales on-chain: the relayer (`SETTLER_ROLE`) moves a certificate from
/// the seller, who approved this contract, to the buyer, once per sale id, and the event records the
/// ERC-2981 royalty due on the price. Payment itself happens off-chain, in USD. `DEFAULT_ADMIN_ROLE`
/// has one holder and moves in two steps, after a delay (AccessControlDefaultAdminRules).
contract ArtMarket is IArtMarket, AccessControlDefaultAdminRules {
    /// @inheritdoc IArtMarket
    bytes32 public constant SETTLER_ROLE = keccak256("SETTLER_ROLE");

    // Time to notice and cancel a mistaken or unauthorized admin transfer; the admin can change it.
    uint48 private constant INITIAL_ADMIN_DELAY = 3 days;

    address private immutable _certificate;
    mapping(bytes32 saleKey => bool settled) private _settled;

    /// @param admin The account granted `DEFAULT_ADMIN_ROLE` (manages roles); it can hand the role over
    /// with `beginDefaultAdminTransfer`, accepted by the new admin after 3 days.
    /// @param certificate_ The `ArtCertificate` contract (ERC-721 + ERC-2981) whose tokens are sold.
    constructor(address admin, address certificate_) AccessControlDefaultAdminRules(INITIAL_ADMIN_DELAY, admin) {
        if (certificate_ == address(0)) revert ArtMarketZeroAddress();
        _certificate = certificate_;
    }

    /// @inheritdoc IArtMarket
    function settle(string calldata saleId, uint256 tokenId, address from, address to, uint256 priceCents)
        external
        onlyRole(SETTLER_ROLE)
        returns (address royaltyReceiver, uint256 royaltyCents)
    {
        if (bytes(saleId).length == 0) revert ArtMarketEmptySaleId();
        bytes32 saleKey = keccak256(bytes(saleId));
        if (_settled[saleKey]) revert ArtMarketAlreadySettled(saleKey);
        if (from == address(0) || to == address(0)) revert ArtMarketZeroAddress();

        _settled[saleKey] = true;
        (royaltyReceiver, royaltyCents) = IERC2981(_certificate).royaltyInfo(tokenId, priceCents);
        // `transferFrom`, not `safeTransferFrom`: as at the mint, a buyer's contract callback must never block a settlement.
        IERC721(_certificate).transferFrom(from, to, tokenId);

        emit SaleSettled(saleKey, tokenId, saleId, from, to, priceCents, royaltyReceiver, royaltyCents);
    }

    /// @inheritdoc IArtMarket
    function isSettled(bytes32 saleKey) external view returns (bool) {
        return _settled[saleKey];
    }

    /// @inheritdoc IArtMarket
    function saleKeyOf(string calldata saleId) external pure returns (bytes32) {
        return keccak256(bytes(saleId));
    }

    /// @inheritdoc IArtMarket
    function certificate() external view returns (address) {
        return _certificate;
    }

    /// @notice ERC-165: AccessControl (+ default admin rules) and IArtMarket.
    function supportsInterface(bytes4 interfaceId) public view override returns (bool) {
        return interfaceId == type(IArtMarket).interfaceId || super.supportsInterface(interfaceId);
    }
}
