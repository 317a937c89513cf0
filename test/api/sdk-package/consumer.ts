/**
 * An integrator's Node program: test/api/sdk-package.test.ts compiles it in a project outside the
 * repository, against @art-platform/sdk installed from its packed tarball, and runs it with plain
 * node. It reads API_URL, API_KEY and a signed webhook (WEBHOOK) from the environment and prints
 * what it saw as one JSON line.
 */
import { ApiError, type components, createArtPlatformClient, verifyWebhookSignature } from "@art-platform/sdk";

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set`);
  return value;
}

const api = createArtPlatformClient({ baseUrl: env("API_URL"), apiKey: env("API_KEY"), scope: ["write"] });
const { data: me } = await api.GET("/v1/users/me");

// No `tags`: a field the server fills in is optional.
const post: components["schemas"]["PostCreate"] = { type: "discussion", content: "From outside the repository" };
const headers = { "Idempotency-Key": `outside-${me.id}` };
const first = await api.POST("/v1/community/posts", { body: post, headers });
const replay = await api.POST("/v1/community/posts", { body: post, headers });
await api.POST("/v1/community/posts", { body: { type: "discussion", content: "A second one" } });

const pages: number[] = [];
const postIds: string[] = [];
for await (const page of api.pages("/v1/community/posts", { params: { query: { author_id: me.id, limit: 1 } } })) {
  pages.push(page.pagination.page);
  postIds.push(...page.data.map((p) => p.post_id));
}

let problem: { status: number; code: string; requestId: string | null } | null = null;
try {
  await api.GET("/v1/artworks/{id}", { params: { path: { id: "art_01JD3Y5V0Q3G7W7J6T4N4C2X1M" } } });
} catch (error) {
  if (!(error instanceof ApiError)) throw error;
  // @ts-expect-error: `code` is one of the documented codes (or http_<status>), and this is none of them
  if (error.code === "no_such_code") throw error;
  problem = { status: error.status, code: error.code, requestId: error.requestId };
}

const webhook = JSON.parse(env("WEBHOOK")) as { payload: string; headers: Record<string, string>; secret: string };
const verified = await verifyWebhookSignature(webhook.payload, webhook.headers, webhook.secret);
const tampered = await verifyWebhookSignature(webhook.payload.replace("ping", "pong"), webhook.headers, webhook.secret);

console.log(
  JSON.stringify({ me: me.id, created: first.data.post_id, replayed: replay.data.post_id, replayHeader: replay.response.headers.get("Idempotent-Replayed"), pages, postIds, problem, verified, tampered }),
);
