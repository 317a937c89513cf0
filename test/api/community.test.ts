/**
 * Community: posts (filters, likes and comments under concurrency, multipart images, moderation),
 * discussions (orders, replies, pins), challenges (states, submissions of the holder's artworks, winners, challenge.joined),
 * the access matrix and refused inputs that store nothing, on a platform of its own (Postgres, chain, API).
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { beforeAll, describe, expect, it } from "vitest";
import { artworkInput, filesUnder, formFields, gifImage, pngImage, postMultipart, useArtworkPlatform } from "../support/artworks.ts";
import { certificateCallFrom, certifiedArtwork, indexedCertificate, ownerOnChain, walletOf } from "../support/marketplace.ts";
import { adminToken, createUser, expectProblem, type TestResponse, type TestUser } from "../support/api.ts";

// Every request ranks popular discussions afresh: the tests read the order right after changing it.
const p = useArtworkPlatform({ COMMUNITY_POPULAR_CACHE_MS: "0" });

/** A multipart request; `fields` as pairs sends a name more than once. */
async function form(path: string, token: string, fields: Record<string, string> | [string, string][], files: { field: string; bytes: Buffer; type?: string }[]): Promise<TestResponse> {
  const body = new FormData();
  for (const [k, v] of Array.isArray(fields) ? fields : Object.entries(fields)) body.append(k, v);
  for (const f of files) body.append(f.field, new Blob([f.bytes], { type: f.type ?? "image/png" }), "upload.bin");
  const res = await fetch(new URL(path, p.api.url), { method: "POST", headers: { authorization: `Bearer ${token}` }, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
}

const count = async (table: "community_posts" | "community_comments" | "community_post_likes" | "community_submissions" | "community_discussions" | "community_replies") =>
  Number((await p.db.selectFrom(table).select(sql<string>`count(*)`.as("n")).executeTakeFirstOrThrow()).n);

describe("community", () => {
  let artist: TestUser;
  let other: TestUser;
  let reader: TestUser;
  let admin: string;
  let artworkId: string;
  const req = (method: string, path: string, token?: string, body?: unknown) => p.api.request(method, path, { token, body });
  const post = async (user: TestUser | string, body: Record<string, unknown>) => {
    const res = await req("POST", "/v1/community/posts", typeof user === "string" ? user : user.token, body);
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const challenge = async (offsets: { startsInS: number; endsInS: number }) => {
    const res = await req("POST", "/v1/community/challenges", admin, {
      title: `Challenge ${randomBytes(3).toString("hex")}`,
      theme: "Light",
      prize_pool_usd: 500,
      starts_at: new Date(Date.now() + offsets.startsInS * 1000).toISOString(),
      deadline: new Date(Date.now() + offsets.endsInS * 1000).toISOString(),
    });
    expect(res.status, res.text).toBe(201);
    return res.body.challenge_id as string;
  };
  const closeChallenge = (id: string) =>
    p.db.updateTable("community_challenges").set({ starts_at: sql`now() - interval '2 hours'`, deadline: sql`now() - interval '1 hour'` }).where("id", "=", id).execute();

  beforeAll(async () => {
    [artist, other, reader, admin] = await Promise.all([
      createUser(p.api, { role: "artist" }),
      createUser(p.api, { role: "collector" }),
      createUser(p.api, { role: "collector", scope: ["read"] }),
      adminToken(p.api),
    ]);
    const created = await postMultipart(p.api.url, artist.token, formFields(artworkInput()), { bytes: pngImage() });
    expect(created.status, created.text).toBe(201);
    artworkId = created.body.id;
  }, 60_000);

  it("creates posts and lists them newest first with type (short and full names), author and tag filters and pagination", async () => {
    const tag = `t${randomBytes(4).toString("hex")}`;
    const share = await post(artist, { type: "artwork", content: "My new <b>piece</b>\nline two", tags: [tag, "oil"], artwork_id: artworkId });
    expect(share).toMatchObject({ type: "artwork_share", author_id: artist.id, artwork_id: artworkId, tags: [tag, "oil"], likes_count: 0, comments_count: 0 });
    expect(share.content).toBe("My new <b>piece</b>\nline two"); // stored as given, not escaped or rendered
    const talk = await post(other, { type: "discussion", content: "  spaces kept  ", tags: [tag] });
    expect(talk.content).toBe("  spaces kept  ");

    const byTag = await req("GET", `/v1/community/posts?tag=${tag}`);
    expect(byTag.body.data.map((x: any) => x.post_id)).toEqual([talk.post_id, share.post_id]);
    expect(byTag.body.pagination).toMatchObject({ page: 1, limit: 20, total: 2, has_more: false });
    for (const type of ["artwork", "artwork_share"]) {
      const res = await req("GET", `/v1/community/posts?tag=${tag}&type=${type}`);
      expect(res.body.data.map((x: any) => x.post_id)).toEqual([share.post_id]);
    }
    expect((await req("GET", `/v1/community/posts?tag=${tag}&type=discussion`)).body.data.map((x: any) => x.post_id)).toEqual([talk.post_id]);
    expect((await req("GET", `/v1/community/posts?tag=${tag}&author_id=${other.id}`)).body.data.map((x: any) => x.post_id)).toEqual([talk.post_id]);
    const page2 = await req("GET", `/v1/community/posts?tag=${tag}&limit=1&page=2`);
    expect(page2.body.data.map((x: any) => x.post_id)).toEqual([share.post_id]);
    expect(page2.body.pagination).toMatchObject({ total: 2, has_more: false });
    expectProblem(await req("GET", "/v1/community/posts?type=poem"), 400, "invalid_parameter");
    expect((await req("GET", `/v1/community/posts/${share.post_id}`)).body).toEqual(share);
    expectProblem(await req("GET", "/v1/community/posts/pst_01JD3Y5V0Q3G7W7J6T4N4C2X1M"), 404, "not_found");
  });

  it("refuses bad inputs and stores nothing", async () => {
    const before = await count("community_posts");
    const bad: [Record<string, unknown>, string][] = [
      [{ type: "discussion", content: "x".repeat(10_001) }, "content"],
      [{ type: "discussion", content: "ok", tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, "tags"],
      [{ type: "discussion", content: "ok", tags: ["x".repeat(33)] }, "tags.0"],
      [{ type: "discussion", content: "nul \u0000 here" }, "content"],
      [{ type: "discussion", content: "bell \u0007" }, "content"],
      [{ type: "artwork_share", content: "gone", artwork_id: "art_01JD3Y5V0Q3G7W7J6T4N4C2X1M" }, "artwork_id"],
      [{ type: "artwork_share", content: "which?" }, "artwork_id"],
      [{ type: "challenge_submission", content: "not here" }, "type"],
      [{ type: "discussion", content: "ok", extra: 1 }, "extra"],
    ];
    for (const [body, field] of bad) {
      const res = await req("POST", "/v1/community/posts", artist.token, body);
      expectProblem(res, 400, "validation_failed");
      expect(res.body.errors.map((e: any) => e.field)).toContain(field);
    }
    const comments = await count("community_comments");
    const target = await post(artist, { type: "discussion", content: "target" });
    expectProblem(await req("POST", `/v1/community/posts/${target.post_id}/comments`, other.token, { content: "\u0000" }), 400, "validation_failed");
    expectProblem(await req("POST", "/v1/community/discussions", other.token, { title: "t", content: "x".repeat(10_001) }), 400, "validation_failed");
    expect(await count("community_posts")).toBe(before + 1);
    expect(await count("community_comments")).toBe(comments);
  });

  it("keeps likes_count exact under 50 concurrent likers, repeated likes and concurrent unlikes", async () => {
    const target = await post(artist, { type: "discussion", content: "like me" });
    const likers = await Promise.all(Array.from({ length: 50 }, () => createUser(p.api)));
    const liked = await Promise.all([...likers, ...likers.slice(0, 10)].map((u) => req("POST", `/v1/community/posts/${target.post_id}/like`, u.token)));
    expect(liked.every((r) => r.status === 200 && r.body.liked === true)).toBe(true);
    expect((await req("GET", `/v1/community/posts/${target.post_id}`)).body.likes_count).toBe(50);
    const rows = () => p.db.selectFrom("community_post_likes").select(sql<string>`count(*)`.as("n")).where("post_id", "=", target.post_id).executeTakeFirstOrThrow();
    expect(Number((await rows()).n)).toBe(50);

    const unliked = await Promise.all([...likers.slice(0, 25), ...likers.slice(0, 5)].map((u) => req("DELETE", `/v1/community/posts/${target.post_id}/like`, u.token)));
    expect(unliked.every((r) => r.status === 200 && r.body.liked === false)).toBe(true);
    expect((await req("GET", `/v1/community/posts/${target.post_id}`)).body.likes_count).toBe(25);
    expect(Number((await rows()).n)).toBe(25);
  }, 60_000);

  it("comments: paginated oldest first, comments_count exact under concurrency; only the author edits, author or admin deletes", async () => {
    const target = await post(artist, { type: "discussion", content: "comment on me" });
    const made = await Promise.all(Array.from({ length: 30 }, (_, i) => req("POST", `/v1/community/posts/${target.post_id}/comments`, (i % 2 ? other : artist).token, { content: `c${i}` })));
    expect(made.every((r) => r.status === 201 && r.body.comment_id.startsWith("cmt_"))).toBe(true);
    expect((await req("GET", `/v1/community/posts/${target.post_id}`)).body.comments_count).toBe(30);
    const page = await req("GET", `/v1/community/posts/${target.post_id}/comments?limit=10&page=3`);
    expect(page.body.data).toHaveLength(10);
    expect(page.body.pagination).toMatchObject({ total: 30, has_more: false });

    const mine = made.find((r) => r.body.author_id === other.id)!.body;
    expectProblem(await req("PATCH", `/v1/community/comments/${mine.comment_id}`, artist.token, { content: "hijack" }), 403, "forbidden");
    expectProblem(await req("DELETE", `/v1/community/comments/${mine.comment_id}`, artist.token), 403, "forbidden");
    expect((await p.db.selectFrom("community_comments").select("content").where("id", "=", mine.comment_id).executeTakeFirstOrThrow()).content).toBe(mine.content);
    expect((await req("PATCH", `/v1/community/comments/${mine.comment_id}`, other.token, { content: "edited" })).body.content).toBe("edited");
    const deletions = await Promise.all([req("DELETE", `/v1/community/comments/${mine.comment_id}`, other.token), req("DELETE", `/v1/community/comments/${mine.comment_id}`, admin)]);
    expect(deletions.map((r) => r.status).sort()).toEqual([204, 404]);
    expect((await req("GET", `/v1/community/posts/${target.post_id}`)).body.comments_count).toBe(29);
  }, 30_000);

  it("BOLA and moderation: only the author edits or removes a post; an admin removes with a reason; removed posts are 404 to others", async () => {
    const target = await post(artist, { type: "discussion", content: "original", tags: ["a"] });
    const path = `/v1/community/posts/${target.post_id}`;
    expectProblem(await req("PATCH", path, other.token, { content: "defaced" }), 403, "forbidden");
    expectProblem(await req("DELETE", path, other.token), 403, "forbidden");
    expect((await req("GET", path)).body.content).toBe("original");
    const edited = await req("PATCH", path, artist.token, { content: "edited", tags: ["b"] });
    expect(edited.body).toMatchObject({ content: "edited", tags: ["b"] });

    expectProblem(await req("DELETE", path, admin), 400, "validation_failed");
    const removed = await p.api.request("DELETE", path, { token: admin, body: { reason: "spam" } });
    expect(removed.status, removed.text).toBe(200);
    expectProblem(await req("GET", path), 404, "not_found");
    expectProblem(await req("GET", path, artist.token), 404, "not_found");
    expectProblem(await req("POST", `${path}/like`, other.token), 404, "not_found");
    expect((await req("GET", path, admin)).body.removal).toMatchObject({ reason: "spam" });
    expect((await req("GET", `/v1/community/posts?author_id=${artist.id}`)).body.data.map((x: any) => x.post_id)).not.toContain(target.post_id);
    const row = await p.db.selectFrom("community_posts").selectAll().where("id", "=", target.post_id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ removal_reason: "spam", content: "edited" });
    expect(row.removed_at).toBeInstanceOf(Date);
  });

  it("multipart posts: up to 4 images typed by content and served back; a fifth or a non-image is refused and nothing is stored", async () => {
    const png = pngImage();
    const res = await form("/v1/community/posts", artist.token, { type: "discussion", content: "pics", tags: '["photo"]' }, [
      { field: "images", bytes: png },
      { field: "images", bytes: gifImage(), type: "image/png" },
    ]);
    expect(res.status, res.text).toBe(201);
    expect(res.body.images.map((i: any) => i.content_type)).toEqual(["image/png", "image/gif"]);
    expect(res.body.tags).toEqual(["photo"]);
    const served = await fetch(res.body.images[0].url);
    expect(served.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await served.arrayBuffer()).equals(png)).toBe(true);

    const posts = await count("community_posts");
    const files = filesUnder(p.storageDir).length;
    const five = await form("/v1/community/posts", artist.token, { type: "discussion", content: "too many" }, Array.from({ length: 5 }, () => ({ field: "images", bytes: pngImage() })));
    expectProblem(five, 400, "validation_failed");
    const text = await form("/v1/community/posts", artist.token, { type: "discussion", content: "not an image" }, [{ field: "images", bytes: pngImage() }, { field: "images", bytes: Buffer.from("hello, world"), type: "image/png" }]);
    expectProblem(text, 415, "unsupported_media_type");
    const badTags = await form("/v1/community/posts", artist.token, { type: "discussion", content: "x", tags: '["not json' }, [{ field: "images", bytes: pngImage() }]);
    expectProblem(badTags, 400, "validation_failed");
    const twice = await form("/v1/community/posts", artist.token, [["type", "discussion"], ["content", "a"], ["content", "b"]], [{ field: "images", bytes: pngImage() }]);
    expectProblem(twice, 400, "validation_failed");
    expect(twice.body.errors).toEqual([expect.objectContaining({ field: "content", code: "duplicate_field" })]);
    expect(await count("community_posts")).toBe(posts);
    expect(filesUnder(p.storageDir).length).toBe(files);
  });

  it("multipart tags: one part per tag (a form's array), one part (a JSON array or a single tag), or tags[n] parts", async () => {
    const post = async (fields: [string, string][]) => {
      const res = await form("/v1/community/posts", artist.token, [["type", "discussion"], ["content", "tagged"], ...fields], [{ field: "images", bytes: pngImage() }]);
      expect(res.status, res.text).toBe(201);
      return res.body.tags;
    };
    expect(await post([["tags", "sketch"], ["tags", "study"], ["tags", "ink"]])).toEqual(["sketch", "study", "ink"]);
    expect(await post([["tags", "sketch"]])).toEqual(["sketch"]);
    expect(await post([["tags", '["sketch","study"]']])).toEqual(["sketch", "study"]);
    expect(await post([["tags[1]", "study"], ["tags[0]", "sketch"]])).toEqual(["sketch", "study"]);
    expect(await post([])).toEqual([]);
    const both = await form("/v1/community/posts", artist.token, [["type", "discussion"], ["content", "x"], ["tags", "a"], ["tags[0]", "b"]], [{ field: "images", bytes: pngImage() }]);
    expectProblem(both, 400, "validation_failed");
  });

  it("discussions: replies move replies_count and last_activity; recent and popular orders; admins pin", async () => {
    const make = async (title: string) => {
      const res = await req("POST", "/v1/community/discussions", artist.token, { title, content: `${title} body`, tags: ["talk"] });
      expect(res.status, res.text).toBe(201);
      return res.body;
    };
    const a = await make("A");
    const b = await make("B");
    const c = await make("C");
    expect(a).toMatchObject({ title: "A", replies_count: 0, pinned: false, likes_count: 0 });
    expect((await req("GET", `/v1/community/posts/${a.post_id}`)).body).toMatchObject({ type: "discussion", discussion_id: a.discussion_id });

    // A: 3 replies; B: 1 reply and 4 likes (its post's) -> popular: B (5), A (3), C (0); recent: B (replied last), A, C.
    for (let i = 0; i < 3; i++) expect((await req("POST", `/v1/community/discussions/${a.discussion_id}/replies`, other.token, { content: `r${i}` })).status).toBe(201);
    const likers = await Promise.all(Array.from({ length: 4 }, () => createUser(p.api)));
    await Promise.all(likers.map((u) => req("POST", `/v1/community/posts/${b.post_id}/like`, u.token)));
    const reply = await req("POST", `/v1/community/discussions/${b.discussion_id}/replies`, other.token, { content: "last" });
    expect(reply.body.reply_id).toMatch(/^rpl_/);

    const ids = (res: TestResponse) => res.body.data.map((d: any) => d.discussion_id).filter((id: string) => [a, b, c].some((x) => x.discussion_id === id));
    const recent = await req("GET", "/v1/community/discussions?limit=100");
    expect(ids(recent)).toEqual([b.discussion_id, a.discussion_id, c.discussion_id]);
    const popular = await req("GET", "/v1/community/discussions?order=popular&limit=100");
    expect(ids(popular)).toEqual([b.discussion_id, a.discussion_id, c.discussion_id]);
    // Likes older than the window no longer count: A moves ahead once B's activity is 8 days old.
    // The change is written straight to the table, so the read is a token's: an anonymous one may be
    // answered from the public read cache until the change's notification reaches the API.
    await p.db.updateTable("community_discussion_activity").set({ day: sql`day - 8` }).where("discussion_id", "=", b.discussion_id).execute();
    expect(ids(await req("GET", "/v1/community/discussions?order=popular&limit=100", other.token))).toEqual([a.discussion_id, b.discussion_id, c.discussion_id]);

    const detail = (await req("GET", `/v1/community/discussions/${a.discussion_id}`)).body;
    expect(detail.replies_count).toBe(3);
    expect(Date.parse(detail.last_activity)).toBeGreaterThan(Date.parse(a.last_activity));
    const replies = await req("GET", `/v1/community/discussions/${a.discussion_id}/replies`);
    expect(replies.body.data.map((r: any) => r.content)).toEqual(["r0", "r1", "r2"]);

    expectProblem(await req("POST", `/v1/community/discussions/${c.discussion_id}/pin`, artist.token), 403, "insufficient_scope");
    expect((await req("POST", `/v1/community/discussions/${c.discussion_id}/pin`, admin)).body.pinned).toBe(true);
    expect((await req("GET", "/v1/community/discussions?order=popular")).body.data[0].discussion_id).toBe(c.discussion_id);
    expect((await req("GET", "/v1/community/discussions")).body.data[0].discussion_id).toBe(c.discussion_id);
    await req("DELETE", `/v1/community/discussions/${c.discussion_id}/pin`, admin);

    // Removing the discussion's post removes the discussion.
    await p.api.request("DELETE", `/v1/community/posts/${c.post_id}`, { token: artist.token });
    expectProblem(await req("GET", `/v1/community/discussions/${c.discussion_id}`), 404, "not_found");
  }, 30_000);

  it("challenges: status from the dates, edits only before start, default list active and upcoming", async () => {
    const upcoming = await challenge({ startsInS: 3600, endsInS: 7200 });
    const active = await challenge({ startsInS: -60, endsInS: 3600 });
    const closed = await challenge({ startsInS: -60, endsInS: 3600 });
    await closeChallenge(closed);
    expect((await req("GET", `/v1/community/challenges/${upcoming}`)).body).toMatchObject({ status: "upcoming", prize_pool_usd: 500, submissions_count: 0, winners: [] });
    expect((await req("GET", `/v1/community/challenges/${active}`)).body.status).toBe("active");
    expect((await req("GET", `/v1/community/challenges/${closed}`)).body.status).toBe("closed");
    const listed = (await req("GET", "/v1/community/challenges?limit=100")).body.data.map((x: any) => x.challenge_id);
    expect(listed).toEqual(expect.arrayContaining([upcoming, active]));
    expect(listed).not.toContain(closed);
    expect((await req("GET", "/v1/community/challenges?status=closed&limit=100")).body.data.map((x: any) => x.challenge_id)).toContain(closed);
    expect((await req("GET", "/v1/community/challenges?status=upcoming&limit=100")).body.data.map((x: any) => x.challenge_id)).not.toContain(active);

    expect((await req("PATCH", `/v1/community/challenges/${upcoming}`, admin, { prize_pool_usd: 750.5 })).body.prize_pool_usd).toBe(750.5);
    expectProblem(await req("PATCH", `/v1/community/challenges/${active}`, admin, { title: "late" }), 409, "invalid_state");
    expectProblem(await req("PATCH", `/v1/community/challenges/${upcoming}`, admin, { deadline: new Date(Date.now() + 60_000).toISOString() }), 400, "validation_failed");
    expectProblem(await req("POST", "/v1/community/challenges", admin, { title: "x", theme: "y", prize_pool_usd: 1, starts_at: "2020-01-01T00:00:00Z", deadline: "2020-01-02T00:00:00Z" }), 400, "validation_failed");
    const closedBefore = await p.api.server.platform.services.challenges.countClosed();
    await closeChallenge(upcoming);
    expect(await p.api.server.platform.services.challenges.countClosed()).toBe(closedBefore + 1);
  });

  it("submissions: only while active, once per user (also at once), own artworks only; each is a post and fires challenge.joined to the submitter", async () => {
    const upcoming = await challenge({ startsInS: 3600, endsInS: 7200 });
    const active = await challenge({ startsInS: -60, endsInS: 3600 });
    const before = await count("community_submissions");
    expectProblem(await req("POST", `/v1/community/challenges/${upcoming}/submissions`, artist.token, { content: "early" }), 409, "invalid_state");
    expectProblem(await req("POST", `/v1/community/challenges/${active}/submissions`, artist.token, {}), 400, "validation_failed");
    expectProblem(await req("POST", `/v1/community/challenges/${active}/submissions`, other.token, { artwork_id: artworkId }), 403, "forbidden");
    expectProblem(await req("POST", `/v1/community/challenges/${active}/submissions`, artist.token, { artwork_id: "art_01JD3Y5V0Q3G7W7J6T4N4C2X1M" }), 400, "validation_failed");
    expect(await count("community_submissions")).toBe(before);

    const twice = await Promise.all([1, 2, 3].map(() => req("POST", `/v1/community/challenges/${active}/submissions`, artist.token, { artwork_id: artworkId, content: "entry" })));
    expect(twice.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    const sub = twice.find((r) => r.status === 201)!.body;
    expectProblem(twice.find((r) => r.status === 409)!, 409, "conflict");
    expect(sub).toMatchObject({ challenge_id: active, user_id: artist.id, artwork_id: artworkId, content: "entry", image_url: null });
    expect(sub.submission_id).toMatch(/^sub_/);
    expect((await req("GET", `/v1/community/posts/${sub.post_id}`)).body).toMatchObject({ type: "challenge_submission", challenge_id: active, submission_id: sub.submission_id });
    expect((await req("GET", `/v1/community/posts?type=challenge&author_id=${artist.id}`)).body.data.map((x: any) => x.post_id)).toContain(sub.post_id);

    const image = await form(`/v1/community/challenges/${active}/submissions`, other.token, {}, [{ field: "image", bytes: gifImage(), type: "image/jpeg" }]);
    expect(image.status, image.text).toBe(201);
    expect((await fetch(image.body.image_url)).headers.get("content-type")).toBe("image/gif");
    const others = await Promise.all(Array.from({ length: 20 }, () => createUser(p.api)));
    await Promise.all(others.map((u) => req("POST", `/v1/community/challenges/${active}/submissions`, u.token, { content: "me too" })));
    expect((await req("GET", `/v1/community/challenges/${active}`)).body.submissions_count).toBe(22);
    expect((await req("GET", `/v1/community/challenges/${active}/submissions?limit=100`)).body.pagination.total).toBe(22);

    const events = await p.db.selectFrom("outbox_events").select(["payload", "audience"]).where("event_type", "=", "challenge.joined").execute();
    const joined = events.find((e) => (e.payload as any).submission_id === sub.submission_id)!;
    expect(joined.payload).toEqual({ challenge_id: active, user_id: artist.id, submission_id: sub.submission_id, joined_at: sub.created_at });
    expect(joined.audience).toEqual([artist.id]);
    expect(events.filter((e) => (e.payload as any).challenge_id === active)).toHaveLength(22);

    // BOLA: another's submission cannot be withdrawn; its own submitter can, and may submit again.
    const path = `/v1/community/challenges/${active}/submissions/${image.body.submission_id}`;
    expectProblem(await p.api.request("DELETE", path, { token: artist.token }), 403, "forbidden");
    expect((await p.api.request("DELETE", path, { token: other.token })).status).toBe(204);
    expectProblem(await req("GET", `/v1/community/posts/${image.body.post_id}`), 404, "not_found");
    expect((await req("GET", `/v1/community/challenges/${active}`)).body.submissions_count).toBe(21);

    // Winners: not before the deadline; then once, submissions of this challenge only; no submissions after it.
    expectProblem(await req("POST", `/v1/community/challenges/${active}/winners`, admin, { submission_ids: [sub.submission_id] }), 409, "invalid_state");
    await closeChallenge(active);
    expectProblem(await req("POST", `/v1/community/challenges/${active}/submissions`, other.token, { content: "late" }), 409, "invalid_state");
    expectProblem(await req("POST", `/v1/community/challenges/${active}/winners`, admin, { submission_ids: ["sub_01JD3Y5V0Q3G7W7J6T4N4C2X1M"] }), 400, "validation_failed");
    const named = await req("POST", `/v1/community/challenges/${active}/winners`, admin, { submission_ids: [sub.submission_id] });
    expect(named.status, named.text).toBe(200);
    expect(named.body).toMatchObject({ status: "closed", winners: [sub.submission_id] });
    expectProblem(await req("POST", `/v1/community/challenges/${active}/winners`, admin, { submission_ids: [sub.submission_id] }), 409, "invalid_state");
  }, 60_000);

  it("submissions name an artwork its certificate's holder owns: once the certificate moved, the new holder may submit it and its artist may not", async () => {
    const [maker, holder] = await Promise.all([createUser(p.api, { role: "artist" }), createUser(p.api, { role: "collector" })]);
    const moved = await certifiedArtwork(p, maker);
    const { tokenId } = await indexedCertificate(p, moved);
    await certificateCallFrom(p, maker.id, { functionName: "transferFrom", args: [(await walletOf(p, maker.id)) as `0x${string}`, (await walletOf(p, holder.id)) as `0x${string}`, tokenId] });
    expect(await ownerOnChain(tokenId)).toBe(await walletOf(p, holder.id));
    const active = await challenge({ startsInS: -60, endsInS: 3600 });

    expectProblem(await req("POST", `/v1/community/challenges/${active}/submissions`, maker.token, { artwork_id: moved }), 403, "forbidden");
    const submitted = await req("POST", `/v1/community/challenges/${active}/submissions`, holder.token, { artwork_id: moved });
    expect(submitted.status, submitted.text).toBe(201);
    expect(submitted.body).toMatchObject({ user_id: holder.id, artwork_id: moved });
    const stored = await p.db.selectFrom("community_submissions").select(["user_id", "artwork_id"]).where("challenge_id", "=", active).execute();
    expect(stored).toEqual([{ user_id: holder.id, artwork_id: moved }]);
  }, 120_000);

  it("access: anonymous reads work; every write needs a token (401) with community:write (403); admin endpoints need an admin (403)", async () => {
    const target = await post(artist, { type: "discussion", content: "access" });
    const discussion = (await req("POST", "/v1/community/discussions", artist.token, { title: "access", content: "x" })).body;
    const chl = await challenge({ startsInS: 3600, endsInS: 7200 });
    const cmt = (await req("POST", `/v1/community/posts/${target.post_id}/comments`, artist.token, { content: "x" })).body;
    for (const path of ["/v1/community/posts", `/v1/community/posts/${target.post_id}`, `/v1/community/posts/${target.post_id}/comments`, "/v1/community/discussions", `/v1/community/discussions/${discussion.discussion_id}/replies`, "/v1/community/challenges", `/v1/community/challenges/${chl}/submissions`]) {
      expect((await req("GET", path)).status, path).toBe(200);
    }
    const writes: [string, string][] = [
      ["POST", "/v1/community/posts"],
      ["PATCH", `/v1/community/posts/${target.post_id}`],
      ["DELETE", `/v1/community/posts/${target.post_id}`],
      ["POST", `/v1/community/posts/${target.post_id}/like`],
      ["DELETE", `/v1/community/posts/${target.post_id}/like`],
      ["POST", `/v1/community/posts/${target.post_id}/comments`],
      ["PATCH", `/v1/community/comments/${cmt.comment_id}`],
      ["DELETE", `/v1/community/comments/${cmt.comment_id}`],
      ["POST", "/v1/community/discussions"],
      ["POST", `/v1/community/discussions/${discussion.discussion_id}/replies`],
      ["POST", `/v1/community/challenges/${chl}/submissions`],
      ["DELETE", `/v1/community/challenges/${chl}/submissions/sub_01JD3Y5V0Q3G7W7J6T4N4C2X1M`],
    ];
    const admins: [string, string][] = [
      ["POST", "/v1/community/challenges"],
      ["PATCH", `/v1/community/challenges/${chl}`],
      ["POST", `/v1/community/challenges/${chl}/winners`],
      ["POST", `/v1/community/discussions/${discussion.discussion_id}/pin`],
      ["DELETE", `/v1/community/discussions/${discussion.discussion_id}/pin`],
    ];
    for (const [method, path] of [...writes, ...admins]) {
      expectProblem(await req(method, path, undefined, {}), 401, "unauthenticated");
      expectProblem(await req(method, path, reader.token, {}), 403, "insufficient_scope");
    }
    for (const [method, path] of admins) expectProblem(await req(method, path, other.token, {}), 403, "insufficient_scope");
    const adminScoped = await createUser(p.api, { role: "collector", scope: ["community:write"] });
    expectProblem(await req("POST", "/v1/community/challenges", adminScoped.token, {}), 403, "insufficient_scope");
    expect((await req("POST", `/v1/community/posts/${target.post_id}/like`, adminScoped.token)).status).toBe(200);
    expect((await req("GET", `/v1/community/posts/${target.post_id}`)).body.likes_count).toBe(1);
  });

  it("documents the community endpoints in OpenAPI", async () => {
    const doc = (await req("GET", "/v1/openapi.json")).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/v1/community/posts", "/v1/community/posts/{id}/like", "/v1/community/discussions", "/v1/community/challenges/{id}/submissions", "/v1/community/challenges/{id}/winners"]));
    expect(Object.keys(doc.paths["/v1/community/posts"].post.requestBody.content)).toEqual(["application/json", "multipart/form-data"]);
  });
});
