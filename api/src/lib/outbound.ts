import { lookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import net from "node:net";

/**
 * Requests to URLs that users give us (webhook endpoints, artwork image URLs), guarded against
 * SSRF: https only, and every address the name resolves to must be public. The connection is pinned
 * to the address that was checked, so a DNS answer that changes between the check and the connect
 * (rebinding) cannot reach an internal host. Redirects are never followed.
 */

export type UnsafeUrlReason = "invalid_url" | "scheme_not_allowed" | "credentials_in_url" | "private_address" | "unresolvable";

export class UnsafeUrlError extends Error {
  override name = "UnsafeUrlError";
  constructor(
    readonly reason: UnsafeUrlReason,
    message: string,
  ) {
    super(message);
  }
}

export interface OutboundPolicy {
  /** Development only (ALLOW_PRIVATE_WEBHOOK_URLS): allows loopback/private addresses and plain http. */
  allowPrivate: boolean;
}

const blocked = new net.BlockList();
for (const [prefix, bits] of [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata (169.254.169.254)
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(prefix, bits, "ipv4");
}
for (const [prefix, bits] of [
  ["::", 128],
  ["::1", 128],
  ["100::", 64], // discard
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const) {
  blocked.addSubnet(prefix, bits, "ipv6");
}

/** Whether `ip` is a public unicast address (IPv4-mapped, NAT64 and 6to4 forms judged by their IPv4). */
export function isPublicAddress(ip: string): boolean {
  const family = net.isIP(ip);
  if (family === 4) return !blocked.check(ip, "ipv4");
  if (family !== 6) return false;
  const embedded = embeddedIpv4(ip);
  if (embedded) return !blocked.check(embedded, "ipv4");
  return !blocked.check(ip, "ipv6");
}

function embeddedIpv4(ip: string): string | null {
  const lower = ip.toLowerCase();
  const dotted = /^(?:::ffff:|::ffff:0:|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted?.[1]) return dotted[1];
  const groups = expandIpv6(lower);
  if (!groups) return null;
  const toV4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64)
  if (groups.slice(0, 5).every((g) => g === 0) && (groups[5] === 0xffff || groups[5] === 0)) return toV4(groups[6]!, groups[7]!);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) return toV4(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return toV4(groups[1]!, groups[2]!); // 6to4
  return null;
}

function expandIpv6(ip: string): number[] | null {
  if (ip.includes(".")) return null;
  const [head, tail] = ip.split("::") as [string, string | undefined];
  const parse = (part: string) => (part ? part.split(":").map((h) => Number.parseInt(h, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const missing = 8 - left.length - right.length;
  if (missing < 0 || (tail === undefined && missing !== 0)) return null;
  const groups = [...left, ...Array(missing).fill(0), ...right];
  return groups.some((g) => Number.isNaN(g)) ? null : groups;
}

export interface ResolvedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/** Parses and resolves `raw`, refusing what the policy does not allow. */
export async function resolveTarget(raw: string, policy: OutboundPolicy): Promise<ResolvedTarget> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError("invalid_url", "not a valid absolute URL");
  }
  if (url.protocol !== "https:" && !(policy.allowPrivate && url.protocol === "http:")) {
    throw new UnsafeUrlError("scheme_not_allowed", policy.allowPrivate ? "must be an http(s) URL" : "must be an https URL");
  }
  if (url.username || url.password) throw new UnsafeUrlError("credentials_in_url", "must not contain credentials");
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: { address: string; family: number }[];
  if (net.isIP(host)) addresses = [{ address: host, family: net.isIP(host) }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch {
      throw new UnsafeUrlError("unresolvable", `the host ${host} does not resolve`);
    }
  }
  if (addresses.length === 0) throw new UnsafeUrlError("unresolvable", `the host ${host} does not resolve`);
  // Every answer must be public: a name that mixes public and private answers is refused.
  if (!policy.allowPrivate && addresses.some((a) => !isPublicAddress(a.address))) {
    throw new UnsafeUrlError("private_address", `the host ${host} resolves to a private, loopback, link-local or reserved address`);
  }
  const first = addresses[0]!;
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}

export interface OutboundRequest {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Total time for connect, send and the whole response. */
  timeoutMs: number;
  /** Bytes of response body kept. */
  maxResponseBytes: number;
  /** `truncate` keeps the first bytes (webhook logs); `error` refuses larger bodies (downloads). */
  onOversize: "truncate" | "error";
  policy: OutboundPolicy;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
  /** The address that was connected to. */
  address: string;
}

export class OutboundError extends Error {
  override name = "OutboundError";
  constructor(
    readonly reason: "timeout" | "connection_failed" | "too_large",
    message: string,
  ) {
    super(message);
  }
}

/** One request, pinned to a checked address, with a deadline and a body cap; 3xx are returned as is. */
export async function outboundRequest(req: OutboundRequest): Promise<OutboundResponse> {
  const target = await resolveTarget(req.url, req.policy);
  const client = target.url.protocol === "https:" ? https : http;
  return new Promise<OutboundResponse>((resolve, reject) => {
    const request = client.request(
      target.url,
      {
        method: req.method ?? "GET",
        headers: req.headers,
        agent: false,
        lookup: (_host, options, callback) => {
          // Node asks with {all: true} on newer versions: answer in the shape it asked for.
          if ((options as { all?: boolean }).all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: target.address, family: target.family }]);
          else (callback as (e: null, a: string, f: number) => void)(null, target.address, target.family);
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        res.on("data", (chunk: Buffer) => {
          if (truncated) return;
          if (size + chunk.length > req.maxResponseBytes) {
            if (req.onOversize === "error") {
              request.destroy(new OutboundError("too_large", `the response exceeds ${req.maxResponseBytes} bytes`));
              return;
            }
            chunks.push(chunk.subarray(0, req.maxResponseBytes - size));
            size = req.maxResponseBytes;
            truncated = true;
            res.destroy();
            finish();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated, address: target.address });
        };
        res.on("end", finish);
        res.on("error", (err) => {
          if (!done) fail(err);
        });
      },
    );
    const fail = (err: Error) => {
      clearTimeout(timer);
      reject(err instanceof OutboundError ? err : new OutboundError("connection_failed", err.message));
    };
    const timer = setTimeout(() => request.destroy(new OutboundError("timeout", `no complete response within ${req.timeoutMs} ms`)), req.timeoutMs);
    request.on("error", fail);
    request.end(req.body);
  });
}
