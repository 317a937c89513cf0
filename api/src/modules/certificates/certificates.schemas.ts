import { idParam, timestamp } from "../../lib/schema.ts";
import { provenanceEntrySchema } from "../artworks/artworks.schemas.ts";
import { z } from "../../openapi/zod.ts";

const hash32 = z.string().openapi({ example: "0x3f1c9b6a0d2e4f8a7c5b1e9d0a6f3c2b8e7d4a1f0c9b8e7d6a5f4e3d2c1b0a9f" });
const address = z.string().openapi({ example: "0x5fbdb2315678afecb367f032d93f642f64180aa3" });

export const artworkIdParams = z.object({ id: idParam("artwork") });

export const verifyPageParams = z.object({ artwork_id: idParam("artwork", "artwork_id") });

export const certificateSchema = z
  .object({
    artwork_id: z.string(),
    certificate_hash: hash32.openapi({ description: "As recorded on-chain" }),
    issued_at: timestamp.openapi({ description: "Timestamp of the certifying block" }),
    chain: z.string().openapi({ example: "hardhat-local" }),
    chain_id: z.number().int(),
    contract_address: address,
    token_id: z.number().int(),
    verified: z
      .boolean()
      .openapi({ description: "Whether the on-chain hash equals the hash of the artwork's public certificate document, recomputed now" }),
    issuer: z.string().openapi({ description: "The platform that issued the certificate" }),
    owner: address.openapi({ description: "Current holder of the certificate token" }),
    tx_hash: hash32,
    block_number: z.number().int(),
    document_url: z.string(),
    verify_url: z.string(),
    removed_at: timestamp.nullable().openapi({ description: "When the artwork was removed from the catalogue (DELETE /v1/artworks/:id); its certificate and provenance stay readable here" }),
    provenance: z.array(provenanceEntrySchema).openapi({ description: "The artwork's provenance, as its detail shows it: off-chain entries and the certificate's transfers on-chain, in time order" }),
  })
  .openapi("Certificate", { description: "Read from the indexed chain data (the chain is the source of truth)." });

export const verifyQuery = z.object({
  hash: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hex string")
    .openapi({ description: "A certificate hash (keccak256 of a certificate document)" }),
});

export const hashVerificationSchema = z
  .object({
    certificate_hash: hash32,
    artwork_id: z.string(),
    token_id: z.number().int(),
    owner: address,
    chain: z.string(),
    chain_id: z.number().int(),
    contract_address: address,
    tx_hash: hash32,
    block_number: z.number().int(),
    issued_at: timestamp,
    verify_url: z.string(),
  })
  .openapi("CertificateHashVerification", { description: "The on-chain certificate that carries the hash." });

export const certificateDocumentSchema = z
  .object({
    artwork_id: z.string(),
    artist_id: z.string(),
    title: z.string(),
    year: z.number().int(),
    medium: z.string(),
    dimensions: z.object({ width: z.number(), height: z.number(), unit: z.string() }),
    image_sha256: z.string(),
  })
  .openapi("CertificateDocument", {
    description:
      "The canonical certificate document, served as its exact RFC 8785 bytes: keccak256 of the body is the certificate hash.",
  });
