// Shared by the contract tests (this file holds no tests of its own).
// The contract types Hardhat generates at build (the root tsconfig does not include artifacts/):
/// <reference path="../../artifacts/contracts/ArtCertificate.sol/artifacts.d.ts" />
/// <reference path="../../artifacts/contracts/ArtShares.sol/artifacts.d.ts" />
/// <reference path="../../artifacts/contracts/ArtMarket.sol/artifacts.d.ts" />
/// <reference path="../../artifacts/contracts/AuditAnchor.sol/artifacts.d.ts" />
/// <reference path="../../artifacts/contracts/ArtForwarder.sol/artifacts.d.ts" />
/// <reference path="../../artifacts/contracts/ArtExchange.sol/artifacts.d.ts" />
/// <reference path="../../artifacts/contracts/test/MockStablecoin.sol/artifacts.d.ts" />
/// <reference path="../../artifacts/contracts/test/ERC1271WalletMock.sol/artifacts.d.ts" />
import { type Address, toFunctionSelector, type Abi } from "viem";

/** ERC-165 id of OpenZeppelin's IAccessControlDefaultAdminRules (its ten functions, without IAccessControl's). */
export const ACCESS_CONTROL_DEFAULT_ADMIN_RULES_ID = "0x31498786";
/** The initial delay of a DEFAULT_ADMIN_ROLE transfer in every contract with an admin: 3 days. */
export const ADMIN_DELAY_SECONDS = 3 * 24 * 60 * 60;

/** Names the first items of `items` in order, e.g. Hardhat's wallet clients #0, #1, ... as accounts. */
export function named<T, Name extends string>(items: readonly T[], ...names: Name[]): Record<Name, T> {
  return Object.fromEntries(
    names.map((name, index) => {
      const item = items[index];
      if (item === undefined) throw new Error(`no item #${index} for ${name}`);
      return [name, item];
    }),
  ) as Record<Name, T>;
}

/** The ERC-165 id of the interface whose ABI is `abi`: the XOR of its function selectors. */
export function interfaceId(abi: Abi): `0x${string}` {
  let id = 0;
  for (const item of abi) if (item.type === "function") id ^= Number.parseInt(toFunctionSelector(item).slice(2), 16);
  return `0x${(id >>> 0).toString(16).padStart(8, "0")}`;
}

export { exchangeDomain, type ExchangeOrder, ORDER_TYPES, UNITS_PER_CENT } from "../../api/src/chain/exchange.js";
