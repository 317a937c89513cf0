import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";
import { buildArtExchange } from "./ArtExchangeModule.js";
import MockStablecoinModule from "./MockStablecoinModule.js";

/**
 * LOCAL CHAINS ONLY: deploys `MockStablecoin` (MockStablecoinModule) and an `ArtExchange` paid in it over
 * the `ArtCertificate` at parameter `certificate` (required), granting ORDER_SIGNER_ROLE to parameter
 * `orderSigner` (default: the deployer; the stack passes its relayer). Parameters `treasury`, `feeBps`
 * and `admin` as in ArtExchangeModule. On a public chain deploy ArtExchangeModule with a real stablecoin.
 */
export default buildModule("LocalExchangeModule", (m) => {
  const { mockStablecoin } = m.useModule(MockStablecoinModule);
  const certificate = m.getParameter<string>("certificate");
  const artExchange = buildArtExchange(m, { certificate, paymentToken: mockStablecoin });
  return { artExchange, mockStablecoin };
});
