import { configVariable, type HardhatUserConfig } from "hardhat/config";

/**
 * What `hardhat ignition verify` (run by `npm run deploy:contracts -- --verify`) publishes the
 * contracts' sources to, from the environment: only the providers whose setting is present are on.
 *
 *   ETHERSCAN_API_KEY   Etherscan (its v2 API serves every chain it knows, one key for all)
 *   ETHERSCAN_API_URL   an Etherscan-compatible API for a chain Etherscan does not know (with EXPLORER_URL)
 *   BLOCKSCOUT_URL      the chain's Blockscout explorer (its API at BLOCKSCOUT_URL/api); BLOCKSCOUT_API_KEY for its Pro API
 *   SOURCIFY_API_URL    a Sourcify server, e.g. https://sourcify.dev/server
 *
 * ETHERSCAN_API_URL and BLOCKSCOUT_URL describe the explorers of chain DEPLOY_CHAIN_ID to Hardhat
 * (`chainDescriptors`); without them Hardhat-verify looks the chain up in Etherscan's and Blockscout's
 * own lists. Keys stay configuration variables, resolved only when verification runs.
 */
export function verificationSettings(env: Record<string, string | undefined>): Pick<HardhatUserConfig, "verify" | "chainDescriptors"> {
  const value = (name: string) => env[name]?.trim() || undefined;
  const withoutSlash = (url: string | undefined) => url?.replace(/\/+$/, "");
  const blockscoutUrl = withoutSlash(value("BLOCKSCOUT_URL"));
  const etherscanApiUrl = value("ETHERSCAN_API_URL");
  const explorerUrl = withoutSlash(value("EXPLORER_URL"));
  const chainId = value("DEPLOY_CHAIN_ID");

  const blockExplorers = {
    ...(blockscoutUrl ? { blockscout: { url: blockscoutUrl, apiUrl: `${blockscoutUrl}/api` } } : {}),
    ...(etherscanApiUrl ? { etherscan: { url: explorerUrl ?? etherscanApiUrl, apiUrl: etherscanApiUrl } } : {}),
  };
  return {
    verify: {
      etherscan: value("ETHERSCAN_API_KEY") ? { apiKey: configVariable("ETHERSCAN_API_KEY") } : { enabled: false },
      blockscout: blockscoutUrl
        ? { enabled: true, ...(value("BLOCKSCOUT_API_KEY") ? { apiKey: configVariable("BLOCKSCOUT_API_KEY") } : {}) }
        : { enabled: false },
      sourcify: value("SOURCIFY_API_URL") ? { enabled: true, apiUrl: withoutSlash(value("SOURCIFY_API_URL")) } : { enabled: false },
    },
    ...(chainId && Object.keys(blockExplorers).length > 0
      ? { chainDescriptors: { [chainId]: { name: value("CHAIN_NAME") ?? `chain-${chainId}`, blockExplorers } } }
      : {}),
  };
}

/** The names of the providers `verificationSettings` turns on. */
export function enabledVerifiers(env: Record<string, string | undefined>): string[] {
  const { verify } = verificationSettings(env);
  return Object.entries(verify ?? {})
    .filter(([, provider]) => provider?.enabled !== false)
    .map(([name]) => name);
}
