import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";

/**
 * LOCAL CHAINS ONLY: deploys `MockStablecoin`, a 6-decimal token anyone can mint, as ArtExchange's payment
 * token on a development chain (its address is ArtExchangeModule's `paymentToken`). Never deploy it to a
 * public chain: there `paymentToken` is a real USD stablecoin (PAYMENT_TOKEN_ADDRESS, e.g. USDC).
 */
export default buildModule("MockStablecoinModule", (m) => {
  const mockStablecoin = m.contract("MockStablecoin", []);
  return { mockStablecoin };
});
