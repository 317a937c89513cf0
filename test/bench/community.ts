/**
 * Community feeds at scale: 100k posts (10k of them discussions with 50k replies) and 1M likes,
 * seeded with generate_series SQL, then `GET /v1/community/posts?tag=…` and
 * `GET /v1/community/discussions?order=popular` under load, next to bare Express answering the same JSON.
 */
import os from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { createDb } from "../../api/src/db/connection.ts";
import { BENCH_ADMIN_KEY, type BenchContext, call, table } from "./context.ts";
import { bareExpress, measure } from "./http.ts";

const POSTS = Number(process.env.BENCH_COMMUNITY_POSTS ?? 100_000);
const LIKES_PER_POST = 10;
const USERS = 50;
const TAGS = 100;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);

export async function benchCommunity(ctx: BenchContext): Promise<string> {
  const api = await ctx.startApi({ STORAGE_DIR: path.join(ctx.dir, "storage") });
  const admin = await call(api.url, "POST", "/v1/auth/token", { api_key: BENCH_ADMIN_KEY, scope: ["admin"] });
  const users: string[] = [];
  for (let i = 0; i < USERS; i++) users.push((await call(api.url, "POST", "/v1/admin/users", { username: `bench_c${i}`, email: `bench_c${i}@example.test`, role: "collector" }, admin.token)).id);

  const db = createDb(ctx.databaseUrl, 2);
  const seedStarted = performance.now();
  try {
    const ids = (prefix: string, n: string) => sql.raw(`'${prefix}_' || lpad((${n})::text, 26, '0')`);
    const userOf = (n: string) => sql`(${sql.val(users)}::text[])[1 + (${sql.raw(n)}) % ${sql.lit(USERS)}]`;
    // Posts over the last 30 days; every 10th is a discussion thread's post; two tags each of 100.
    await sql`
      insert into community_posts (id, type, author_id, content, tags, likes_count, discussion_id, created_at, updated_at)
      select ${ids("pst", "g")}, 'discussion', ${userOf("g")}, 'Post number ' || g,
             array['tag' || (g % ${sql.lit(TAGS)}), 'tag' || ((g * 7 + 3) % ${sql.lit(TAGS)})], ${sql.lit(LIKES_PER_POST)},
             case when g % 10 = 0 then ${ids("disc", "g")} end, now() - make_interval(secs => g * 25), now() - make_interval(secs => g * 25)
      from generate_series(1, ${sql.lit(POSTS)}) g`.execute(db);
    await sql`
      insert into community_discussions (id, post_id, title, author_id, last_activity, created_at)
      select ${ids("disc", "g")}, ${ids("pst", "g")}, 'Discussion ' || g, ${userOf("g")}, now() - make_interval(secs => g * 25), now() - make_interval(secs => g * 25)
      from generate_series(10, ${sql.lit(POSTS)}, 10) g`.execute(db);
    // 10 distinct users like each post (step 5 over 50 users), over the last 14 days.
    await sql`
      insert into community_post_likes (post_id, user_id, created_at)
      select ${ids("pst", "g")}, ${userOf("g + k * 5")}, now() - random() * interval '14 days'
      from generate_series(1, ${sql.lit(POSTS)}) g cross join generate_series(0, ${sql.lit(LIKES_PER_POST - 1)}) k`.execute(db);
    await sql`
      insert into community_replies (id, discussion_id, author_id, content, created_at)
      select ${ids("rpl", "r")}, ${ids("disc", "(1 + r % " + POSTS / 10 + ") * 10")}, ${userOf("r")}, 'Reply ' || r, now() - random() * interval '14 days'
      from generate_series(1, ${sql.lit(POSTS / 2)}) r`.execute(db);
    await sql`
      update community_discussions d set replies_count = r.n, last_activity = greatest(d.last_activity, r.latest)
      from (select discussion_id, count(*) n, max(created_at) latest from community_replies group by discussion_id) r where r.discussion_id = d.id`.execute(db);
    // The per-day activity the popular order reads, as likes and replies would have written it.
    await sql`
      insert into community_discussion_activity (discussion_id, day, events)
      select discussion_id, day, sum(n) from (
        select p.discussion_id, (l.created_at at time zone 'utc')::date as day, count(*) n from community_post_likes l join community_posts p on p.id = l.post_id where p.discussion_id is not null group by 1, 2
        union all
        select discussion_id, (created_at at time zone 'utc')::date, count(*) from community_replies group by 1, 2
      ) a group by discussion_id, day`.execute(db);
    // Steady state, as autovacuum leaves it: the GIN index's pending list merged, statistics fresh.
    await sql`vacuum analyze`.execute(db);
  } finally {
    await db.destroy();
  }
  const seedSeconds = ((performance.now() - seedStarted) / 1000).toFixed(1);

  const tagPath = "/v1/community/posts?tag=tag42";
  const popularPath = "/v1/community/discussions?order=popular";
  const [tagPage, popularPage] = await Promise.all([call(api.url, "GET", tagPath), call(api.url, "GET", popularPath)]);
  const bareUrl = await bareExpress(ctx, (bare) => {
    bare.get("/v1/community/posts", (_req, res) => {
      res.json(tagPage);
    });
    bare.get("/v1/community/discussions", (_req, res) => {
      res.json(popularPage);
    });
  });
  const load = { duration: DURATION_S, connections: CONNECTIONS };
  const rows = [
    await measure(`GET ${tagPath} (API)`, { url: `${api.url}${tagPath}`, ...load }),
    await measure(`GET ${tagPath} (bare Express)`, { url: `${bareUrl}${tagPath}`, ...load }),
    await measure(`GET ${popularPath} (API)`, { url: `${api.url}${popularPath}`, ...load }),
    await measure(`GET ${popularPath} (bare Express)`, { url: `${bareUrl}${popularPath}`, ...load }),
  ];
  return [
    `Community: ${POSTS.toLocaleString("en-US")} posts, ${(POSTS * LIKES_PER_POST).toLocaleString("en-US")} likes, ${(POSTS / 10).toLocaleString("en-US")} discussions, ${(POSTS / 2).toLocaleString("en-US")} replies (seeded in ${seedSeconds} s); tag42 on ${tagPage.pagination.total} posts; ${CONNECTIONS} connections, ${DURATION_S} s per endpoint, ${os.cpus().length} cores`,
    "",
    table(["endpoint", "req/s", "p50 ms", "p99 ms", "non-2xx"], rows),
  ].join("\n");
}
