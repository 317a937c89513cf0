// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";

/// @title MockStablecoin
/// @notice LOCAL CHAINS AND TESTS ONLY. NEVER DEPLOY TO A PUBLIC CHAIN: anyone can `mint` any amount, so the
/// token is worth nothing. It stands in for the USD stablecoin `ArtExchange` is paid in (USDC on a public
/// chain, `PAYMENT_TOKEN_ADDRESS`): 6 decimals, so 1 USD is 1,000,000 units and a cent 10,000; and, as USDC,
/// EIP-3009 `transferWithAuthorization` (EIP-712 domain: the token's name, version "2"), by which the
/// platform's relayer moves a custodial wallet's balance on its signature, once per nonce.
contract MockStablecoin is ERC20, EIP712 {
    bytes32 private constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );

    mapping(address authorizer => mapping(bytes32 nonce => bool used)) private _authorizationUsed;

    /// @notice EIP-3009: the authorization `nonce` of `authorizer` was used.
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);

    /// @notice The authorization was used already.
    error MockStablecoinAuthorizationUsed(address authorizer, bytes32 nonce);
    /// @notice The authorization is not valid at this time (before `validAfter`, or from `validBefore` on).
    error MockStablecoinAuthorizationNotValidNow(uint256 validAfter, uint256 validBefore);
    /// @notice The signature is not `from`'s.
    error MockStablecoinInvalidSignature(address from);

    constructor() ERC20("Mock USD (local only)", "mUSD") EIP712("Mock USD (local only)", "2") {}

    /// @notice Mints `amount` units to `to`, for anyone: local buyers fund themselves.
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    /// @notice 6, as USDC.
    function decimals() public pure override returns (uint8) {
        return 6;
    }

    /// @notice EIP-3009, as USDC: moves `value` from `from` to `to` on `from`'s EIP-712 signature (v, r, s), for
    /// anyone who submits it, once per `nonce`, while `validAfter < block.timestamp < validBefore`.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        if (block.timestamp <= validAfter || block.timestamp >= validBefore) {
            revert MockStablecoinAuthorizationNotValidNow(validAfter, validBefore);
        }
        if (_authorizationUsed[from][nonce]) revert MockStablecoinAuthorizationUsed(from, nonce);
        bytes32 digest = _hashTypedDataV4(
            keccak256(abi.encode(TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce))
        );
        (address signer, ECDSA.RecoverError err,) = ECDSA.tryRecover(digest, v, r, s);
        if (err != ECDSA.RecoverError.NoError || signer != from) revert MockStablecoinInvalidSignature(from);
        _authorizationUsed[from][nonce] = true;
        emit AuthorizationUsed(from, nonce);
        _transfer(from, to, value);
    }

    /// @notice EIP-3009: whether `authorizer`'s authorization `nonce` was used.
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizationUsed[authorizer][nonce];
    }
}
