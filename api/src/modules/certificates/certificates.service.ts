import type { Logger } from "pino";
import type { Address, Chain, PublicClient, Transport } from "viem";
import { artCertificateAbi } from "../../../../contracts/abi/ArtCertificate.ts";
import { type IndexedCertificate, type IndexedCertificates, IndexerNotReadyError } from "../../chain/indexer-views.ts";
import type { Config } from "../../config.ts";
import { ApiError, found } from "../../lib/errors.ts";
import { iso, isoOrNull } from "../../lib/time.ts";
import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import { type LiveCertificate, type VerifyPageFacts, renderVerifyPage } from "./verify-page.ts";
import { withDeadline } from "../../lib/deadline.ts";

/** Who issues the certificates (the `issuer` of a certificate). */
export const ISSUER = "Art Platform";
/** The verify page's Content-Security-Policy, for the pages rendered like it (reports). */
export { VERIFY_PAGE_CSP } from "./verify-page.ts";
/** The verification page does not wait longer than this for its direct contract read. */
const CHAIN_READ_TIMEOUT_MS = 3_000;

export class CertificatesService {
  constructor(
    private readonly deps: {
      config: Config;
      logger: Logger;
      publicClient: PublicClient<Transport, Chain>;
      certificates: IndexedCertificates;
      artworks: ArtworksService;
      ownership: OwnershipService;
    },
  ) {}

  /** The certificate of an artwork (deleted ones too), from the indexed chain data; 404 until certified. */
  async forArtwork(artworkId: string) {
    const artwork = found(await this.deps.artworks.findAny(artworkId), "Artwork");
    const certificate = await this.indexed(() => this.deps.certificates.byArtworkId(artworkId));
    if (!certificate) throw new ApiError(404, "not_found", `Artwork ${artworkId} is not certified yet (status ${artwork.status})`);
    const document = await this.deps.artworks.certificateDocumentOf(artworkId);
    return {
      artwork_id: artworkId,
      certificate_hash: certificate.certificateHash,
      issued_at: iso(certificate.certifiedAt),
      chain: this.deps.config.chain.name,
      chain_id: this.deps.config.chain.id,
      contract_address: this.contractAddress(),
      token_id: Number(certificate.tokenId),
      verified: document?.hash === certificate.certificateHash,
      issuer: ISSUER,
      owner: certificate.owner,
      tx_hash: certificate.txHash,
      block_number: Number(certificate.blockNumber),
      document_url: this.deps.artworks.links.document(artworkId),
      verify_url: this.deps.artworks.links.verify(artworkId),
      removed_at: isoOrNull(artwork.deleted_at),
      provenance: (await this.deps.artworks.provenance(artworkId)) ?? [],
    };
  }

  /** Which artwork and token carry `hash` on-chain; 404 when none. */
  async verifyHash(hash: string) {
    const certificate = await this.indexed(() => this.deps.certificates.byHash(hash));
    if (!certificate) throw new ApiError(404, "not_found", "No on-chain certificate carries this hash");
    return {
      certificate_hash: certificate.certificateHash,
      artwork_id: certificate.artworkId,
      token_id: Number(certificate.tokenId),
      owner: certificate.owner,
      chain: this.deps.config.chain.name,
      chain_id: this.deps.config.chain.id,
      contract_address: this.contractAddress(),
      tx_hash: certificate.txHash,
      block_number: Number(certificate.blockNumber),
      issued_at: iso(certificate.certifiedAt),
      verify_url: this.deps.artworks.links.verify(certificate.artworkId),
    };
  }

  /** The exact canonical bytes of the artwork's certificate document. */
  async document(artworkId: string): Promise<string> {
    const doc = await this.deps.artworks.certificateDocumentOf(artworkId);
    if (!doc) throw new ApiError(404, "not_found", "The artwork's image has not been fetched yet, so its certificate document does not exist");
    return doc.canonical;
  }

  /** The auditor's page: on-chain facts beside the hash recomputed from the public document. */
  async verifyPage(artworkId: string): Promise<{ status: number; html: string }> {
    const { artworks, config } = this.deps;
    const artwork = await artworks.findAny(artworkId);
    if (!artwork) return { status: 404, html: renderVerifyPage({ kind: "unknown", artworkId }) };
    const [certificate, document] = await Promise.all([
      this.indexed(() => this.deps.certificates.byArtworkId(artworkId)),
      artworks.certificateDocumentOf(artworkId),
    ]);
    const links = artworks.links;
    const base: Omit<VerifyPageFacts, "kind" | "chain"> = {
      artworkId,
      title: artwork.title,
      status: artwork.status,
      deleted: artwork.deleted_at !== null,
      document: document ? { canonical: document.canonical, hash: document.hash } : null,
      documentUrl: links.document(artworkId),
      imageUrl: artwork.image_sha256 ? links.image(artworkId) : null,
      imageSha256: artwork.image_sha256,
      chainName: config.chain.name,
      chainId: config.chain.id,
      contractAddress: this.contractAddress(),
      explorerUrl: config.chain.explorerUrl ?? this.deps.publicClient.chain.blockExplorers?.default.url ?? null,
    };
    if (!certificate) return { status: 200, html: renderVerifyPage({ ...base, kind: "pending", chain: null }) };
    const live = await this.readContract(certificate);
    return { status: 200, html: renderVerifyPage({ ...base, kind: "certified", chain: { indexed: certificate, live } }) };
  }

  /**
   * The certificate straight from the contract (not the indexer), its holder as OwnershipService
   * reads it from the chain, and who sent the certifying transaction; null when the node does not
   * answer all three.
   */
  private async readContract(certificate: IndexedCertificate): Promise<LiveCertificate | null> {
    const address = this.deps.config.chain.artCertificateAddress;
    if (!address) return null;
    const client = this.deps.publicClient;
    try {
      const [onChain, owner, tx] = await withDeadline(
        Promise.all([
          client.readContract({ address, abi: artCertificateAbi, functionName: "certificateOf", args: [certificate.tokenId] }),
          this.deps.ownership.ownerOnChain(certificate.tokenId),
          client.getTransaction({ hash: certificate.txHash }),
        ]),
        CHAIN_READ_TIMEOUT_MS,
      );
      if (owner === null) return null;
      return {
        certificateHash: onChain.certificateHash,
        artworkKey: onChain.artworkKey,
        certifiedAt: new Date(Number(onChain.certifiedAt) * 1000),
        owner: owner as Address,
        sender: tx.from.toLowerCase() as Address,
      };
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message, token_id: Number(certificate.tokenId) }, "verify page: direct contract read failed");
      return null;
    }
  }

  private contractAddress(): string {
    return (this.deps.config.chain.artCertificateAddress ?? "").toLowerCase();
  }

  private async indexed<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (err) {
      if (err instanceof IndexerNotReadyError) {
        throw new ApiError(503, "service_unavailable", "The chain indexer is not ready yet; retry shortly", { headers: { "Retry-After": "5" } });
      }
      throw err;
    }
  }
}
