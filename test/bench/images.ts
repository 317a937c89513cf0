/**
 * The image pipeline (api/src/lib/image-pipeline.ts): what it adds to a registration's answer (the
 * header check), and how long after the request the image's sizes are served (its process job).
 * Uploads of images of several sizes through POST /v1/artworks, one after another, beside uploads
 * of a 1x1 PNG: the difference of the answers' medians is the pipeline's share of the request. Also
 * the pipeline alone, in this process. BENCH_IMAGES_DIR adds the JPEG, PNG and WebP files of a
 * folder (e.g. a Debian wallpaper package's) as kinds of their own.
 */
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { processImage } from "../../api/src/lib/image-pipeline.ts";
import { BENCH_ADMIN_KEY, type BenchContext, call, percentile, table } from "./context.ts";

const RUNS = Number(process.env.BENCH_IMAGE_RUNS ?? 10);
const PIXEL = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64");

/** A photograph's texture: smooth gradients under fine noise, so that it compresses like one. */
async function photoLike(width: number, height: number, format: "jpeg" | "png"): Promise<Buffer> {
  const gradient = Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><defs><linearGradient id="g" x2="1" y2="1"><stop offset="0" stop-color="#2b4a6f"/><stop offset="0.5" stop-color="#d9a45b"/><stop offset="1" stop-color="#5b2b3a"/></linearGradient></defs><rect width="100%" height="100%" fill="url(#g)"/></svg>`,
  );
  const noise = await sharp({ create: { width, height, channels: 3, background: { r: 0, g: 0, b: 0 }, noise: { type: "gaussian", mean: 128, sigma: 12 } } }).png().toBuffer();
  const image = sharp(gradient).composite([{ input: noise, blend: "overlay" }]);
  return format === "jpeg" ? image.jpeg({ quality: 85 }).toBuffer() : image.png().toBuffer();
}

function kindsFromDir(dir: string | undefined): [string, Buffer][] {
  if (!dir) return [];
  return readdirSync(dir)
    .filter((f) => /\.(jpe?g|png|webp)$/i.test(f))
    .sort()
    .map((f) => [f, readFileSync(path.join(dir, f))]);
}

export async function benchImages(ctx: BenchContext): Promise<string> {
  const api = await ctx.startApi({ STORAGE_DIR: path.join(ctx.dir, "storage") });
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const created = await call(api.url, "POST", "/v1/admin/users", { username: "bench_image_artist", email: "bench_image_artist@example.test", role: "artist" }, admin.token);
  const artist = (await call(api.url, "POST", "/v1/auth/token", { api_key: created.api_key.secret, scope: ["write"] })).token as string;

  const kinds: [string, Buffer][] = [
    ["1x1 PNG", PIXEL],
    ["phone photo, 4032 × 3024 JPEG", await photoLike(4032, 3024, "jpeg")],
    ["illustration, 1600 × 1200 PNG", await photoLike(1600, 1200, "png")],
    ...kindsFromDir(process.env.BENCH_IMAGES_DIR),
  ];
  /** The request's time to its answer, and to the image's sizes being served (its process job, after the answer). */
  const upload = async (bytes: Buffer, n: number): Promise<{ answered: number; processed: number }> => {
    const form = new FormData();
    const fields = { title: `Bench ${n}`, year: "2024", medium: "Oil on canvas", dimensions: JSON.stringify({ width: 60, height: 80, unit: "cm" }) };
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    // Bytes after the image's end make each upload distinct, as a new photograph would be.
    form.append("image", new Blob([bytes, Buffer.from(`#${n}`)]), "image");
    const sent = performance.now();
    const res = await fetch(new URL("/v1/artworks", api.url), { method: "POST", headers: { authorization: `Bearer ${artist}` }, body: form });
    const body = (await res.json()) as { id: string };
    if (res.status !== 201) throw new Error(`upload answered ${res.status}`);
    const answered = performance.now() - sent;
    for (;;) {
      const detail = await call(api.url, "GET", `/v1/artworks/${body.id}`);
      if (detail.images) return { answered, processed: performance.now() - sent };
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };

  const rows: (string | number)[][] = [];
  let pixelP50 = 0;
  let n = 0;
  for (const [name, bytes] of kinds) {
    await upload(bytes, n++); // warm-up
    const http: number[] = [];
    const done: number[] = [];
    const alone: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const { answered, processed } = await upload(bytes, n++);
      http.push(answered);
      done.push(processed);
      const started = performance.now();
      await processImage(bytes);
      alone.push(performance.now() - started);
    }
    for (const list of [http, done, alone]) list.sort((a, b) => a - b);
    const meta = await sharp(bytes).metadata();
    const p50 = percentile(http, 50);
    if (name === "1x1 PNG") pixelP50 = p50;
    rows.push([name, `${meta.width} × ${meta.height}`, `${Math.round(bytes.length / 1024)} KiB`, Math.round(p50), Math.round(percentile(http, 90)), Math.round(p50 - pixelP50), Math.round(percentile(done, 50)), Math.round(percentile(alone, 50))]);
  }
  return [
    `Images: ${os.cpus().length} cores, HTTP and worker in one process; ${RUNS} uploads of each kind one after another (after one to warm up), each once its sizes are served`,
    "",
    table(["image", "pixels", "size", "answer p50 ms", "p90 ms", "added to the 1x1 PNG's p50", "sizes served p50 ms", "pipeline alone p50 ms"], rows),
  ].join("\n");
}
