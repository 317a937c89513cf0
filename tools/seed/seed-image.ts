import type { Kysely, Transaction } from "kysely";
import { sql } from "kysely";
import { processImage } from "../../api/src/lib/image-pipeline.ts";
import { LocalDiskStorage } from "../../api/src/lib/storage.ts";

/**
 * The one image every seeded artwork shares, through the platform's image pipeline once: the
 * original and its derivatives stored under `artworks/seed/`, and each artwork's columns and
 * derivative rows written as an upload would (docs/decisions.md#images), so the backfill finds
 * nothing to do.
 */
export async function seedImage(storageDir: string, original: Buffer) {
  const processed = await processImage(original);
  const storage = new LocalDiskStorage(storageDir);
  const key = `artworks/seed/${processed.sha256}.${processed.type.extension}`;
  await storage.put(key, original, processed.type.contentType);
  const derivatives = await Promise.all(
    processed.derivatives.map(async (d) => {
      const derivativeKey = `artworks/seed/${processed.sha256}-${d.name}.webp`;
      await storage.put(derivativeKey, d.body, d.contentType);
      return { ...d, key: derivativeKey, bytes: d.body.length };
    }),
  );
  return {
    key,
    sha256: processed.sha256,
    contentType: processed.type.contentType,
    bytes: original.length,
    /** Each artwork's columns of the pipeline's findings, and its derivative rows. */
    async record(trx: Transaction<any> | Kysely<any>, ids: string[]): Promise<void> {
      await sql`update artworks set image_width = ${processed.width}, image_height = ${processed.height}, image_metadata = ${processed.metadata}::text[], image_processed_at = now()
                where id = any(${ids}::text[])`.execute(trx);
      for (const d of derivatives) {
        await sql`insert into artwork_images (artwork_id, name, storage_key, content_type, width, height, bytes, sha256)
                  select id, ${d.name}, ${d.key}, ${d.contentType}, ${d.width}, ${d.height}, ${d.bytes}, ${d.sha256} from unnest(${ids}::text[]) as t(id)`.execute(trx);
      }
    },
  };
}
