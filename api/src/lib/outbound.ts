import { lookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import ipaddr from "ipaddr.js";

/**
 * Requests to URLs that users give us (webhook endpoints, artwork image URLs), guarded against
 * SSRF: https only, and every address the name resolves to must be public. The connection is pinned
 * to the address that was checked, so a DNS answer that changes between the check and the connect
 * (rebinding) cannot reach an internal host. Redirects are never followed.
 */

export type UnsafeUrlReason = "invalid_url" | "scheme_not_allowed" | "credentials_in_url" | "private_address" | "reserved_port" | "unresolvable";

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
  /**
   * Development only (ALLOW_PRIVATE_WEBHOOK_URLS): also allows loopback addresses and plain http.
   * Never private, link-local or metadata addresses: /deliveries shows what they answer.
   */
  allowPrivate: boolean;
  /**
   * Loopback ports refused besides the privileged ones (below 1024, never a developer's receiver):
   * the stack's own services (its API, Postgres, Redis, chain and indexer), so that a loopback URL
   * reaches a receiver of the user's and not the machine's services (loopbackPortsOf in config.ts).
   */
  reservedLoopbackPorts?: readonly number[];
}

/** The lowest loopback port a URL may name: below it are the machine's services (ssh, http). */
const FIRST_UNPRIVILEGED_PORT = 1024;

/** Where an address leads: only `public` is allowed in production, `loopback` also in development. */
export type AddressClass = "public" | "loopback" | "refused";

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR("2000::/3");
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR("64:ff9b::/96");

/**
 * Classifies an address literal by ipaddr.js's registry of special ranges (IANA): only its
 * `unicast` is public. IPv4-mapped addresses (which the kernel connects to as IPv4) and the
 * well-known NAT64 prefix (to whatever IPv4 it embeds) are judged by their IPv4 address; every
 * other embedding (6to4, Teredo, local-use NAT64, SIIT) and IPv6 outside 2000::/3 is refused.
 */
export function classifyAddress(ip: string): AddressClass {
  // net.isIP first: ipaddr.js would also read legacy forms (0x7f.1, 010.0.0.1) that no resolver returns.
  if (!net.isIP(ip)) return "refused";
  const address = ipaddr.parse(ip);
  if (address.kind() === "ipv4") return classifyIpv4(address as ipaddr.IPv4);
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return classifyIpv4(v6.toIPv4Address());
  // A NAT64 gateway never reaches the host's own loopback: only a public IPv4 behind it counts.
  if (v6.match(NAT64_WELL_KNOWN)) return classifyIpv4(new ipaddr.IPv4(v6.toByteArray().slice(12))) === "public" ? "public" : "refused";
  const range = v6.range();
  if (range === "loopback") return "loopback";
  return range === "unicast" && v6.match(GLOBAL_UNICAST_V6) ? "public" : "refused";
}

function classifyIpv4(address: ipaddr.IPv4): AddressClass {
  const range = address.range();
  return range === "unicast" ? "public" : range === "loopback" ? "loopback" : "refused";
}

/** Whether `ip` is a loopback address: in development, a receiver on the developer's machine. */
export function isLoopbackAddress(ip: string): boolean {
  return classifyAddress(ip) === "loopback";
}

/** Whether `ip` is a public unicast address. */
export function isPublicAddress(ip: string): boolean {
  return classifyAddress(ip) === "public";
}

/** Whether the policy lets a request reach `ip`: public addresses, and loopback in development. */
export function isAllowedAddress(ip: string, policy: OutboundPolicy): boolean {
  const kind = classifyAddress(ip);
  return kind === "public" || (policy.allowPrivate && kind === "loopback");
}

export interface ResolvedTarget {
  url: URL;
  address: string;
  family: 4 | 6;
}

/**
 * The checks that need no DNS (scheme, credentials, an address literal, `localhost`): what
 * `resolveTarget` would refuse for sure, for callers that resolve later (image URLs).
 */
export function checkUrl(raw: string, policy: OutboundPolicy): { url: URL; host: string } {
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
  if (net.isIP(host)) refuseUnlessAllowed(url, host, [host], policy);
  // RFC 6761: these names are loopback whatever a resolver says.
  else if (!policy.allowPrivate && (host === "localhost" || host.endsWith(".localhost"))) throw new UnsafeUrlError("private_address", `the host ${host} is loopback`);
  return { url, host };
}

/** Every answer must be allowed (a name that mixes public and private answers is refused), and a loopback one on a receiver's port. */
function refuseUnlessAllowed(url: URL, host: string, addresses: string[], policy: OutboundPolicy): void {
  if (addresses.every((a) => isAllowedAddress(a, policy))) {
    if (addresses.some(isLoopbackAddress)) refuseReservedPort(url, host, policy);
    return;
  }
  throw new UnsafeUrlError(
    "private_address",
    policy.allowPrivate
      ? `the host ${host} resolves to an address that is neither public nor loopback (ALLOW_PRIVATE_WEBHOOK_URLS allows loopback only)`
      : `the host ${host} resolves to a private, loopback, link-local or reserved address`,
  );
}

function refuseReservedPort(url: URL, host: string, policy: OutboundPolicy): void {
  const port = url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  if (port >= FIRST_UNPRIVILEGED_PORT && !policy.reservedLoopbackPorts?.includes(port)) return;
  throw new UnsafeUrlError(
    "reserved_port",
    `the host ${host} is loopback and port ${port} is ${port < FIRST_UNPRIVILEGED_PORT ? "a privileged one" : "one of this stack's own services"}: a receiver in development listens on a port of its own from ${FIRST_UNPRIVILEGED_PORT}`,
  );
}

/** Parses and resolves `raw`, refusing what the policy does not allow. */
export async function resolveTarget(raw: string, policy: OutboundPolicy): Promise<ResolvedTarget> {
  const { url, host } = checkUrl(raw, policy);
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
  refuseUnlessAllowed(url, host, addresses.map((a) => a.address), policy);
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
  /** Reuse connections to the same host (see KEEP_ALIVE); otherwise one connection per request. */
  keepAlive?: boolean;
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
    /** The address the request went to, once it was resolved. */
    readonly address?: string,
  ) {
    super(message);
  }
}

/**
 * What a failed request may tell the user who gave its URL: the socket's own words, except on
 * loopback (development), where every cause (refused, reset, closed) reads the same, so that the
 * answers tell no port of the machine from another.
 */
export function failureSeenByUser(err: OutboundError): string {
  if (err.reason === "connection_failed" && err.address !== undefined && isLoopbackAddress(err.address)) return "nothing answered over HTTP on this loopback port";
  return err.message;
}

/**
 * Connections kept open between requests to the same host (webhook sends: a receiver gets many).
 * Every connection is opened to an address checked and pinned for the request that opened it, and
 * every request checks its URL's addresses again first, so a kept connection never reaches an address
 * the policy refuses. An idle one is closed after 4 s, or a second before the receiver's own
 * `Keep-Alive: timeout=`, so that a request rarely meets a connection the receiver is closing.
 */
const KEEP_ALIVE = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64, timeout: 4000 };
const keptConnections = { "http:": new http.Agent(KEEP_ALIVE), "https:": new https.Agent(KEEP_ALIVE) };

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
        agent: req.keepAlive ? keptConnections[target.url.protocol as "http:" | "https:"] : false,
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
      reject(err instanceof OutboundError ? new OutboundError(err.reason, err.message, target.address) : new OutboundError("connection_failed", err.message, target.address));
    };
    const timer = setTimeout(() => request.destroy(new OutboundError("timeout", `no complete response within ${req.timeoutMs} ms`)), req.timeoutMs);
    request.on("error", fail);
    request.end(req.body);
  });
}
