import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { artifacts } from "hardhat";

import { artCertificateAbi } from "../../api/src/chain/abi/ArtCertificate.js";
import { artSharesAbi } from "../../api/src/chain/abi/ArtShares.js";

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
});
