import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import ArtForwarderModule from "./ArtForwarderModule.js";

/**
 * Deploys `ArtCertificate`, trusting the forwarder of ArtForwarderModule; parameter `admin` (default:
 * the deployer) gets DEFAULT_ADMIN_ROLE.
 */
export default buildModule("ArtCertificateModule", (m) => {
  const { artForwarder } = m.useModule(ArtForwarderModule);
  const admin = m.getParameter("admin", m.getAccount(0));
  const artCertificate = m.contract("ArtCertificate", [admin, artForwarder]);
  return { artCertificate };
});
