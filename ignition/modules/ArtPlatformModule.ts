import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import ArtCertificateModule from "./ArtCertificateModule.js";
import ArtSharesModule from "./ArtSharesModule.js";

/**
 * The whole on-chain platform: both contracts, and the minter roles granted to parameter `relayer`
 * (default: the deployer). The grants are sent from the deployer (account 0), so the `admin`
 * parameters of the two modules must be the deployer when this module is used. In production, hand
 * DEFAULT_ADMIN_ROLE to a multisig afterwards: beginDefaultAdminTransfer, then acceptDefaultAdminTransfer
 * after the delay (README, "Admin keys and upgrades").
 */
export default buildModule("ArtPlatformModule", (m) => {
  const { artCertificate } = m.useModule(ArtCertificateModule);
  const { artShares } = m.useModule(ArtSharesModule);
  const relayer = m.getParameter("relayer", m.getAccount(0));

  const certifierRole = m.staticCall(artCertificate, "CERTIFIER_ROLE", [], 0, { id: "CertifierRole" });
  m.call(artCertificate, "grantRole", [certifierRole, relayer], { id: "GrantCertifierRole" });

  const shareIssuerRole = m.staticCall(artShares, "SHARE_ISSUER_ROLE", [], 0, { id: "ShareIssuerRole" });
  m.call(artShares, "grantRole", [shareIssuerRole, relayer], { id: "GrantShareIssuerRole" });

  return { artCertificate, artShares };
});
