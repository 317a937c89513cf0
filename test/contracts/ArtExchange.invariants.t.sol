// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {ArtCertificate} from "../../contracts/ArtCertificate.sol";
import {ArtExchange} from "../../contracts/ArtExchange.sol";
import {IArtExchange} from "../../contracts/interfaces/IArtExchange.sol";
import {MockStablecoin} from "../../contracts/test/MockStablecoin.sol";
import {Test, Vm} from "./utils/Test.sol";

/// @notice What the invariant fuzzer calls: three traders who sign orders for the certificates they hold (or
/// have the order key sign them), fill each other's orders, cancel them, move certificates away behind open
/// orders, and time passing past expiries. A few order slots and tokens, so that second fills, fills after a
/// cancel and stale orders are frequent. It measures every successful fill by balance changes and counts
/// every fill that should have been refused.
contract ArtExchangeHandler {
    Vm private constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    uint256 public constant TOKENS = 4;
    uint256 public constant SLOTS = 10;
    uint256 public constant TRADERS = 3;
    uint256 public constant ORDER_KEY = 0x0EDE7;
    address public constant ARTIST = address(0xA27);
    address public constant TREASURY = address(0x7EA5);

    struct Slot {
        bool made;
        bytes32 orderHash;
        IArtExchange.Order order;
        bytes signature;
    }

    ArtCertificate public immutable certificate;
    MockStablecoin public immutable stablecoin;
    ArtExchange public immutable exchange;

    uint256 public totalPaid;
    uint256 public totalProceeds;
    uint256 public totalRoyalties;
    uint256 public totalFees;
    /// @notice Fills that succeeded although they should not have: a second fill, after a cancel, after the
    /// expiry, of a token the seller no longer held, or for another amount than the price.
    uint256 public wrongFills;
    mapping(uint256 slot => uint256) public fillsOf;
    mapping(uint256 slot => bool) public cancelled;
    mapping(uint256 slot => Slot) private _slots;

    constructor(ArtCertificate certificate_, MockStablecoin stablecoin_, ArtExchange exchange_) {
        certificate = certificate_;
        stablecoin = stablecoin_;
        exchange = exchange_;
    }

    function traderKey(uint256 seed) public pure returns (uint256) {
        return 0xA11CE + (seed % TRADERS);
    }

    function trader(uint256 seed) public pure returns (address) {
        return vm.addr(traderKey(seed));
    }

    function orderHashOf(uint256 slot) external view returns (bytes32) {
        return _slots[slot].orderHash;
    }

    /// @notice The holder of the slot's certificate offers it (once per slot), signed by itself or the order key.
    function makeOrder(uint256 slotSeed, uint256 priceCents, uint256 lifetime, bool byOrderKey, bool reserved, uint256 buyerSeed)
        external
    {
        uint256 slot = slotSeed % SLOTS;
        if (_slots[slot].made) return;
        IArtExchange.Order memory order = _orderFor(slot, priceCents, lifetime, reserved ? trader(buyerSeed) : address(0));
        bytes32 orderHash = exchange.hashOrder(order);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(byOrderKey ? ORDER_KEY : _keyOf(order.seller), orderHash);
        Slot storage stored = _slots[slot];
        stored.made = true;
        stored.orderHash = orderHash;
        stored.order = order;
        stored.signature = abi.encodePacked(r, s, v);
    }

    function fill(uint256 slotSeed, uint256 buyerSeed) external {
        uint256 slot = slotSeed % SLOTS;
        if (!_slots[slot].made) return;
        IArtExchange.Order memory order = _slots[slot].order;
        address buyer = trader(buyerSeed);
        if (buyer == order.seller) return; // buying from oneself moves nothing between parties
        bool refusable = fillsOf[slot] > 0 || cancelled[slot] || block.timestamp > order.expiry
            || certificate.ownerOf(order.tokenId) != order.seller;
        uint256[4] memory before = _balances(buyer, order.seller);

        vm.prank(buyer);
        try exchange.fill(order, _slots[slot].signature) {
            fillsOf[slot] += 1;
            uint256[4] memory afterFill = _balances(buyer, order.seller);
            uint256 paid = before[0] - afterFill[0];
            if (refusable || paid != order.price) wrongFills += 1;
            totalPaid += paid;
            totalProceeds += afterFill[1] - before[1];
            totalRoyalties += afterFill[2] - before[2];
            totalFees += afterFill[3] - before[3];
        } catch {}
    }

    function cancel(uint256 slotSeed, bool bySeller) external {
        uint256 slot = slotSeed % SLOTS;
        if (!_slots[slot].made) return;
        IArtExchange.Order memory order = _slots[slot].order;
        address canceller = bySeller ? order.seller : vm.addr(ORDER_KEY);
        vm.prank(canceller);
        try exchange.cancel(order) {
            cancelled[slot] = true;
        } catch {}
    }

    /// @notice The holder moves its certificate away, leaving its open orders stale.
    function transfer(uint256 tokenSeed, uint256 toSeed) external {
        uint256 tokenId = 1 + (tokenSeed % TOKENS);
        address holder = certificate.ownerOf(tokenId);
        vm.prank(holder);
        certificate.transferFrom(holder, trader(toSeed), tokenId);
    }

    function passTime(uint256 secondsSeed) external {
        vm.warp(block.timestamp + (secondsSeed % 1 days));
    }

    function _orderFor(uint256 slot, uint256 priceCents, uint256 lifetime, address buyer)
        private
        view
        returns (IArtExchange.Order memory)
    {
        uint256 tokenId = 1 + (slot % TOKENS);
        return IArtExchange.Order({
            listingId: string.concat("lst_", vm.toString(slot)),
            seller: certificate.ownerOf(tokenId),
            buyer: buyer,
            tokenId: tokenId,
            currency: address(stablecoin),
            price: (priceCents % 1e9) * 1e4,
            feeBps: exchange.feeBps(),
            expiry: uint64(block.timestamp + (lifetime % 2 days))
        });
    }

    /// @notice The buyer's, the seller's, the artist's and the treasury's balances.
    function _balances(address buyer, address seller) private view returns (uint256[4] memory) {
        return [
            stablecoin.balanceOf(buyer),
            stablecoin.balanceOf(seller),
            stablecoin.balanceOf(ARTIST),
            stablecoin.balanceOf(TREASURY)
        ];
    }

    function _keyOf(address holder) private pure returns (uint256) {
        for (uint256 i = 0; i < TRADERS; ++i) {
            if (trader(i) == holder) return traderKey(i);
        }
        revert("not a trader");
    }
}

/// @notice Invariants of ArtExchange under any sequence of the handler's calls.
contract ArtExchangeInvariantTest is Test {
    uint256 private constant FUNDS = 1e18;

    MockStablecoin private _stablecoin;
    ArtExchange private _exchange;
    ArtExchangeHandler private _handler;

    function setUp() public {
        ArtCertificate certificate = new ArtCertificate(address(this), address(0));
        _stablecoin = new MockStablecoin();
        address treasury = address(0x7EA5);
        _exchange = new ArtExchange(address(this), address(certificate), address(_stablecoin), treasury, 250);
        _handler = new ArtExchangeHandler(certificate, _stablecoin, _exchange);
        certificate.grantRole(certificate.CERTIFIER_ROLE(), address(this));
        _exchange.grantRole(_exchange.ORDER_SIGNER_ROLE(), vm.addr(_handler.ORDER_KEY()));

        // Royalties of 0, 2.5, 5 and 10 % to the artist, who never trades.
        uint96[4] memory royaltyBps = [uint96(0), 250, 500, 1000];
        for (uint256 i = 0; i < _handler.TOKENS(); ++i) {
            address royaltyReceiver = royaltyBps[i] == 0 ? address(0) : _handler.ARTIST();
            certificate.certify(_handler.trader(i), string.concat("art_", vm.toString(i)), keccak256("doc"), "u", royaltyReceiver, royaltyBps[i]);
        }
        for (uint256 i = 0; i < _handler.TRADERS(); ++i) {
            address trader = _handler.trader(i);
            _stablecoin.mint(trader, FUNDS);
            vm.startPrank(trader);
            _stablecoin.approve(address(_exchange), type(uint256).max);
            certificate.setApprovalForAll(address(_exchange), true);
            vm.stopPrank();
        }
        targetContract(address(_handler));
    }

    function invariant_theBuyerPaysExactlyTheSellerRoyaltyAndFee() public view {
        vm.assertEq(
            _handler.totalPaid(),
            _handler.totalProceeds() + _handler.totalRoyalties() + _handler.totalFees(),
            "paid differs from seller + royalty + fee"
        );
        vm.assertEq(_stablecoin.balanceOf(address(_exchange)), 0, "the exchange kept funds");
        vm.assertEq(_stablecoin.balanceOf(_handler.ARTIST()), _handler.totalRoyalties(), "royalties from elsewhere");
        vm.assertEq(_stablecoin.balanceOf(_handler.TREASURY()), _handler.totalFees(), "fees from elsewhere");
        // Every royalty and fee is in whole cents (10⁴ units of a 6-decimal token), as the API's ledger keeps them.
        vm.assertEq(_handler.totalRoyalties() % 1e4, 0, "royalties in fractions of a cent");
        vm.assertEq(_handler.totalFees() % 1e4, 0, "fees in fractions of a cent");
        uint256 held = _stablecoin.balanceOf(_handler.ARTIST()) + _stablecoin.balanceOf(_handler.TREASURY());
        for (uint256 i = 0; i < _handler.TRADERS(); ++i) held += _stablecoin.balanceOf(_handler.trader(i));
        vm.assertEq(held, _stablecoin.totalSupply(), "funds left the parties");
    }

    function invariant_anOrderFillsAtMostOnce() public view {
        for (uint256 slot = 0; slot < _handler.SLOTS(); ++slot) {
            uint256 fills = _handler.fillsOf(slot);
            vm.assertLe(fills, 1, "an order filled twice");
            bytes32 orderHash = _handler.orderHashOf(slot);
            if (orderHash == bytes32(0)) continue;
            vm.assertEq(
                _exchange.orderStatus(orderHash) == IArtExchange.OrderStatus.Filled, fills == 1, "status differs from the fills"
            );
        }
    }

    function invariant_noFillAfterCancelOrExpiryOrOfATokenTheSellerLeft() public view {
        vm.assertEq(_handler.wrongFills(), 0, "a fill that should have been refused");
    }
}
