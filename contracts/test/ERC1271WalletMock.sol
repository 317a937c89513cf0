// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @title ERC1271WalletMock
/// @notice Test fixture only (never deployed by Ignition): a smart-contract wallet whose signatures
/// are its owner's, so Sign-In with Ethereum can be tested against ERC-1271.
contract ERC1271WalletMock is IERC1271 {
    address private immutable _owner;

    constructor(address owner_) {
        _owner = owner_;
    }

    /// @inheritdoc IERC1271
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(hash, signature);
        return err == ECDSA.RecoverError.NoError && signer == _owner ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }
}
