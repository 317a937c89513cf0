import type { Logger } from "pino";
import type { Address, Hash, Hex } from "viem";
import { artCertificateAbi } from "../../../../contracts/abi/ArtCertificate.ts";
import { PermanentChainError } from "../../chain/errors.ts";
import { isAlreadyCertified, type Relayer } from "../../chain/relayer.ts";

/** The arguments of one certification (`ArtCertificate.CertificationRequest`). */
export interface CertificationRequest {
  to: Address;
  artworkId: string;
  certificateHash: Hex;
  tokenURI: string;
  royaltyReceiver: Address;
  royaltyBps: bigint;
}

/** Headroom of a batch's gas limit over the most a certification took so far (owners new to the contract cost more). */
const GAS_HEADROOM_PERCENT = 125n;
/** The most gas one transaction may use (EIP-7825: 2^24), which CERTIFICATION_BATCH_SIZE's cap respects. */
const MAX_TRANSACTION_GAS = 16_777_216n;

interface Waiting {
  request: CertificationRequest;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Gathers the certifications that attempts ask for at about the same time into `certifyBatch`
 * transactions (group commit): while `maxInFlight` transactions are on their way, new requests
 * wait and leave together in the next one, up to `maxBatch`. An idle batcher sends a request at
 * once, so a lone certification waits for nothing; under load each transaction, block and
 * indexed block carries many certifications instead of one.
 *
 * The contract skips an artwork that already holds a certificate, so duplicates (in one batch or
 * across batches and retries) still mint one token each and never fail the batch. The first batch
 * is estimated; later ones carry a gas limit learned from the mined ones' receipts, so the node
 * executes a batch once (mining it) rather than twice. A batch refused
 * for good (one invalid request reverts all, or a deployment without `certifyBatch`) is split, and
 * each request goes alone through `certify`, so that only a bad request fails.
 */
export class CertifyBatcher {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;
  /**
   * The most gas one certification of a mined batch took so far (its receipt's gasUsed over its
   * size); null until a batch was mined, and again after a batch failed (the bound may be why).
   * A batch is sent with a limit from it (GAS_HEADROOM_PERCENT over it a certification, at most
   * MAX_TRANSACTION_GAS) instead of an estimate, so the node executes each batch once, not twice.
   */
  private gasPerCertification: bigint | null = null;

  constructor(
    private readonly options: {
      relayer: Relayer;
      address: Address;
      maxBatch: number;
      maxInFlight: number;
      /** The transaction is in the node's pool: record its hash for each artwork before awaiting the receipt. */
      onSubmitted(artworkIds: string[], tx: { hash: Hash; nonce: number }): Promise<void>;
      logger: Logger;
    },
  ) {}

  /**
   * Resolves once a mined transaction carried `request` (the artwork then holds its certificate,
   * minted by it or before); rejects with the relayer's error (PermanentChainError, TransientChainError).
   */
  certify(request: CertificationRequest): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ request, resolve, reject });
      this.drain();
    });
  }

  private drain(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.options.maxBatch);
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        this.drain();
      });
    }
  }

  private async send(batch: Waiting[]): Promise<void> {
    const ids = batch.map((w) => w.request.artworkId);
    const onSubmitted = (tx: { hash: Hash; nonce: number }) => this.options.onSubmitted(ids, tx);
    try {
      if (batch.length === 1) {
        // A lone request uses `certify` (also on a deployment older than `certifyBatch`); its
        // AlreadyCertified revert means another attempt minted the token: done.
        const r = batch[0]!.request;
        await this.options.relayer
          .write({
            address: this.options.address,
            abi: artCertificateAbi,
            functionName: "certify",
            args: [r.to, r.artworkId, r.certificateHash, r.tokenURI, r.royaltyReceiver, r.royaltyBps],
            label: `certify ${r.artworkId}`,
            onSubmitted,
          })
          .catch((err: unknown) => {
            if (!isAlreadyCertified(err)) throw err;
          });
      } else {
        const size = BigInt(batch.length);
        const bound = this.gasPerCertification === null ? undefined : (this.gasPerCertification * size * GAS_HEADROOM_PERCENT) / 100n;
        const { receipt } = await this.options.relayer.write({
          address: this.options.address,
          abi: artCertificateAbi,
          functionName: "certifyBatch",
          args: [batch.map((w) => w.request)],
          label: `certifyBatch of ${batch.length} (${ids[0]}…)`,
          gas: bound === undefined ? undefined : bound < MAX_TRANSACTION_GAS ? bound : MAX_TRANSACTION_GAS,
          onSubmitted,
        });
        const perCertification = receipt.gasUsed / size;
        if (this.gasPerCertification === null || perCertification > this.gasPerCertification) this.gasPerCertification = perCertification;
      }
      for (const w of batch) w.resolve();
    } catch (err) {
      if (batch.length > 1) this.gasPerCertification = null;
      if (err instanceof PermanentChainError && batch.length > 1) {
        this.options.logger.warn({ size: batch.length, err: err.message }, "certifyBatch refused; certifying its artworks one by one");
        await Promise.all(batch.map((w) => this.send([w])));
        return;
      }
      for (const w of batch) w.reject(err);
    }
  }
}
