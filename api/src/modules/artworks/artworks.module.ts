import { defineModule, migrationsOf } from "../module.ts";
import type { UsersService } from "../users/users.service.ts";
import { registerArtworksRoutes } from "./artworks.routes.ts";
import { ArtworkAsks } from "./artwork-asks.service.ts";
import { ArtworkImages, IMAGES_BACKFILL_TASK } from "./artwork-images.ts";
import { ArtworkLinks } from "./artwork-links.ts";
import { ArtworksService } from "./artworks.service.ts";
import { CertificationPipeline, FETCH_IMAGE_TASK, PROCESS_IMAGE_TASK } from "./certification.service.ts";
import { ImageFetcher } from "./image-fetch.ts";
import { OwnershipService } from "./ownership.service.ts";

/**
 * Artworks and their certification on-chain (the `certify` chain operation kind), image downloads
 * in a runner of their own, one image pipeline for uploads and downloads (artwork-images.ts), the admin verify override, the holder's ask (`for_sale`, artwork-asks.service.ts). Tables: artworks.tables.ts.
 */
export const artworksModule = defineModule<
  { artworks: ArtworksService; ownership: OwnershipService; certification: CertificationPipeline; imageFetcher: ImageFetcher; artworkImages: ArtworkImages; artworkLinks: ArtworkLinks; artworkAsks: ArtworkAsks },
  { users: UsersService }
>({
  name: "artworks",
  migrations: migrationsOf(import.meta.url),
  create: ({ db, config, logger, relayer, publicClient, storage, indexedChain, chainOperations, links, users }) => {
    const artworkLinks = new ArtworkLinks(() => links.baseUrl);
    const certification = new CertificationPipeline({
      db,
      config,
      logger,
      relayer,
      publicClient,
      certificates: indexedChain.certificates,
      operations: chainOperations,
      metadataUrl: artworkLinks.metadata,
    });
    const ownership = new OwnershipService({ db, logger, users, certificates: indexedChain.certificates, publicClient, certificateAddress: config.chain.artCertificateAddress });
    const artworkImages = new ArtworkImages({ db, logger, storage, ownership, links: artworkLinks, certification });
    const imageFetcher = new ImageFetcher({ db, config, logger, images: artworkImages, certification });
    const artworks = new ArtworksService({ db, config, logger, users, ownership, certificates: indexedChain.certificates, certification, links: artworkLinks, images: artworkImages });
    const artworkAsks = new ArtworkAsks({ certificates: indexedChain.certificates, ownership, logger });
    return { artworks, ownership, certification, imageFetcher, artworkImages, artworkLinks, artworkAsks };
  },
  routes: ({ api }, { artworks }) => registerArtworksRoutes(api, artworks),
  chainOperationKinds: ({ certification }) => [certification],
  // A move of the certificate ends its holder's ask (for_sale, price_usd).
  chainProjections: ({ artworkAsks }) => [artworkAsks.projection],
  worker: ({ certification, imageFetcher, artworkImages }, { config }) => ({
    // Downloads of image_url wait on other people's servers: a runner of their own, so certification
    // slots never wait on a URL (a per-artist cap inside keeps one artist from taking every slot).
    runners: [{ name: "images", concurrency: config.certification.imageFetchConcurrency, pollIntervalMs: 1000, fetchBatch: config.jobs.fetchBatch }],
    // The images' runner also makes the derivatives of uploads (before their certification) and of originals stored before the pipeline.
    tasks: { images: { [FETCH_IMAGE_TASK]: imageFetcher.task, [PROCESS_IMAGE_TASK]: artworkImages.processTask, [IMAGES_BACKFILL_TASK]: artworkImages.backfillTask } },
    start: async () => {
      await certification.start();
      await artworkImages.startBackfill();
    },
    stop: () => certification.stop(),
  }),
});
