import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import ArtCertificateModule from "./ArtCertificateModule.js";

/**
 * Deploys `ArtExchange` (sales paid on-chain) over the `ArtCertificate` of ArtCertificateModule, and grants
 * ORDER_SIGNER_ROLE to parameter `orderSigner` (default: the deployer). Parameters: `paymentToken` (required:
 * a USD stablecoin with 6 decimals, e.g. USDC; on a local chain the address of MockStablecoinModule's token),
 * `treasury` (paid the fee; default: the deployer), `feeBps` (default 250, at most 1000) and `admin`
 * (default: the deployer). The grant is sent from the deployer, so `admin` must be the deployer here; hand
 * DEFAULT_ADMIN_ROLE over afterwards as for the other contracts. Not part of ArtPlatformModule yet.
 */
export default buildModule("ArtExchangeModule", (m) => {
  const { artCertificate } = m.useModule(ArtCertificateModule);
  const admin = m.getParameter("admin", m.getAccount(0));
  const paymentToken = m.getParameter<string>("paymentToken");
  const treasury = m.getParameter("treasury", m.getAccount(0));
  const feeBps = m.getParameter("feeBps", 250);
  const orderSigner = m.getParameter("orderSigner", m.getAccount(0));

  const artExchange = m.contract("ArtExchange", [admin, artCertificate, paymentToken, treasury, feeBps]);
  const orderSignerRole = m.staticCall(artExchange, "ORDER_SIGNER_ROLE", [], 0, { id: "OrderSignerRole" });
  m.call(artExchange, "grantRole", [orderSignerRole, orderSigner], { id: "GrantOrderSignerRole" });
  return { artExchange };
});
