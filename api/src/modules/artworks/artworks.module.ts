import { defineModule, migrationsOf } from "../module.ts";
import type { UsersService } from "../users/users.service.ts";
import { registerArtworksRoutes } from "./artworks.routes.ts";
import { ArtworkAsks } from "./artwork-asks.service.ts";
import { ArtworkLinks } from "./artwork-links.ts";
import { ArtworksService } from "./artworks.service.ts";
import { CertificationPipeline, FETCH_IMAGE_TASK } from "./certification.service.ts";
import { ImageFetcher } from "./image-fetch.ts";
import { OwnershipService } from "./ownership.service.ts";

/**
 * Artworks and their certification on-chain (the `certify` chain operation kind), image downloads
 * in a runner of their own, the admin verify override, the holder's ask (`for_sale`, artwork-asks.service.ts). Tables: artworks.tables.ts.
 */
export const artworksModule = defineModule<
  { artworks: ArtworksService; ownership: OwnershipService; certification: CertificationPipeline; imageFetcher: ImageFetcher; artworkLinks: ArtworkLinks; artworkAsks: ArtworkAsks },
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
    const imageFetcher = new ImageFetcher({ db, config, logger, storage, certification });
    const ownership = new OwnershipService({ db, logger, users, certificates: indexedChain.certificates, publicClient, certificateAddress: config.chain.artCertificateAddress });
    const artworks = new ArtworksService({ db, config, logger, storage, users, ownership, certificates: indexedChain.certificates, certification, links: artworkLinks });
    const artworkAsks = new ArtworkAsks({ certificates: indexedChain.certificates, ownership, logger });
    return { artworks, ownership, certification, imageFetcher, artworkLinks, artworkAsks };
  },
  routes: ({ api }, { artworks }) => registerArtworksRoutes(api, artworks),
  chainOperationKinds: ({ certification }) => [certification],
  // A move of the certificate ends its holder's ask (for_sale, price_usd).
  chainProjections: ({ artworkAsks }) => [artworkAsks.projection],
  worker: ({ certification, imageFetcher }, { config }) => ({
    // Downloads of image_url wait on other people's servers: a runner of their own, so certification
    // slots never wait on a URL (a per-artist cap inside keeps one artist from taking every slot).
    runners: [{ name: "images", concurrency: config.certification.imageFetchConcurrency, pollIntervalMs: 1000, fetchBatch: config.jobs.fetchBatch }],
    tasks: { images: { [FETCH_IMAGE_TASK]: imageFetcher.task } },
    start: () => certification.start(),
    stop: () => certification.stop(),
  }),
});
