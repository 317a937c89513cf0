import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import ArtExchangeModule from "./ArtExchangeModule.js";

/**
 * ArtExchangeModule, then the first step of handing its DEFAULT_ADMIN_ROLE from the deployer to
 * parameter `newAdmin` (a multisig), as ArtPlatformAdminHandoverModule does for the platform:
 * `beginDefaultAdminTransfer(newAdmin)`; the new admin accepts after `defaultAdminDelay()` (3 days).
 */
export default buildModule("ArtExchangeAdminHandoverModule", (m) => {
  const { artExchange } = m.useModule(ArtExchangeModule);
  const newAdmin = m.getParameter<string>("newAdmin");
  m.call(artExchange, "beginDefaultAdminTransfer", [newAdmin]);
  return { artExchange };
});
