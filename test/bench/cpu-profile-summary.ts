/**
 * `npx tsx test/bench/cpu-profile-summary.ts <file.cpuprofile> [top]`: where a V8 CPU profile's time
 * went, as self time per package (node_modules/<name>, the API's own modules, Node's internals) and
 * per function. Profiles come from a bench run under `NODE_OPTIONS=--cpu-prof` (see
 * docs/contributors/benchmarks.md).
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: tsx test/bench/cpu-profile-summary.ts <file.cpuprofile> [top]\n");
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

/** The package a frame belongs to: a node_modules package, a folder of the repository, or a kind of frame. */
function packageOf(url: string, name: string): string {
  if (!url) return name.startsWith("(") ? name : "(native)";
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith("node:")) return "node:internals";
  const own = /\/(api\/src\/[^/]+(?:\/[^/.]+)?|tools\/[^/]+|test\/[^/]+)/.exec(url);
  return own ? own[1]! : url;
}

const packages = new Map<string, number>();
const functions = new Map<string, number>();
for (const [id, us] of selfUs) {
  const node = byId.get(id)!;
  const { functionName, url, lineNumber } = node.callFrame;
  const pkg = packageOf(url, functionName);
  packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  const fn = `${functionName || "(anonymous)"} ${url ? `${url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*?\/(api|tools|test)\//, "$1/")}:${lineNumber + 1}` : ""}`;
  functions.set(fn, (functions.get(fn) ?? 0) + us);
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1)} %`;
const rows = (m: Map<string, number>) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, us]) => `| ${k} | ${pct(us)} |`)
    .join("\n");
process.stdout.write(`${(total / 1e6).toFixed(1)} s sampled\n\n| package | self time |\n|---|---:|\n${rows(packages)}\n\n| function | self time |\n|---|---:|\n${rows(functions)}\n`);
