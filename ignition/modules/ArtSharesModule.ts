import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import ArtCertificateModule from "./ArtCertificateModule.js";

/** Deploys `ArtShares` over the `ArtCertificate` of ArtCertificateModule. */
export default buildModule("ArtSharesModule", (m) => {
  const { artCertificate } = m.useModule(ArtCertificateModule);
  const admin = m.getParameter("admin", m.getAccount(0));
  const sharesUri = m.getParameter("sharesUri", "http://127.0.0.1:3000/v1/fractional/metadata/{id}.json");
  const artShares = m.contract("ArtShares", [admin, artCertificate, sharesUri]);
  return { artShares };
});
