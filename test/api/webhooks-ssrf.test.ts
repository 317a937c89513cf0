/**
 * Webhook URLs under the production policy (ALLOW_PRIVATE_WEBHOOK_URLS=false): https only, public
 * addresses only, at registration, on change, and again before every delivery.
 */
import net, { type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../api/src/config.ts";
import { freePort } from "../../tools/stack/processes.ts";
import { waitFor } from "../support/wait.ts";
import { createUser, expectProblem, testApiSettings, useIsolatedTestApi } from "../support/api.ts";
import { useReceiver } from "../support/webhooks.ts";

const api = useIsolatedTestApi({ ALLOW_PRIVATE_WEBHOOK_URLS: "false", WEBHOOK_RETRY_SCHEDULE: "60" });
// What `npm start` runs: ALLOW_PRIVATE_WEBHOOK_URLS on.
const devApi = useIsolatedTestApi({ ALLOW_PRIVATE_WEBHOOK_URLS: "true", WEBHOOK_RETRY_SCHEDULE: "60" });
const receiver = useReceiver();

/** Neither public nor loopback: refused in both modes (security review, issue 7 item 6). */
const INTERNAL_HOSTS = [
  "169.254.169.254", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "[fe80::1]", "[fd00::1]", "224.0.0.1", "0.0.0.0", "[::]", "198.18.0.1",
  "[::ffff:0:a9fe:a9fe]", "[64:ff9b:1::a9fe:a9fe]", "[2001::a9fe:a9fe]",
];

// A public address literal: accepted without DNS (nothing is ever sent to it here).
const PUBLIC_URL = "https://93.184.216.34/hooks/art";

describe("webhook URLs in strict mode", () => {
  it("is what production runs: the development setting cannot be turned on there", () => {
    const production = {
      ...testApiSettings(),
      NODE_ENV: "production",
      RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`,
      PUBLIC_BASE_URL: "https://api.example.com",
      PAYMENT_SANDBOX_IN_PRODUCTION: "true",
    };
    expect(() => loadConfig({ ...production, ALLOW_PRIVATE_WEBHOOK_URLS: "true" })).toThrow(ConfigError);
    expect(loadConfig(production).outboundPolicy.allowPrivate).toBe(false);
    expect(loadConfig({ ...testApiSettings(), NODE_ENV: "development" }).outboundPolicy.allowPrivate).toBe(true);
    expect(api.config.outboundPolicy.allowPrivate).toBe(false);
  });

  it("refuses private, loopback, link-local, metadata and multicast addresses, localhost and plain http, storing nothing", async () => {
    const user = await createUser(api);
    const cases: [string, string][] = [
      ["https://10.0.0.1/hook", "private_address"],
      ["https://172.16.5.4/hook", "private_address"],
      ["https://192.168.1.10/hook", "private_address"],
      ["https://127.0.0.1/hook", "private_address"],
      ["https://0x7f000001/hook", "private_address"], // 127.0.0.1 in disguise
      ["https://[::1]/hook", "private_address"],
      ["https://[::ffff:10.0.0.1]/hook", "private_address"],
      ["https://[fd00::1]/hook", "private_address"],
      ["https://[fe80::1]/hook", "private_address"],
      ["https://169.254.169.254/latest/meta-data/", "private_address"], // cloud metadata
      ["https://100.100.100.200/", "private_address"], // carrier-grade NAT range (another metadata address)
      ["https://224.0.0.1/hook", "private_address"],
      ...INTERNAL_HOSTS.map((host): [string, string] => [`https://${host}/latest/meta-data/`, "private_address"]),
      ["https://localhost/hook", "private_address"], // a name resolving to 127.0.0.1
      [receiver.endpoint().replace("http:", "https:"), "private_address"],
      [receiver.endpoint(), "scheme_not_allowed"],
      ["http://93.184.216.34/hook", "scheme_not_allowed"],
    ];
    for (const [url, code] of cases) {
      const res = await api.request("POST", "/v1/webhooks", { token: user.token, body: { url, events: ["*"] } });
      expectProblem(res, 400, "validation_failed");
      expect(res.body.errors, url).toEqual([expect.objectContaining({ field: "url", code })]);
    }
    const stored = await api.db.selectFrom("webhook_subscriptions").select("id").where("user_id", "=", user.id).execute();
    expect(stored).toHaveLength(0);
  });

  it("accepts a public https URL and re-checks a changed one", async () => {
    const user = await createUser(api);
    const created = await api.request("POST", "/v1/webhooks", { token: user.token, body: { url: PUBLIC_URL, events: ["offer.created"] } });
    expect(created.status).toBe(201);
    const res = await api.request("PATCH", `/v1/webhooks/${created.body.id}`, { token: user.token, body: { url: "https://169.254.169.254/", events: ["*"] } });
    expectProblem(res, 400, "validation_failed");
    expect(res.body.errors).toEqual([expect.objectContaining({ field: "url", code: "private_address" })]);
    const stored = await api.db.selectFrom("webhook_subscriptions").selectAll().where("id", "=", created.body.id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ url: PUBLIC_URL, events: ["offer.created"] });
  });

  it("checks the address again before sending: a URL that now points inside is never called", async () => {
    const user = await createUser(api);
    const created = await api.request("POST", "/v1/webhooks", { token: user.token, body: { url: PUBLIC_URL, events: ["offer.created"] } });
    // As if its DNS now answered a loopback address (rebinding): the stored URL points at our receiver.
    const inside = receiver.endpoint();
    await api.db.updateTable("webhook_subscriptions").set({ url: inside }).where("id", "=", created.body.id).execute();
    const ping = await api.request("POST", `/v1/webhooks/${created.body.id}/test`, { token: user.token });
    expect(ping.status).toBe(202);
    const refused = await waitFor(async () => {
      const d = await api.request("GET", `/v1/webhooks/${created.body.id}/deliveries/${ping.body.id}`, { token: user.token });
      return d.body.attempts === 1 && d.body.next_retry_at ? d.body : null;
    });
    expect(refused).toMatchObject({ status: "pending", last_response_code: null });
    expect(refused.last_error).toMatch(/^refused \(scheme_not_allowed\): must be an https URL/);
    await api.db.updateTable("webhook_subscriptions").set({ url: inside.replace("http:", "https:") }).where("id", "=", created.body.id).execute();
    await api.request("POST", `/v1/webhooks/${created.body.id}/deliveries/${ping.body.id}/retry`, { token: user.token });
    const again = await waitFor(async () => {
      const d = await api.request("GET", `/v1/webhooks/${created.body.id}/deliveries/${ping.body.id}`, { token: user.token });
      return d.body.attempts === 2 && d.body.status !== "pending" ? d.body : null;
    });
    expect(again).toMatchObject({ status: "failed", last_response_code: null }); // its one retry is used up
    expect(again.last_error).toMatch(/^refused \(private_address\): the host 127\.0\.0\.1 resolves to a private/);
    expect(receiver.requests(inside)).toHaveLength(0);
  });
});

describe("webhook URLs in development mode (ALLOW_PRIVATE_WEBHOOK_URLS)", () => {
  it("allows loopback and plain http only: private, link-local, metadata, multicast and reserved addresses stay refused", async () => {
    expect(devApi.config.outboundPolicy.allowPrivate).toBe(true);
    const user = await createUser(devApi);
    for (const host of INTERNAL_HOSTS) {
      for (const url of [`http://${host}/latest/meta-data/`, `https://${host}/hook`]) {
        const res = await devApi.request("POST", "/v1/webhooks", { token: user.token, body: { url, events: ["*"] } });
        expectProblem(res, 400, "validation_failed");
        expect(res.body.errors, url).toEqual([expect.objectContaining({ field: "url", code: "private_address" })]);
      }
    }
    expect(await devApi.db.selectFrom("webhook_subscriptions").select("id").where("user_id", "=", user.id).execute()).toHaveLength(0);

    const endpoint = receiver.endpoint();
    const loopback = await devApi.request("POST", "/v1/webhooks", { token: user.token, body: { url: endpoint, events: ["*"] } });
    expect(loopback.status).toBe(201);
    const changed = await devApi.request("PATCH", `/v1/webhooks/${loopback.body.id}`, { token: user.token, body: { url: "http://169.254.169.254/latest/meta-data/" } });
    expectProblem(changed, 400, "validation_failed");
    const stored = await devApi.db.selectFrom("webhook_subscriptions").select("url").where("user_id", "=", user.id).execute();
    expect(stored).toEqual([{ url: endpoint }]);
  });

  it("keeps loopback to a receiver's own port: privileged ports and the stack's own services are refused, storing nothing", async () => {
    const user = await createUser(devApi);
    const databasePort = Number(new URL(devApi.config.database.url).port);
    const rpcPort = Number(new URL(devApi.config.chain.rpcUrl).port);
    expect(devApi.config.outboundPolicy.reservedLoopbackPorts).toEqual(expect.arrayContaining([devApi.config.port, databasePort, rpcPort]));
    for (const url of ["http://127.0.0.1:22/", "http://127.0.0.1/hook", "https://localhost/hook", "http://[::1]:25/", `http://127.0.0.1:${databasePort}/`, `http://localhost:${rpcPort}/`, `http://127.0.0.1:${devApi.config.port}/v1/health`]) {
      const res = await devApi.request("POST", "/v1/webhooks", { token: user.token, body: { url, events: ["*"] } });
      expectProblem(res, 400, "validation_failed");
      expect(res.body.errors, url).toEqual([expect.objectContaining({ field: "url", code: "reserved_port" })]);
      expect(res.body.errors[0].message, url).toMatch(/is loopback and port \d+ is (a privileged one|one of this stack's own services)/);
    }
    expect(await devApi.db.selectFrom("webhook_subscriptions").select("id").where("user_id", "=", user.id).execute()).toHaveLength(0);
  });

  it("tells nothing of the machine's other ports: a loopback answer keeps its code only, and every failed connection reads the same", async () => {
    const user = await createUser(devApi);
    const deliveredOnce = async (url: string) => {
      const created = await devApi.request("POST", "/v1/webhooks", { token: user.token, body: { url, events: ["offer.created"] } });
      expect(created.status).toBe(201);
      const ping = await devApi.request("POST", `/v1/webhooks/${created.body.id}/test`, { token: user.token });
      expect(ping.status).toBe(202);
      return waitFor(async () => {
        const d = await devApi.request("GET", `/v1/webhooks/${created.body.id}/deliveries/${ping.body.id}`, { token: user.token });
        return d.body.attempts === 1 && (d.body.last_error !== null || d.body.last_response_code !== null) ? d.body : null;
      });
    };
    // A service that answers HTTP with a page of its own: the code is seen, the page is not.
    const page = await deliveredOnce(receiver.endpoint(() => ({ status: 500, body: "<h1>internal dashboard</h1>" })));
    expect(page).toMatchObject({ last_response_code: 500, last_response_body: null, last_error: "HTTP 500: not a 2xx response" });

    // A port where nothing listens, and one whose service drops an HTTP request: the same words.
    const hangUp = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => hangUp.listen(0, "127.0.0.1", resolve));
    try {
      const closedPort = await freePort();
      const refused = await deliveredOnce(`http://127.0.0.1:${closedPort}/hook`);
      const dropped = await deliveredOnce(`http://127.0.0.1:${(hangUp.address() as AddressInfo).port}/hook`);
      for (const d of [refused, dropped]) {
        expect(d).toMatchObject({ last_response_code: null, last_response_body: null, last_error: "connection failed: nothing answered over HTTP on this loopback port" });
      }
    } finally {
      await new Promise<void>((resolve) => hangUp.close(() => resolve()));
    }
  });

  it("never delivers to an internal address that got into the database: the check before sending applies the same policy", async () => {
    const user = await createUser(devApi);
    const created = await devApi.request("POST", "/v1/webhooks", { token: user.token, body: { url: receiver.endpoint(), events: ["offer.created"] } });
    expect(created.status).toBe(201);
    await devApi.db.updateTable("webhook_subscriptions").set({ url: "http://169.254.169.254/latest/meta-data/" }).where("id", "=", created.body.id).execute();
    const ping = await devApi.request("POST", `/v1/webhooks/${created.body.id}/test`, { token: user.token });
    expect(ping.status).toBe(202);
    const refused = await waitFor(async () => {
      const d = await devApi.request("GET", `/v1/webhooks/${created.body.id}/deliveries/${ping.body.id}`, { token: user.token });
      // attempts and last_error are written by separate statements: wait for the second.
      return d.body.attempts === 1 && d.body.last_error !== null ? d.body : null;
    });
    expect(refused).toMatchObject({ last_response_code: null, last_response_body: null });
    expect(refused.last_error).toMatch(/^refused \(private_address\): the host 169\.254\.169\.254 resolves to an address that is neither public nor loopback/);
  });
});
