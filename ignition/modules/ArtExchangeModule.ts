import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import type { ArgumentType, IgnitionModuleBuilder } from "@nomicfoundation/ignition-core";

/**
 * Adds `ArtExchange` over `certificate`, paid in `paymentToken`, to the module being built, and grants
 * ORDER_SIGNER_ROLE to parameter `orderSigner` (default: the deployer). Parameters of the calling module:
 * `treasury` (paid the fee; default: the deployer), `feeBps` (default 250, at most 1000) and `admin`
 * (default: the deployer; it must be the deployer, who sends the grant). ArtExchangeModule and
 * LocalExchangeModule differ only in where the certificate and the payment token come from.
 */
export function buildArtExchange(m: IgnitionModuleBuilder, futures: { certificate: ArgumentType; paymentToken: ArgumentType }) {
  const admin = m.getParameter("admin", m.getAccount(0));
  const treasury = m.getParameter("treasury", m.getAccount(0));
  const feeBps = m.getParameter("feeBps", 250);
  const orderSigner = m.getParameter("orderSigner", m.getAccount(0));

  const artExchange = m.contract("ArtExchange", [admin, futures.certificate, futures.paymentToken, treasury, feeBps]);
  const orderSignerRole = m.staticCall(artExchange, "ORDER_SIGNER_ROLE", [], 0, { id: "OrderSignerRole" });
  m.call(artExchange, "grantRole", [orderSignerRole, orderSigner], { id: "GrantOrderSignerRole" });
  return artExchange;
}

/**
 * Deploys `ArtExchange` (sales paid on-chain) over an `ArtCertificate` already deployed, parameter
 * `certificate` (required), so it can join a platform deployed before it. Parameters: `paymentToken`
 * (required: a USD stablecoin with 6 decimals, e.g. USDC; on a local chain LocalExchangeModule deploys
 * one), `orderSigner`, `treasury`, `feeBps` and `admin` as in buildArtExchange. Hand DEFAULT_ADMIN_ROLE
 * over afterwards as for the other contracts.
 */
export default buildModule("ArtExchangeModule", (m) => {
  const certificate = m.getParameter<string>("certificate");
  const paymentToken = m.getParameter<string>("paymentToken");
  const artExchange = buildArtExchange(m, { certificate, paymentToken });
  return { artExchange };
});
