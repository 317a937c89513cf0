import { type ApiRouter, Reply } from "../../http/route.ts";
import { z } from "../../openapi/zod.ts";
import * as s from "./certificates.schemas.ts";
import type { CertificatesService } from "./certificates.service.ts";
import { VERIFY_PAGE_CSP } from "./verify-page.ts";

export function registerCertificatesRoutes(api: ApiRouter, certificates: CertificatesService): void {
  api.route({
    method: "get",
    path: "/v1/artworks/:id/certificate",
    operationId: "getCertificate",
    summary: "An artwork's on-chain certificate",
    description: "Read from the indexed chain data. 404 while the artwork is not certified; still answers after the artwork is deleted.",
    tags: ["Certificates"],
    auth: { public: true },
    params: s.artworkIdParams,
    errors: [404, 503],
    response: s.certificateSchema,
    handler: ({ params }) => certificates.forArtwork(params.id),
  });

  api.route({
    method: "get",
    path: "/v1/artworks/:id/certificate/document",
    operationId: "getCertificateDocument",
    summary: "The canonical certificate document",
    description:
      "The exact bytes whose keccak256 is the certificate hash: RFC 8785 canonical JSON of {artwork_id, artist_id, title, year, medium, dimensions, image_sha256}. Recompute the hash from this body without the API's help.",
    tags: ["Certificates"],
    auth: { public: true },
    params: s.artworkIdParams,
    errors: [404],
    produces: "application/json",
    response: s.certificateDocumentSchema,
    handler: async ({ params }) =>
      new Reply(200, await certificates.document(params.id), {
        contentType: "application/json; charset=utf-8",
        headers: { "Cache-Control": "public, max-age=60" },
      }),
  });

  api.route({
    method: "get",
    path: "/v1/certificates/verify",
    operationId: "verifyCertificateHash",
    summary: "Which artwork and token carry a certificate hash on-chain",
    tags: ["Certificates"],
    auth: { public: true },
    query: s.verifyQuery,
    errors: [404, 503],
    response: s.hashVerificationSchema,
    handler: ({ query }) => certificates.verifyHash(query.hash),
  });

  api.route({
    method: "get",
    path: "/verify/:artwork_id",
    operationId: "getVerificationPage",
    summary: "Verification page for auditors (HTML)",
    description:
      "The on-chain facts of the artwork's certificate (owner, token id, hash, transaction, block, contract) beside the hash recomputed from the public certificate document, with a match / mismatch verdict.",
    tags: ["Certificates"],
    auth: { public: true },
    params: s.verifyPageParams,
    errors: [503],
    produces: "text/html",
    response: z.string().openapi({ description: "An HTML page" }),
    // An unknown artwork is a page too (people follow these links), not problem+json.
    alternatives: { 404: { description: "No such artwork: an HTML page saying so", contentType: "text/html", schema: z.string().openapi({ description: "An HTML page" }) } },
    handler: async ({ params }) => {
      const page = await certificates.verifyPage(params.artwork_id);
      return new Reply(page.status, page.html, {
        contentType: "text/html; charset=utf-8",
        headers: { "Content-Security-Policy": VERIFY_PAGE_CSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store" },
      });
    },
  });
}
