/**
 * autocannon's setupRequest for reads that miss every cache (test/bench/reads.ts): each request's
 * path is its template with `{artwork}`, `{artist}`, `{user}`, `{medium}`, `{fractional}`, `{event}`,
 * `{eventType}` replaced by a random entry of that list
 * and `{int:a:b}` by a random integer in [a, b]. CommonJS, since autocannon's worker thread
 * `require`s it; the lists travel on the request object.
 */
module.exports = function randomPath(req) {
  const pick = (list) => list[Math.floor(Math.random() * list.length)];
  req.path = req.template
    .replace(/\{int:(\d+):(\d+)\}/g, (_, a, b) => String(Number(a) + Math.floor(Math.random() * (Number(b) - Number(a) + 1))))
    .replace(/\{(\w+)\}/g, (_, list) => pick(req.ids[list]));
  return req;
};
