import type { ArtworksService } from "../artworks/artworks.service.ts";
import type { OwnershipService } from "../artworks/ownership.service.ts";
import { defineModule } from "../module.ts";
import { registerCertificatesRoutes } from "./certificates.routes.ts";
import { CertificatesService } from "./certificates.service.ts";

/** Certificates as read from the indexed chain, their document and the public verify page. No tables. */
export const certificatesModule = defineModule<{ certificates: CertificatesService }, { artworks: ArtworksService; ownership: OwnershipService }>({
  name: "certificates",
  create: ({ config, logger, publicClient, indexedChain, artworks, ownership }) => ({
    certificates: new CertificatesService({ config, logger, publicClient, certificates: indexedChain.certificates, artworks, ownership }),
  }),
  routes: ({ api }, { certificates }) => registerCertificatesRoutes(api, certificates),
});
