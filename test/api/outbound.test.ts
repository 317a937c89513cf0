import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkUrl, isAllowedAddress, isPublicAddress, OutboundError, outboundRequest, resolveTarget, UnsafeUrlError } from "../../api/src/lib/outbound.ts";

let server: http.Server;
let base: string;
beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === "/redirect") {
      res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data" }).end();
    } else if (req.url === "/big") {
      res.writeHead(200).end("x".repeat(100_000));
    } else if (req.url === "/slow") {
      // Never answers: the connection stays open until the server closes it after the file.
    } else {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => res.writeHead(200, { "content-type": "text/plain" }).end(`${req.method} ${body}`));
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise<void>((r) => server.close(() => r()));
});

const strict = { allowPrivate: false };
const dev = { allowPrivate: true };

describe("isPublicAddress", () => {
  it("refuses private, loopback, link-local, metadata, multicast and reserved addresses in every notation", () => {
    for (const ip of [
      "127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
      "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
      "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "not-an-ip",
    ]) {
      expect(isPublicAddress(ip), ip).toBe(false);
    }
    for (const ip of ["93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      expect(isPublicAddress(ip), ip).toBe(true);
    }
  });
});

/** Neither public nor loopback: refused under both policies (security review, issue 7 item 6). */
const NEVER = [
  "169.254.169.254", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "fe80::1", "fd00::1", "224.0.0.1", "0.0.0.0", "::", "198.18.0.1",
  "::ffff:0:a9fe:a9fe", // SIIT (RFC 6145) form of 169.254.169.254
  "64:ff9b:1::a9fe:a9fe", "64:ff9b:1::808:808", // local-use NAT64 (RFC 8215), whatever it embeds
  "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo
  "::ffff:169.254.169.254", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "2002:a9fe:a9fe::1", "::a9fe:a9fe", "2001:db8::1", "ff02::1",
];
const LOOPBACK = ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"];
const PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"];
const literal = (ip: string) => (ip.includes(":") ? `[${ip}]` : ip);

describe("address policy", () => {
  it("allows loopback only in development, public addresses in both modes, and nothing else in either", () => {
    for (const ip of NEVER) {
      expect(isAllowedAddress(ip, strict), `${ip} strict`).toBe(false);
      expect(isAllowedAddress(ip, dev), `${ip} dev`).toBe(false);
    }
    for (const ip of LOOPBACK) {
      expect(isAllowedAddress(ip, strict), `${ip} strict`).toBe(false);
      expect(isAllowedAddress(ip, dev), `${ip} dev`).toBe(true);
    }
    for (const ip of PUBLIC) {
      expect(isAllowedAddress(ip, strict), `${ip} strict`).toBe(true);
      expect(isAllowedAddress(ip, dev), `${ip} dev`).toBe(true);
    }
  });

  it("refuses every such address literal in a URL under both policies, before any connection (webhooks and image URLs)", async () => {
    for (const ip of NEVER) {
      for (const [name, policy] of [["strict", strict], ["dev", dev]] as const) {
        const scheme = policy.allowPrivate ? "http" : "https";
        const url = `${scheme}://${literal(ip)}/latest/meta-data`;
        const refused = (await resolveTarget(url, policy).catch((e: unknown) => e)) as UnsafeUrlError;
        expect(refused, `${url} ${name}`).toBeInstanceOf(UnsafeUrlError);
        expect(refused.reason, `${url} ${name}`).toBe("private_address");
        expect(() => checkUrl(url, policy), `${url} ${name}`).toThrow(UnsafeUrlError);
      }
    }
    for (const ip of LOOPBACK) {
      expect(isAllowedAddress((await resolveTarget(`http://${literal(ip)}:8080/`, dev)).address, dev), ip).toBe(true);
      expect(((await resolveTarget(`https://${literal(ip)}/`, strict).catch((e: unknown) => e)) as UnsafeUrlError).reason).toBe("private_address");
    }
    expect((await resolveTarget("http://localhost:8080/", dev)).address).toMatch(/^(127\.0\.0\.1|::1)$/);
  });
});

describe("resolveTarget", () => {
  it("refuses non-https, credentials, private literals and names that resolve to loopback", async () => {
    const reasons = async (url: string) => (await resolveTarget(url, strict).catch((e: UnsafeUrlError) => e)) as UnsafeUrlError;
    expect((await reasons("http://example.com/hook")).reason).toBe("scheme_not_allowed");
    expect((await reasons("ftp://example.com/x")).reason).toBe("scheme_not_allowed");
    expect((await reasons("https://user:pw@example.com/")).reason).toBe("credentials_in_url");
    expect((await reasons("https://127.0.0.1/")).reason).toBe("private_address");
    expect((await reasons("https://[::1]/")).reason).toBe("private_address");
    expect((await reasons("https://169.254.169.254/latest")).reason).toBe("private_address");
    expect((await reasons("https://localhost/")).reason).toBe("private_address");
    expect((await reasons("not a url")).reason).toBe("invalid_url");
    expect((await reasons("https://no-such-host.invalid/")).reason).toBe("unresolvable");
  });

  it("allows loopback and http only under the development policy", async () => {
    const target = await resolveTarget(`${base}/x`, dev);
    expect(target.address).toBe("127.0.0.1");
  });
});

describe("outboundRequest", () => {
  it("sends and reads a response when the policy allows the address", async () => {
    const res = await outboundRequest({ url: `${base}/echo`, method: "POST", body: "hello", timeoutMs: 2_000, maxResponseBytes: 1024, onOversize: "truncate", policy: dev });
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe("POST hello");
  });

  it("never reaches a loopback server under the strict policy", async () => {
    await expect(outboundRequest({ url: base.replace("http:", "https:"), timeoutMs: 2_000, maxResponseBytes: 1024, onOversize: "truncate", policy: strict })).rejects.toBeInstanceOf(UnsafeUrlError);
  });

  it("does not follow redirects", async () => {
    const res = await outboundRequest({ url: `${base}/redirect`, timeoutMs: 2_000, maxResponseBytes: 1024, onOversize: "truncate", policy: dev });
    expect(res.status).toBe(302);
    expect(res.headers.location).toContain("169.254.169.254");
  });

  it("truncates or refuses large bodies, and times out", async () => {
    const cut = await outboundRequest({ url: `${base}/big`, timeoutMs: 2_000, maxResponseBytes: 1000, onOversize: "truncate", policy: dev });
    expect(cut.truncated).toBe(true);
    expect(cut.body.length).toBe(1000);
    const refused = await outboundRequest({ url: `${base}/big`, timeoutMs: 2_000, maxResponseBytes: 1000, onOversize: "error", policy: dev }).catch((e) => e);
    expect(refused).toBeInstanceOf(OutboundError);
    expect(refused.reason).toBe("too_large");
    const slow = await outboundRequest({ url: `${base}/slow`, timeoutMs: 200, maxResponseBytes: 1000, onOversize: "error", policy: dev }).catch((e) => e);
    expect(slow).toBeInstanceOf(OutboundError);
    expect(slow.reason).toBe("timeout");
  });

  it("keeps a connection open for the next request to the host when asked, and still checks the address before using it", async () => {
    const connections = new Set<unknown>();
    const onConnection = (socket: unknown) => connections.add(socket);
    server.on("connection", onConnection);
    try {
      const send = (policy = dev) => outboundRequest({ url: `${base}/echo`, method: "POST", body: "kept", timeoutMs: 2_000, maxResponseBytes: 1024, onOversize: "truncate", policy, keepAlive: true });
      for (let i = 0; i < 3; i++) expect((await send()).body.toString()).toBe("POST kept");
      expect(connections.size).toBe(1);
      // The kept connection leads to loopback: a request the policy refuses (plain http to loopback) never reaches it.
      await expect(send(strict)).rejects.toBeInstanceOf(UnsafeUrlError);
      // Without keepAlive, a connection per request.
      await outboundRequest({ url: `${base}/echo`, method: "POST", body: "once", timeoutMs: 2_000, maxResponseBytes: 1024, onOversize: "truncate", policy: dev });
      expect(connections.size).toBe(2);
    } finally {
      server.off("connection", onConnection);
    }
  });
});
