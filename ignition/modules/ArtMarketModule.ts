import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import ArtCertificateModule from "./ArtCertificateModule.js";

/** Deploys `ArtMarket` over the `ArtCertificate` of ArtCertificateModule; parameter `admin` (default: the deployer). */
export default buildModule("ArtMarketModule", (m) => {
  const { artCertificate } = m.useModule(ArtCertificateModule);
  const admin = m.getParameter("admin", m.getAccount(0));
  const artMarket = m.contract("ArtMarket", [admin, artCertificate]);
  return { artMarket };
});
