/**
 * autocannon's setupRequest for the mixed workload of test/bench/reads.ts: each request is, at random,
 * an anonymous read (90 %), an authenticated read (8 %) or a write (2 %, a community post). Which
 * artwork, artist, user, filter and page a read asks for follows a Zipf law (rank r drawn with
 * probability proportional to 1/r), as real traffic concentrates on a few popular items and
 * trails off into a long tail. CommonJS, since autocannon's worker thread `require`s it; the lists
 * and tokens travel on the request object.
 */
const cdfs = new Map();

/** A rank in [0, n) with P(r) ∝ 1/(r+1): the inverse of the cumulative distribution, found by bisection. */
function zipf(n) {
  let cdf = cdfs.get(n);
  if (!cdf) {
    cdf = new Float64Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) cdf[i] = sum += 1 / (i + 1);
    for (let i = 0; i < n; i++) cdf[i] /= sum;
    cdfs.set(n, cdf);
  }
  const u = Math.random();
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid] < u) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const pick = (list) => list[zipf(list.length)];
const any = (list) => list[Math.floor(Math.random() * list.length)];

module.exports = function mixedRequest(req) {
  const { ids, readers, writers, pages } = req.mix;
  const roll = Math.random();
  req.method = "GET";
  req.body = undefined;
  req.headers = {};
  if (roll < 0.02) {
    req.method = "POST";
    req.path = "/v1/community/posts";
    req.headers = { authorization: `Bearer ${any(writers)}`, "content-type": "application/json" };
    req.body = JSON.stringify({ type: "discussion", content: `A note from the mixed workload ${Math.random().toString(36).slice(2)}`, tags: ["bench"] });
  } else if (roll < 0.1) {
    req.headers = { authorization: `Bearer ${any(readers)}` };
    req.path = Math.random() < 0.5 ? "/v1/users/me" : "/v1/marketplace/transactions";
  } else {
    const kind = Math.random();
    if (kind < 0.4) req.path = `/v1/artworks/${pick(ids.artwork)}`;
    else if (kind < 0.6) req.path = `/v1/artworks?limit=20&page=${1 + zipf(pages.artworks)}`;
    else if (kind < 0.7) req.path = `/v1/artworks?limit=20&price_min=${100 * (1 + zipf(20))}&page=${1 + zipf(pages.artworks)}`;
    else if (kind < 0.8) req.path = `/v1/artworks?limit=20&artist_id=${pick(ids.artist)}`;
    else if (kind < 0.88) req.path = `/v1/users/${pick(ids.user)}`;
    else if (kind < 0.96) req.path = `/v1/marketplace/listings?limit=20&page=${1 + zipf(pages.listings)}`;
    else req.path = `/v1/community/posts?limit=20&page=${1 + zipf(pages.posts)}`;
  }
  return req;
};
