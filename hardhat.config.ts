import { createRequire } from "node:module";
import hardhatToolboxViem from "@nomicfoundation/hardhat-toolbox-viem";
import { configVariable, defineConfig } from "hardhat/config";
import { verificationSettings } from "./tools/deploy/verification.ts";

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
    tests: { nodejs: "test/contracts", solidity: "test/contracts" },
  },
  // `hardhat test` runs both: node:test (*.test.ts) and the Solidity fuzz/invariant tests (*.t.sol).
  // Bounded so that `npm test` stays quick on 2 cores; raise them for a deeper run, e.g. before a release.
  test: {
    solidity: {
      fuzz: { runs: 256 },
      invariant: { runs: 64, depth: 32 },
    },
  },
  networks: {
    hardhatMainnet: { type: "edr-simulated", chainType: "l1" },
    localhost: { type: "http", chainType: "l1", url: configVariable("CHAIN_RPC_URL") },
    // Any public EVM chain: `npm run deploy:contracts -- --network public` (docs/operators/deploying.md).
    // With DEPLOY_CHAIN_ID set, Hardhat refuses an RPC that serves another chain.
    public: {
      type: "http",
      chainType: "generic",
      url: configVariable("DEPLOY_RPC_URL"),
      accounts: [configVariable("DEPLOYER_PRIVATE_KEY")],
      ...(process.env.DEPLOY_CHAIN_ID ? { chainId: Number(process.env.DEPLOY_CHAIN_ID) } : {}),
    },
  },
  // Source verification (Etherscan, Blockscout, Sourcify), each on only when configured.
  ...verificationSettings(process.env),
});
