/** The image types an artwork may have (CONTRACT §9), recognized by their first bytes, never by name. */
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
