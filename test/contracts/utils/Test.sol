// SPDX-License-Identifier: MIT
pragma solidity 0.8.34;

/// @notice The cheatcodes these tests use, as Hardhat's Solidity test runner (EDR) implements them
/// (the forge-std `Vm` subset; forge-std itself is not on npm in a usable form: see
/// docs/contributors/tests.md#the-contracts).
interface Vm {
    function prank(address msgSender) external;
    function startPrank(address msgSender) external;
    function stopPrank() external;
    function warp(uint256 newTimestamp) external;
    function addr(uint256 privateKey) external pure returns (address keyAddr);
    function sign(uint256 privateKey, bytes32 digest) external pure returns (uint8 v, bytes32 r, bytes32 s);
    function expectRevert(bytes calldata revertData) external;
    function assume(bool condition) external pure;
    function label(address account, string calldata newLabel) external;
    function toString(uint256 value) external pure returns (string memory);
    function assertEq(uint256 left, uint256 right, string calldata error) external pure;
    function assertEq(address left, address right, string calldata error) external pure;
    function assertEq(bytes32 left, bytes32 right, string calldata error) external pure;
    function assertEq(bool left, bool right, string calldata error) external pure;
    function assertLe(uint256 left, uint256 right, string calldata error) external pure;
    function assertTrue(bool condition, string calldata error) external pure;
}

/// @notice Base of the Solidity tests: `vm`, `bound` and the invariant fuzzer's target list, as in forge-std.
abstract contract Test {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    address[] private _targetContracts;

    /// @notice Tells the invariant fuzzer which contracts to call (all deployed ones when empty).
    function targetContracts() public view returns (address[] memory) {
        return _targetContracts;
    }

    function targetContract(address target) internal {
        _targetContracts.push(target);
    }

    /// @notice `x` mapped into [min, max], uniformly enough for fuzzing and keeping small values as they are.
    function bound(uint256 x, uint256 min, uint256 max) internal pure returns (uint256) {
        require(min <= max, "bound: min > max");
        if (x >= min && x <= max) return x;
        uint256 size = max - min + 1;
        if (size == 0) return x; // the whole uint256 range
        return min + (x % size);
    }
}
