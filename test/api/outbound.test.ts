import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPublicAddress, OutboundError, outboundRequest, resolveTarget, UnsafeUrlError } from "../../api/src/lib/outbound.ts";

let server: http.Server;
let base: string;
beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === "/redirect") {
      res.writeHead(302, { location: "http://169.254.169.254/latest/meta-data" }).end();
    } else if (req.url === "/big") {
      res.writeHead(200).end("x".repeat(100_000));
    } else if (req.url === "/slow") {
      setTimeout(() => res.writeHead(200).end("late"), 2_000);
    } else {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => res.writeHead(200, { "content-type": "text/plain" }).end(`${req.method} ${body}`));
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

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
});
