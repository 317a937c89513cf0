import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { artifacts } from "hardhat";

import { artCertificateAbi } from "../../api/src/chain/abi/ArtCertificate.js";
import { artForwarderAbi } from "../../api/src/chain/abi/ArtForwarder.js";
import { artMarketAbi } from "../../api/src/chain/abi/ArtMarket.js";
import { artSharesAbi } from "../../api/src/chain/abi/ArtShares.js";
import { auditAnchorAbi } from "../../api/src/chain/abi/AuditAnchor.js";

// The API and the indexer use these committed ABIs: they must be exactly what the contracts compile to.
const regenerate = "run `npx hardhat build && npx tsx api/src/chain/abi/generate.ts`";

describe("ABI exports", () => {
  it("test_artCertificateAbi_matchesTheArtifact", async () => {
    const { abi } = await artifacts.readArtifact("ArtCertificate");
    assert.deepStrictEqual(artCertificateAbi, abi, `api/src/chain/abi/ArtCertificate.ts is stale: ${regenerate}`);
  });

  it("test_artSharesAbi_matchesTheArtifact", async () => {
    const { abi } = await artifacts.readArtifact("ArtShares");
    assert.deepStrictEqual(artSharesAbi, abi, `api/src/chain/abi/ArtShares.ts is stale: ${regenerate}`);
  });

  it("test_artMarketAbi_matchesTheArtifact", async () => {
    const { abi } = await artifacts.readArtifact("ArtMarket");
    assert.deepStrictEqual(artMarketAbi, abi, `api/src/chain/abi/ArtMarket.ts is stale: ${regenerate}`);
  });

  it("test_auditAnchorAbi_matchesTheArtifact", async () => {
    const { abi } = await artifacts.readArtifact("AuditAnchor");
    assert.deepStrictEqual(auditAnchorAbi, abi, `api/src/chain/abi/AuditAnchor.ts is stale: ${regenerate}`);
  });

  it("test_artForwarderAbi_matchesTheArtifact", async () => {
    const { abi } = await artifacts.readArtifact("ArtForwarder");
    assert.deepStrictEqual(artForwarderAbi, abi, `api/src/chain/abi/ArtForwarder.ts is stale: ${regenerate}`);
  });
});
