import { createRequire } from "node:module";
import hardhatToolboxViem from "@nomicfoundation/hardhat-toolbox-viem";
import { configVariable, defineConfig } from "hardhat/config";

// Compilers cannot be downloaded here: every build profile uses the wasm solc from npm.
const require = createRequire(import.meta.url);
const solc = { version: "0.8.34", path: require.resolve("solc/soljson.js") };

export default defineConfig({
  plugins: [hardhatToolboxViem],
  solidity: {
    profiles: {
      default: { ...solc, settings: { evmVersion: "cancun" } },
      production: {
        ...solc,
        settings: { evmVersion: "cancun", optimizer: { enabled: true, runs: 200 } },
      },
    },
  },
  paths: {
    tests: { nodejs: "test/contracts" },
  },
  networks: {
    hardhatMainnet: { type: "edr-simulated", chainType: "l1" },
    localhost: { type: "http", chainType: "l1", url: configVariable("CHAIN_RPC_URL") },
  },
});
