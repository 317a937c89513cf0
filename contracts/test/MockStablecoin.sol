// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title MockStablecoin
/// @notice LOCAL CHAINS AND TESTS ONLY. NEVER DEPLOY TO A PUBLIC CHAIN: anyone can `mint` any amount, so the
/// token is worth nothing. It stands in for the USD stablecoin `ArtExchange` is paid in (USDC on a public
/// chain, `PAYMENT_TOKEN_ADDRESS`): 6 decimals, so 1 USD is 1,000,000 units and a cent 10,000.
contract MockStablecoin is ERC20 {
    constructor() ERC20("Mock USD (local only)", "mUSD") {}

    /// @notice Mints `amount` units to `to`, for anyone: local buyers fund themselves.
    function mint(address to, uint256 amount) external {
        _mint(to, amount);
    }

    /// @notice 6, as USDC.
    function decimals() public pure override returns (uint8) {
        return 6;
    }
}
