// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {AccessControlDefaultAdminRules} from "@openzeppelin/contracts/access/extensions/AccessControlDefaultAdminRules.sol";
import {IERC2981} from "@openzeppelin/contracts/interfaces/IERC2981.sol";
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {IERC20Metadata} from "@openzeppelin/contracts/token/ERC20/extensions/IERC20Metadata.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {IERC721} from "@openzeppelin/contracts/token/ERC721/IERC721.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {IArtExchange} from "./interfaces/IArtExchange.sol";

/// @title ArtExchange
/// @notice Sales of certificates paid on-chain in a USD stablecoin (`paymentToken()`, fixed at deployment):
/// a buyer fills an EIP-712 order signed by the platform's order key or by a self-custodied seller, and in
/// the same call pays the royalty, the platform's fee and the seller, straight from the buyer's balance
/// (this contract never holds funds), and receives the certificate. Beside `ArtMarket`, which keeps
/// settling card sales. `DEFAULT_ADMIN_ROLE` has one holder, moves in two steps after a delay
/// (AccessControlDefaultAdminRules), grants `ORDER_SIGNER_ROLE` and sets the fee.
contract ArtExchange is IArtExchange, AccessControlDefaultAdminRules, EIP712 {
    using SafeERC20 for IERC20;

    /// @inheritdoc IArtExchange
    bytes32 public constant ORDER_SIGNER_ROLE = keccak256("ORDER_SIGNER_ROLE");

    /// @inheritdoc IArtExchange
    uint16 public constant MAX_FEE_BPS = 1000;

    bytes32 private constant ORDER_TYPEHASH = keccak256(
        "Order(string listingId,address seller,address buyer,uint256 tokenId,address currency,uint256 price,uint16 feeBps,uint64 expiry)"
    );

    // Time to notice and cancel a mistaken or unauthorized admin transfer; the admin can change it.
    uint48 private constant INITIAL_ADMIN_DELAY = 3 days;

    address private immutable _certificate;
    IERC20 private immutable _paymentToken;
    uint256 private immutable _unitsPerCent;
    address private _treasury;
    uint16 private _feeBps;
    mapping(bytes32 orderHash => OrderStatus) private _orderStatus;

    /// @param admin The account granted `DEFAULT_ADMIN_ROLE`; it can hand the role over with
    /// `beginDefaultAdminTransfer`, accepted by the new admin after 3 days.
    /// @param certificate_ The `ArtCertificate` contract (ERC-721 + ERC-2981) whose tokens are sold.
    /// @param paymentToken_ The ERC-20 token prices are paid in: a USD stablecoin (6 decimals; at least 2).
    /// @param treasury_ The account paid the platform's fee.
    /// @param feeBps_ The platform's fee in basis points, at most `MAX_FEE_BPS`.
    constructor(address admin, address certificate_, address paymentToken_, address treasury_, uint16 feeBps_)
        AccessControlDefaultAdminRules(INITIAL_ADMIN_DELAY, admin)
        EIP712("ArtExchange", "1")
    {
        if (certificate_ == address(0) || paymentToken_ == address(0)) revert ArtExchangeZeroAddress();
        _certificate = certificate_;
        _paymentToken = IERC20(paymentToken_);
        uint8 decimals = IERC20Metadata(paymentToken_).decimals();
        if (decimals < 2) revert ArtExchangeUnsupportedDecimals(decimals);
        _unitsPerCent = 10 ** (decimals - 2);
        _setFee(treasury_, feeBps_);
    }

    /// @inheritdoc IArtExchange
    function fill(Order calldata order, bytes calldata signature) external returns (bytes32 orderHash) {
        orderHash = hashOrder(order);
        _requireOpen(orderHash);
        if (block.timestamp > order.expiry) revert ArtExchangeOrderExpired(orderHash, order.expiry);
        if (order.buyer != address(0) && order.buyer != msg.sender) revert ArtExchangeWrongBuyer(order.buyer, msg.sender);
        if (order.currency != address(_paymentToken)) revert ArtExchangeUnsupportedCurrency(order.currency);
        if (order.feeBps != _feeBps) revert ArtExchangeFeeChanged(order.feeBps, _feeBps);
        if (!_isSignedForSeller(order.seller, orderHash, signature)) revert ArtExchangeInvalidSignature(orderHash);
        // Checked here, not left to the ERC-721 transfer: the seller's signature is worth something only while it holds the token.
        address holder = IERC721(_certificate).ownerOf(order.tokenId);
        if (holder != order.seller) revert ArtExchangeSellerNotOwner(order.tokenId, order.seller, holder);

        // Recorded before any transfer: a token or wallet calling back into `fill` finds the order filled.
        _orderStatus[orderHash] = OrderStatus.Filled;
        _pay(order, orderHash);
    }

    /// @inheritdoc IArtExchange
    function cancel(Order calldata order) external returns (bytes32 orderHash) {
        if (msg.sender != order.seller && !hasRole(ORDER_SIGNER_ROLE, msg.sender)) {
            revert ArtExchangeUnauthorizedCanceller(msg.sender);
        }
        orderHash = hashOrder(order);
        _requireOpen(orderHash);
        _orderStatus[orderHash] = OrderStatus.Cancelled;
        emit OrderCancelled(orderHash, msg.sender);
    }

    /// @inheritdoc IArtExchange
    function setFee(address treasury_, uint16 feeBps_) external onlyRole(DEFAULT_ADMIN_ROLE) {
        _setFee(treasury_, feeBps_);
    }

    /// @inheritdoc IArtExchange
    function hashOrder(Order calldata order) public view returns (bytes32) {
        return _hashTypedDataV4(
            keccak256(
                abi.encode(
                    ORDER_TYPEHASH,
                    keccak256(bytes(order.listingId)),
                    order.seller,
                    order.buyer,
                    order.tokenId,
                    order.currency,
                    order.price,
                    order.feeBps,
                    order.expiry
                )
            )
        );
    }

    /// @inheritdoc IArtExchange
    function orderStatus(bytes32 orderHash) external view returns (OrderStatus) {
        return _orderStatus[orderHash];
    }

    /// @inheritdoc IArtExchange
    function paymentToken() external view returns (address) {
        return address(_paymentToken);
    }

    /// @inheritdoc IArtExchange
    function certificate() external view returns (address) {
        return _certificate;
    }

    /// @inheritdoc IArtExchange
    function treasury() external view returns (address) {
        return _treasury;
    }

    /// @inheritdoc IArtExchange
    function feeBps() external view returns (uint16) {
        return _feeBps;
    }

    /// @inheritdoc IArtExchange
    function unitsPerCent() external view returns (uint256) {
        return _unitsPerCent;
    }

    /// @notice ERC-165: AccessControl (+ default admin rules) and IArtExchange.
    function supportsInterface(bytes4 interfaceId) public view override returns (bool) {
        return interfaceId == type(IArtExchange).interfaceId || super.supportsInterface(interfaceId);
    }

    function _setFee(address treasury_, uint16 feeBps_) private {
        if (treasury_ == address(0)) revert ArtExchangeZeroAddress();
        if (feeBps_ > MAX_FEE_BPS) revert ArtExchangeFeeTooHigh(feeBps_, MAX_FEE_BPS);
        _treasury = treasury_;
        _feeBps = feeBps_;
        emit FeeSet(treasury_, feeBps_);
    }

    // Straight from the buyer to each recipient, so the exchange never holds funds; then the certificate.
    function _pay(Order calldata order, bytes32 orderHash) private {
        (address royaltyReceiver, uint256 royalty) = IERC2981(_certificate).royaltyInfo(order.tokenId, order.price);
        // The artist selling its own certificate owes itself nothing: all of it is proceeds, as the API counts it.
        if (royaltyReceiver == order.seller) royalty = 0;
        // In whole cents, rounded as a card sale's split is (the royalty down, the fee half up), so that
        // the platform's ledger in cents says exactly what moved, whichever way the buyer paid.
        royalty -= royalty % _unitsPerCent;
        uint256 fee = (order.price * _feeBps / 10_000 + _unitsPerCent / 2) / _unitsPerCent * _unitsPerCent;

        if (royalty != 0) _paymentToken.safeTransferFrom(msg.sender, royaltyReceiver, royalty);
        if (fee != 0) _paymentToken.safeTransferFrom(msg.sender, _treasury, fee);
        uint256 proceeds = order.price - royalty - fee;
        if (proceeds != 0) _paymentToken.safeTransferFrom(msg.sender, order.seller, proceeds);
        // `transferFrom`, not `safeTransferFrom`: as in ArtMarket, a buyer's contract callback must never block a sale.
        IERC721(_certificate).transferFrom(order.seller, msg.sender, order.tokenId);

        emit OrderFilled(
            orderHash,
            order.tokenId,
            order.listingId,
            order.seller,
            msg.sender,
            order.currency,
            order.price,
            royaltyReceiver,
            royalty,
            fee
        );
    }

    function _requireOpen(bytes32 orderHash) private view {
        OrderStatus status = _orderStatus[orderHash];
        if (status == OrderStatus.Filled) revert ArtExchangeOrderFilled(orderHash);
        if (status == OrderStatus.Cancelled) revert ArtExchangeOrderCancelled(orderHash);
    }

    // The order key signs for custodial sellers (it is an EOA: ECDSA only); a self-custodied seller signs for
    // itself, as an EOA or an ERC-1271 contract wallet.
    function _isSignedForSeller(address seller, bytes32 orderHash, bytes calldata signature) private view returns (bool) {
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecoverCalldata(orderHash, signature);
        if (err == ECDSA.RecoverError.NoError && (signer == seller || hasRole(ORDER_SIGNER_ROLE, signer))) return true;
        return seller.code.length != 0 && SignatureChecker.isValidERC1271SignatureNowCalldata(seller, orderHash, signature);
    }
}
