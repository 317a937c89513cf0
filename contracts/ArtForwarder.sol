// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {ERC2771Forwarder} from "@openzeppelin/contracts/metatx/ERC2771Forwarder.sol";

/// @title ArtForwarder
/// @notice The platform's ERC-2771 forwarder: the relayer submits calls that custodial wallets (keys the
/// platform holds, with no ETH) signed as EIP-712 `ForwardRequest`s, and the target contracts that trust
/// this forwarder (`ArtCertificate`) see the signer as the caller. OpenZeppelin's `ERC2771Forwarder` as is:
/// per-signer nonces, deadlines, and the inner call's revert bubbled up by `execute`. EIP-712 domain
/// "ArtPlatformForwarder", version "1".
contract ArtForwarder is ERC2771Forwarder {
    constructor() ERC2771Forwarder("ArtPlatformForwarder") {}
}
