import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import ArtPlatformModule from "./ArtPlatformModule.js";

/**
 * ArtPlatformModule, then the first of the two steps that hand DEFAULT_ADMIN_ROLE of ArtCertificate,
 * ArtShares, ArtMarket and AuditAnchor from the deployer to parameter `newAdmin` (a multisig):
 * `beginDefaultAdminTransfer(newAdmin)`, sent by the deployer, which stays admin until the new admin
 * calls `acceptDefaultAdminTransfer()` on each contract once `defaultAdminDelay()` (3 days at
 * deployment) has passed; `cancelDefaultAdminTransfer()` stops it meanwhile. ArtForwarder has no admin.
 */
export default buildModule("ArtPlatformAdminHandoverModule", (m) => {
  const platform = m.useModule(ArtPlatformModule);
  const newAdmin = m.getParameter<string>("newAdmin");
  const { artCertificate, artShares, artMarket, auditAnchor } = platform;
  for (const contract of [artCertificate, artShares, artMarket, auditAnchor]) {
    m.call(contract, "beginDefaultAdminTransfer", [newAdmin]);
  }
  return platform;
});
