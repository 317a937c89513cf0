/**
 * The source-verification settings hardhat.config.ts takes from the environment: a provider is on
 * only when its setting is present, keys stay configuration variables (never values in the config),
 * and a chain the explorers' own lists may lack is described to Hardhat. Hardhat-verify itself runs
 * against a stand-in Sourcify in e2e/public-chain.test.ts.
 */
import { configVariable } from "hardhat/config";
import { describe, expect, it } from "vitest";
import { enabledVerifiers, verificationSettings } from "../../tools/deploy/verification.ts";

describe("verification settings", () => {
  it("turns every provider off when none is configured, so --verify has nothing to use", () => {
    expect(verificationSettings({ DEPLOY_CHAIN_ID: "84532", EXPLORER_URL: "https://sepolia.basescan.org" })).toEqual({
      verify: { etherscan: { enabled: false }, blockscout: { enabled: false }, sourcify: { enabled: false } },
    });
    expect(enabledVerifiers({})).toEqual([]);
  });

  it("uses Etherscan with ETHERSCAN_API_KEY, read by Hardhat as a configuration variable", () => {
    const { verify, chainDescriptors } = verificationSettings({ ETHERSCAN_API_KEY: "secret-key", DEPLOY_CHAIN_ID: "11155111" });
    expect(verify?.etherscan).toEqual({ apiKey: configVariable("ETHERSCAN_API_KEY") });
    expect(JSON.stringify(verify)).not.toContain("secret-key");
    // A chain Etherscan serves needs no description.
    expect(chainDescriptors).toBeUndefined();
    expect(enabledVerifiers({ ETHERSCAN_API_KEY: "secret-key" })).toEqual(["etherscan"]);
  });

  it("describes the chain's Blockscout and an Etherscan-compatible API for DEPLOY_CHAIN_ID", () => {
    const env = {
      DEPLOY_CHAIN_ID: "424242",
      CHAIN_NAME: "stand-in",
      BLOCKSCOUT_URL: "https://blockscout.example/",
      BLOCKSCOUT_API_KEY: "pro-key",
      ETHERSCAN_API_KEY: "key",
      ETHERSCAN_API_URL: "https://api.scan.example/api",
      EXPLORER_URL: "https://scan.example/",
    };
    const { verify, chainDescriptors } = verificationSettings(env);
    expect(verify?.blockscout).toEqual({ enabled: true, apiKey: configVariable("BLOCKSCOUT_API_KEY") });
    expect(chainDescriptors).toEqual({
      "424242": {
        name: "stand-in",
        blockExplorers: {
          blockscout: { url: "https://blockscout.example", apiUrl: "https://blockscout.example/api" },
          etherscan: { url: "https://scan.example", apiUrl: "https://api.scan.example/api" },
        },
      },
    });
    expect(enabledVerifiers(env)).toEqual(["etherscan", "blockscout"]);
  });

  it("uses the Sourcify server of SOURCIFY_API_URL", () => {
    expect(verificationSettings({ SOURCIFY_API_URL: "https://sourcify.dev/server/" }).verify?.sourcify).toEqual({
      enabled: true,
      apiUrl: "https://sourcify.dev/server",
    });
    expect(enabledVerifiers({ SOURCIFY_API_URL: "https://sourcify.dev/server", BLOCKSCOUT_URL: " " })).toEqual(["sourcify"]);
  });
});
