import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { artifacts } from "hardhat";

import { artCertificateAbi } from "../../contracts/abi/ArtCertificate.js";
import { artExchangeAbi } from "../../contracts/abi/ArtExchange.js";
import { artForwarderAbi } from "../../contracts/abi/ArtForwarder.js";
import { artMarketAbi } from "../../contracts/abi/ArtMarket.js";
import { artSharesAbi } from "../../contracts/abi/ArtShares.js";
import { auditAnchorAbi } from "../../contracts/abi/AuditAnchor.js";

// The API and the indexer use these committed ABIs: they must be exactly what the contracts compile to.
const regenerate = "run `npx hardhat build && npx tsx contracts/abi/generate.ts`";

const exported = [
  ["ArtCertificate", "artCertificateAbi", artCertificateAbi],
  ["ArtShares", "artSharesAbi", artSharesAbi],
  ["ArtMarket", "artMarketAbi", artMarketAbi],
  ["AuditAnchor", "auditAnchorAbi", auditAnchorAbi],
  ["ArtForwarder", "artForwarderAbi", artForwarderAbi],
  ["ArtExchange", "artExchangeAbi", artExchangeAbi],
] as const;

describe("ABI exports", () => {
  for (const [contractName, exportName, exportedAbi] of exported) {
    it(`test_${exportName}_matchesTheArtifact`, async () => {
      const { abi } = await artifacts.readArtifact(contractName);
      assert.deepStrictEqual(exportedAbi, abi, `contracts/abi/${contractName}.ts is stale: ${regenerate}`);
    });
  }
});
