import type { Insertable } from "kysely";
import type { Db } from "../../db/database.ts";
import type { Artwork, ArtworkImage, ArtworkImagesTable } from "./artworks.tables.ts";

export type NewArtworkImage = Insertable<ArtworkImagesTable>;

/** What the pipeline learnt of an original: the artwork's columns. */
export type ProcessedColumns = Pick<Artwork, "image_width" | "image_height" | "image_metadata" | "image_refusal">;

/** An artwork's derivatives (none before its image is processed). */
export function imagesOf(db: Db, artworkId: string): Promise<ArtworkImage[]> {
  return db.selectFrom("artwork_images").selectAll().where("artwork_id", "=", artworkId).orderBy("width").execute();
}

export function imageOf(db: Db, artworkId: string, name: ArtworkImage["name"]): Promise<ArtworkImage | undefined> {
  return db.selectFrom("artwork_images").selectAll().where("artwork_id", "=", artworkId).where("name", "=", name).executeTakeFirst();
}

/** Derivatives stored with their artwork's processing; a second pass over the same original (a backfill and a request at once) keeps the first. */
export async function insertImages(db: Db, rows: NewArtworkImage[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto("artwork_images").values(rows).onConflict((oc) => oc.columns(["artwork_id", "name"]).doNothing()).execute();
}

/** The pipeline's findings on an artwork processed after it was stored (backfill, on demand); the first pass wins. */
export async function markProcessed(db: Db, artworkId: string, columns: ProcessedColumns): Promise<void> {
  await db
    .updateTable("artworks")
    .set({ ...columns, image_processed_at: new Date() })
    .where("id", "=", artworkId)
    .where("image_processed_at", "is", null)
    .execute();
}

/** Stored images the pipeline has not seen yet (artworks stored before it), oldest first. */
export function unprocessed(db: Db, limit: number): Promise<Pick<Artwork, "id" | "image_storage_key">[]> {
  return db
    .selectFrom("artworks")
    .select(["id", "image_storage_key"])
    .where("image_storage_key", "is not", null)
    .where("image_processed_at", "is", null)
    .orderBy("id")
    .limit(limit)
    .execute();
}

/** The artworks as their process job needs them. */
export function artworksOf(db: Db, artworkIds: string[]): Promise<Artwork[]> {
  if (artworkIds.length === 0) return Promise.resolve([]);
  return db.selectFrom("artworks").selectAll().where("id", "in", artworkIds).orderBy("id").execute();
}
