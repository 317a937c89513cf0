// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {IERC1155Receiver} from "@openzeppelin/contracts/token/ERC1155/IERC1155Receiver.sol";
import {ERC1155Supply} from "@openzeppelin/contracts/token/ERC1155/extensions/ERC1155Supply.sol";
import {IERC165} from "@openzeppelin/contracts/utils/introspection/IERC165.sol";
import {IArtShares} from "../interfaces/IArtShares.sol";

/// @title ERC1155ReceiverMock
/// @notice Test fixture only (never deployed by Ignition): a share recipient whose hook reports what
/// `ArtShares` had recorded when it ran, and, once given `SHARE_ISSUER_ROLE`, tries to mint the same
/// purchase again from inside the hook.
contract ERC1155ReceiverMock is IERC1155Receiver {
    /// @notice Emitted by the hook with the purchase's state as the hook saw it.
    event Received(uint256 id, uint256 value, bool purchaseMinted, uint256 totalSupply);

    IArtShares private immutable _shares;
    bytes32 private _purchaseKey;
    bool private _reenter;

    /// @notice The revert data of the reentrant mint, empty when none was tried or it succeeded.
    bytes public reentryError;

    constructor(IArtShares shares_) {
        _shares = shares_;
    }

    /// @notice The purchase the hook reports on, and whether it mints that purchase again.
    function watch(bytes32 purchaseKey, bool reenter) external {
        _purchaseKey = purchaseKey;
        _reenter = reenter;
    }

    /// @inheritdoc IERC1155Receiver
    function onERC1155Received(address, address, uint256 id, uint256 value, bytes calldata)
        external
        returns (bytes4)
    {
        emit Received(id, value, _shares.purchaseMinted(_purchaseKey), ERC1155Supply(address(_shares)).totalSupply(id));
        if (_reenter) {
            try _shares.mintShares(address(this), id, 1, _purchaseKey) {}
            catch (bytes memory reason) {
                reentryError = reason;
            }
        }
        return IERC1155Receiver.onERC1155Received.selector;
    }

    /// @inheritdoc IERC1155Receiver
    function onERC1155BatchReceived(address, address, uint256[] calldata, uint256[] calldata, bytes calldata)
        external
        pure
        returns (bytes4)
    {
        return IERC1155Receiver.onERC1155BatchReceived.selector;
    }

    /// @inheritdoc IERC165
    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == type(IERC1155Receiver).interfaceId || interfaceId == type(IERC165).interfaceId;
    }
}
