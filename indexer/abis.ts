// The contracts' full ABIs, generated from the Hardhat artifacts by api/src/chain/abi/generate.ts:
// the indexer decodes events with exactly what was compiled and deployed.
export { artCertificateAbi } from "../api/src/chain/abi/ArtCertificate.ts";
export { artSharesAbi } from "../api/src/chain/abi/ArtShares.ts";
export { artMarketAbi } from "../api/src/chain/abi/ArtMarket.ts";
export { auditAnchorAbi } from "../api/src/chain/abi/AuditAnchor.ts";
export { artExchangeAbi } from "../api/src/chain/abi/ArtExchange.ts";
