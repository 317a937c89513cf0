import { buildModule } from "@nomicfoundation/hardhat-ignition/modules";

/** Deploys `ArtForwarder`, the ERC-2771 forwarder ArtCertificate trusts (no admin, no parameters). */
export default buildModule("ArtForwarderModule", (m) => {
  const artForwarder = m.contract("ArtForwarder", []);
  return { artForwarder };
});
