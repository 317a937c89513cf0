import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";

/** Deploys `ArtCertificate`; parameter `admin` (default: the deployer) gets DEFAULT_ADMIN_ROLE. */
export default buildModule("ArtCertificateModule", (m) => {
  const admin = m.getParameter("admin", m.getAccount(0));
  const artCertificate = m.contract("ArtCertificate", [admin]);
  return { artCertificate };
});
