import canonicalize from "canonicalize";
import { type Hex, keccak256, stringToBytes } from "viem";
import type { Artwork, ArtworkDimensions } from "./artworks.tables.ts";

/**
 * The public certificate document of an artwork (docs/decisions.md#certificate-hash): exactly these
 * fields, no more, so that anyone can rebuild it from the artwork's public record and recompute its
 * hash.
 */
export interface CertificateDocument {
  artwork_id: string;
  artist_id: string;
  title: string;
  year: number;
  medium: string;
  dimensions: ArtworkDimensions;
  /** Lower-case hex SHA-256 of the image bytes. */
  image_sha256: string;
}

export function certificateDocument(
  artwork: Pick<Artwork, "id" | "artist_id" | "title" | "year" | "medium" | "dimensions">,
  imageSha256: string,
): CertificateDocument {
  const { width, height, unit } = artwork.dimensions;
  return {
    artwork_id: artwork.id,
    artist_id: artwork.artist_id,
    title: artwork.title,
    year: artwork.year,
    medium: artwork.medium,
    dimensions: { width, height, unit },
    image_sha256: imageSha256,
  };
}

/** RFC 8785 (JSON Canonicalization Scheme) text of the document: the exact bytes that are hashed. */
export function canonicalDocument(document: CertificateDocument): string {
  const text = canonicalize(document);
  if (text === undefined) throw new Error("the certificate document cannot be canonicalized");
  return text;
}

/** `certificate_hash = keccak256(UTF-8 bytes of the canonical document)`, 0x-hex. */
export function certificateHashOf(canonical: string): Hex {
  return keccak256(stringToBytes(canonical));
}
