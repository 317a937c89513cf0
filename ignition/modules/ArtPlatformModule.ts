import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import ArtCertificateModule from "./ArtCertificateModule.js";
import ArtForwarderModule from "./ArtForwarderModule.js";
import ArtMarketModule from "./ArtMarketModule.js";
import ArtSharesModule from "./ArtSharesModule.js";
import AuditAnchorModule from "./AuditAnchorModule.js";

/**
 * The whole on-chain platform: the five contracts, and the relayer's roles granted to parameter
 * `relayer` (default: the deployer): CERTIFIER_ROLE, SHARE_ISSUER_ROLE, SETTLER_ROLE (ArtMarket) and
 * ANCHORER_ROLE (AuditAnchor). The grants are sent from the deployer (account 0), so the `admin`
 * parameters of the modules must be the deployer when this module is used. In production, hand
 * DEFAULT_ADMIN_ROLE to a multisig afterwards: beginDefaultAdminTransfer, then acceptDefaultAdminTransfer
 * after the delay (docs/operators/deploying.md#admin-keys-and-upgrades).
 */
export default buildModule("ArtPlatformModule", (m) => {
  const { artForwarder } = m.useModule(ArtForwarderModule);
  const { artCertificate } = m.useModule(ArtCertificateModule);
  const { artShares } = m.useModule(ArtSharesModule);
  const { artMarket } = m.useModule(ArtMarketModule);
  const { auditAnchor } = m.useModule(AuditAnchorModule);
  const relayer = m.getParameter("relayer", m.getAccount(0));

  const certifierRole = m.staticCall(artCertificate, "CERTIFIER_ROLE", [], 0, { id: "CertifierRole" });
  m.call(artCertificate, "grantRole", [certifierRole, relayer], { id: "GrantCertifierRole" });

  const shareIssuerRole = m.staticCall(artShares, "SHARE_ISSUER_ROLE", [], 0, { id: "ShareIssuerRole" });
  m.call(artShares, "grantRole", [shareIssuerRole, relayer], { id: "GrantShareIssuerRole" });

  const settlerRole = m.staticCall(artMarket, "SETTLER_ROLE", [], 0, { id: "SettlerRole" });
  m.call(artMarket, "grantRole", [settlerRole, relayer], { id: "GrantSettlerRole" });

  const anchorerRole = m.staticCall(auditAnchor, "ANCHORER_ROLE", [], 0, { id: "AnchorerRole" });
  m.call(auditAnchor, "grantRole", [anchorerRole, relayer], { id: "GrantAnchorerRole" });

  return { artForwarder, artCertificate, artShares, artMarket, auditAnchor };
});
