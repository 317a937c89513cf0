import { type ApiRouter, Reply } from "../../http/route.ts";
import { MAX_IMAGE_BYTES } from "../../lib/images.ts";
import { z } from "../../openapi/zod.ts";
import * as s from "./artworks.schemas.ts";
import type { ArtworksService } from "./artworks.service.ts";

export function registerArtworksRoutes(api: ApiRouter, artworks: ArtworksService): void {
  api.route({
    method: "get",
    path: "/v1/artworks",
    operationId: "listArtworks",
    summary: "List artworks",
    description: "Newest first; soft-deleted artworks are not listed. `thumbnail_url` is the image URL (no resized thumbnails yet).",
    tags: ["Artworks"],
    auth: { public: true },
    query: s.artworksQuery,
    response: s.artworkListSchema,
    handler: ({ query }) => {
      const { page, limit, ...filter } = query;
      return artworks.list(filter, { page, limit });
    },
  });

  api.route({
    method: "post",
    path: "/v1/artworks",
    operationId: "createArtwork",
    summary: "Register an artwork and start its certification",
    description: [
      "JSON with `image_url` (fetched by the pipeline: https, public addresses only, 15 s, 20 MiB), or `multipart/form-data` with the file in the `image` part and the other fields as text parts (`dimensions` as a JSON string or as `dimensions[width]`, `dimensions[height]`, `dimensions[unit]`).",
      `Images: JPEG, PNG, WebP or GIF, recognized by content, up to ${MAX_IMAGE_BYTES / 1024 / 1024} MiB (413 above, 415 for other types).`,
      "Answers at once with `status: pending_certification`; the certificate is minted on-chain and the artwork becomes `certified` (event `artwork.certified`) when the chain has it, usually within seconds (`estimated_certification_time`).",
    ].join("\n\n"),
    tags: ["Artworks"],
    auth: { scope: "artworks:write", roles: ["artist", "admin"] },
    body: s.artworkCreateSchema,
    multipart: { fileField: "image", maxFileBytes: MAX_IMAGE_BYTES, toBody: s.artworkFormToBody, schema: s.artworkCreateFormSchema, body: s.artworkFormBodySchema },
    status: 201,
    response: s.artworkCreatedSchema,
    handler: ({ auth, body, file, transaction }) => artworks.create({ userId: auth.userId, role: auth.role }, body, file, transaction),
  });

  api.route({
    method: "get",
    path: "/v1/artworks/:id",
    operationId: "getArtwork",
    summary: "An artwork with its provenance, certificate hash and media",
    tags: ["Artworks"],
    auth: { public: true },
    params: s.artworkIdParams,
    errors: [404],
    response: s.artworkDetailSchema,
    handler: ({ auth, params }) => artworks.detail(params.id, auth ? { userId: auth.userId, role: auth.role } : null),
  });

  api.route({
    method: "patch",
    path: "/v1/artworks/:id",
    operationId: "updateArtwork",
    summary: "Change an artwork's price, description or sale status",
    description: "The holder of its certificate on-chain (the artist until it is certified and as long as they hold it; docs/ownership-and-money.md) or an admin. Fields of the certificate (title, year, medium, dimensions, image, artist) are immutable: 409 immutable_field. Other unknown fields are 400. `price_usd` and `for_sale` are the holder's ask (docs/decisions.md#for-sale): refused (409 `invalid_state`, `reason` `listed`, `selling` or `shares_issued`) while a listing stands (its price is the artwork's; cancel it to change) or the work is fractionalized; a move of the certificate to another wallet ends the ask (`for_sale` false, `price_usd` null).",
    tags: ["Artworks"],
    auth: { scope: "artworks:write" },
    params: s.artworkIdParams,
    body: s.artworkPatchSchema,
    errors: [404, 409],
    response: s.artworkPatchResultSchema,
    handler: ({ auth, params, body }) => artworks.update({ userId: auth.userId, role: auth.role }, params.id, body),
  });

  api.route({
    method: "delete",
    path: "/v1/artworks/:id",
    operationId: "deleteArtwork",
    summary: "Delete an artwork (soft)",
    description: "The holder of its certificate on-chain or an admin; refused (409 `invalid_state`, `reason` `listed`, `disputed` or `shares_issued`) while a listing, a dispute or shareholders hang off it. The artwork leaves listings and its detail answers 404; its certificate (on-chain and `/certificate`), provenance, image and metadata stay.",
    tags: ["Artworks"],
    auth: { scope: "artworks:write" },
    params: s.artworkIdParams,
    errors: [404, 409],
    response: s.artworkDeletedSchema,
    handler: ({ auth, params }) => artworks.remove({ userId: auth.userId, role: auth.role }, params.id),
  });

  api.route({
    method: "get",
    path: "/v1/artworks/:id/image",
    operationId: "getArtworkImage",
    summary: "The artwork's image",
    description: "Stable URL of the stored image (also of deleted artworks: the certificate refers to it). Its SHA-256 is the document's `image_sha256` (also in the ETag).",
    tags: ["Artworks"],
    auth: { public: true },
    params: s.artworkIdParams,
    errors: [404],
    produces: "image/*",
    response: z.string().openapi({ type: "string", format: "binary" }),
    handler: async ({ params }) => {
      const image = await artworks.image(params.id);
      return new Reply(200, image.body, {
        contentType: image.contentType,
        headers: {
          "Cache-Control": "public, max-age=31536000, immutable",
          ETag: `"${image.sha256}"`,
          "X-Content-Type-Options": "nosniff",
          "Content-Security-Policy": "default-src 'none'",
        },
      });
    },
  });

  api.route({
    method: "get",
    path: "/v1/artworks/:id/metadata.json",
    operationId: "getArtworkTokenMetadata",
    summary: "ERC-721 metadata of the artwork's certificate (its token URI)",
    tags: ["Artworks"],
    auth: { public: true },
    params: s.artworkIdParams,
    errors: [404],
    response: s.tokenMetadataSchema,
    handler: ({ params }) => artworks.tokenMetadata(params.id),
  });

  api.route({
    method: "post",
    path: "/v1/admin/artworks/:id/verify",
    operationId: "verifyArtwork",
    summary: "Certify an artwork by admin decision",
    description:
      "Certifies a pending or failed artwork through the same on-chain path, recording the admin as `certified_by` and the reason in the provenance. Waits up to 10 s for the chain: 200 when certified, else 202 with the pending state (the `artwork.certified` event follows). 409 invalid_state when already certified or deleted.",
    tags: ["Admin"],
    auth: { scope: "admin:write", roles: ["admin"] },
    params: s.artworkIdParams,
    body: s.adminVerifySchema,
    errors: [404, 409],
    response: s.adminVerifyResultSchema,
    alternatives: { 202: { description: "Accepted: the certification is under way (not on-chain within 10 s)", schema: s.adminVerifyResultSchema } },
    statusOf: (result: { status: string }) => (result.status === "certified" ? 200 : 202),
    handler: ({ auth, params, body, transaction }) => artworks.adminVerify(auth.userId, params.id, body, transaction),
  });
}
