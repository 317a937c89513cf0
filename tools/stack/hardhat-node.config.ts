/**
 * The config `hardhat node` runs with under the stack (startHardhatNode): hardhat.config.ts without
 * its plugins, which the node does not use and which take a second or more to load on each start.
 * The artifacts are the project's, so the node still decodes the platform's reverts in its log.
 */
import { defineConfig } from "hardhat/config";

export default defineConfig({
  paths: { artifacts: "../../artifacts", cache: "../../cache" },
  networks: {
    // `hardhat node` serves the network named "node". A chain brought back from its journal starts
    // at the genesis time the journal recorded, which gives the same genesis block again.
    node: {
      type: "edr-simulated",
      ...(process.env.HARDHAT_NODE_INITIAL_DATE ? { initialDate: process.env.HARDHAT_NODE_INITIAL_DATE } : {}),
    },
  },
});
