import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";

/**
 * Where artwork images are kept. Keys are relative, slash-separated names chosen by the API
 * (`artworks/<id>/<sha256>.png`); an object, once written, is never changed. Local disk is the
 * default; an S3 (or any blob store) adapter implements the same three calls.
 */
export interface ObjectStorage {
  put(key: string, body: Buffer, contentType: string): Promise<void>;
  /** The object, or null when there is none under `key`. */
  get(key: string): Promise<{ body: Buffer; contentType: string } | null>;
  delete(key: string): Promise<void>;
}

const KEY = /^[a-z0-9][a-z0-9_-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/;

/** Objects as files under `root`; the content type is derived from the key's extension. */
export class LocalDiskStorage implements ObjectStorage {
  private readonly root: string;

  constructor(root: string) {
    this.root = path.resolve(root);
  }

  async put(key: string, body: Buffer, _contentType: string): Promise<void> {
    const file = this.fileOf(key);
    await fs.mkdir(path.dirname(file), { recursive: true });
    // Written aside and renamed: a reader never sees half a file, a crash leaves no partial object.
    const temp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
    await fs.writeFile(temp, body);
    await fs.rename(temp, file);
  }

  async get(key: string): Promise<{ body: Buffer; contentType: string } | null> {
    try {
      return { body: await fs.readFile(this.fileOf(key)), contentType: contentTypeOf(key) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.fileOf(key), { force: true });
  }

  private fileOf(key: string): string {
    if (!KEY.test(key) || key.includes("..")) throw new Error(`invalid storage key ${JSON.stringify(key)}`);
    return path.join(this.root, ...key.split("/"));
  }
}

const CONTENT_TYPES: Record<string, string> = {
  jpg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  gif: "image/gif",
};

function contentTypeOf(key: string): string {
  return CONTENT_TYPES[key.slice(key.lastIndexOf(".") + 1)] ?? "application/octet-stream";
}
