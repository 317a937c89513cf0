import { ApiError } from "./errors.ts";

/** The image types an artwork may have (docs/decisions.md#images), recognized by their first bytes, never by name. */
export interface ImageType {
  contentType: "image/jpeg" | "image/png" | "image/webp" | "image/gif";
  extension: "jpg" | "png" | "webp" | "gif";
}

export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

const ascii = (bytes: Buffer, start: number, text: string) => bytes.subarray(start, start + text.length).toString("latin1") === text;

/** The type of `bytes` by magic number, or null when it is none of JPEG, PNG, WebP, GIF. */
export function sniffImageType(bytes: Buffer): ImageType | null {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    return { contentType: "image/jpeg", extension: "jpg" };
  }
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    return { contentType: "image/png", extension: "png" };
  }
  if (bytes.length >= 12 && ascii(bytes, 0, "RIFF") && ascii(bytes, 8, "WEBP")) {
    return { contentType: "image/webp", extension: "webp" };
  }
  if (bytes.length >= 6 && (ascii(bytes, 0, "GIF87a") || ascii(bytes, 0, "GIF89a"))) {
    return { contentType: "image/gif", extension: "gif" };
  }
  return null;
}

/**
 * The type of an uploaded image, checked by the rules every upload follows
 * (docs/decisions.md#images): not empty (400), at most MAX_IMAGE_BYTES (413), JPEG/PNG/WebP/GIF by
 * content, never by name (415).
 */
export function checkedImage(file: { field: string; bytes: Buffer }): ImageType {
  if (file.bytes.length === 0) throw ApiError.validation([{ field: file.field, code: "too_small", message: "the image file is empty" }]);
  if (file.bytes.length > MAX_IMAGE_BYTES) throw new ApiError(413, "payload_too_large", "The image exceeds 20 MiB");
  const type = sniffImageType(file.bytes);
  if (!type) throw new ApiError(415, "unsupported_media_type", "The image must be a JPEG, PNG, WebP or GIF file (recognized by its content, not its name)");
  return type;
}
