import sharp, { type Metadata } from "sharp";
import { sha256Hex } from "./secrets.ts";
import { type ImageType, MAX_IMAGE_BYTES, sniffImageType } from "./images.ts";

/**
 * One pipeline for every image, uploaded or downloaded (docs/decisions.md#images): its header read
 * for its size, a decompression bomb refused before a pixel is decoded (`inspectImage`), then
 * decoded once into the derivatives everyone else is served (`processImage`): WebP, oriented as the camera meant, with no
 * metadata (EXIF, GPS, XMP, IPTC, camera data) at all. The original is kept as it came: the
 * certificate's `image_sha256` is over its bytes.
 */

/** Pixels an image may declare: 100 megapixels (a 10,000 × 10,000 scan); more is refused before decoding. */
export const MAX_IMAGE_PIXELS = 100_000_000;

/** The derivatives, by name, and the longest side each fits within (an image is never enlarged). */
export const DERIVATIVE_SIZES = { thumbnail: 640, display: 2048 } as const;
export type DerivativeName = keyof typeof DERIVATIVE_SIZES;
export const DERIVATIVE_NAMES = Object.keys(DERIVATIVE_SIZES) as DerivativeName[];

/** WebP quality of the derivatives: the display size stays close to the original, the thumbnail small. */
const QUALITY: Record<DerivativeName, number> = { thumbnail: 75, display: 85 };

export interface Derivative {
  name: DerivativeName;
  body: Buffer;
  contentType: "image/webp";
  width: number;
  height: number;
  sha256: string;
}

export const METADATA_BLOCKS = ["exif", "xmp", "iptc"] as const;
export type MetadataBlock = (typeof METADATA_BLOCKS)[number];

export interface ProcessedImage extends InspectedImage {
  derivatives: Derivative[];
}

/** Why an image cannot be taken: too big to decode (413) or not a decodable image of an accepted type (415). */
export class ImageRefusal extends Error {
  override name = "ImageRefusal";
  constructor(
    readonly status: 413 | 415,
    message: string,
  ) {
    super(message);
  }
}

/** What an image's header says of it, with nothing decoded: a bomb or an unreadable header is an ImageRefusal. */
export interface InspectedImage {
  type: ImageType;
  sha256: string;
  /** As displayed: after the EXIF orientation. */
  width: number;
  height: number;
  metadata: MetadataBlock[];
}

/** The image's type, size and metadata from its header (about a millisecond): what an upload checks before it is stored. */
export async function inspectImage(bytes: Buffer): Promise<InspectedImage> {
  if (bytes.length > MAX_IMAGE_BYTES) throw new ImageRefusal(413, `The image exceeds ${MAX_IMAGE_BYTES / 1024 / 1024} MiB`);
  const type = sniffImageType(bytes);
  if (!type) throw new ImageRefusal(415, "The image must be a JPEG, PNG, WebP or GIF file (recognized by its content, not its name)");
  const header = await readHeader(bytes);
  const declared = header.width * header.height;
  if (declared > MAX_IMAGE_PIXELS) {
    throw new ImageRefusal(413, `The image declares ${header.width} × ${header.height} pixels (${megapixels(declared)} megapixels); at most ${megapixels(MAX_IMAGE_PIXELS)} megapixels are accepted`);
  }
  // Orientation 5-8 swaps the sides as displayed.
  const swapped = (header.orientation ?? 1) >= 5;
  const [width, height] = swapped ? [header.height, header.width] : [header.width, header.height];
  const metadata = METADATA_BLOCKS.filter((block) => header[block] !== undefined);
  return { type, sha256: sha256Hex(bytes), width, height, metadata };
}

/** The image inspected, then decoded once into its derivatives; an ImageRefusal when it cannot be taken. */
export async function processImage(bytes: Buffer): Promise<ProcessedImage> {
  const inspected = await inspectImage(bytes);
  const derivatives: Derivative[] = [];
  try {
    // Decoded once, to the largest size's pixels (JPEG shrinks while it decodes); each size is made from those.
    const largest = Math.max(...Object.values(DERIVATIVE_SIZES));
    const pixels = await sharp(bytes, { limitInputPixels: MAX_IMAGE_PIXELS, failOn: "error" })
      .rotate()
      .resize({ width: largest, height: largest, fit: "inside", withoutEnlargement: true })
      .raw()
      .toBuffer({ resolveWithObject: true });
    const raw = { raw: { width: pixels.info.width, height: pixels.info.height, channels: pixels.info.channels } };
    for (const name of DERIVATIVE_NAMES) {
      const side = DERIVATIVE_SIZES[name];
      const { data, info } = await sharp(pixels.data, raw)
        .resize({ width: side, height: side, fit: "inside", withoutEnlargement: true })
        .webp({ quality: QUALITY[name], effort: 2 })
        .toBuffer({ resolveWithObject: true });
      derivatives.push({ name, body: data, contentType: "image/webp", width: info.width, height: info.height, sha256: sha256Hex(data) });
    }
  } catch (err) {
    throw new ImageRefusal(415, `The image could not be decoded: ${reasonOf(err)}`);
  }
  return { ...inspected, derivatives };
}

async function readHeader(bytes: Buffer): Promise<Metadata & { width: number; height: number }> {
  let header: Metadata;
  try {
    // The header only: nothing is decoded, whatever size it declares.
    header = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw new ImageRefusal(415, `The image could not be read: ${reasonOf(err)}`);
  }
  if (!header.width || !header.height) throw new ImageRefusal(415, "The image does not say its size");
  return header as Metadata & { width: number; height: number };
}

const megapixels = (pixels: number) => Math.round(pixels / 1e5) / 10;

/** libvips' first line, without the noise of the lines after it. */
function reasonOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split("\n")[0]!.replace(/^Input (buffer|file) /, "").trim() || "unknown error";
}
