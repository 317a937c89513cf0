import { z } from "zod";
import { isOriginRule } from "./lib/origins.ts";
import type { OutboundPolicy } from "./lib/outbound.ts";

/** Hardhat's well-known dev account #0: the local relayer, refused in production mode. */
export const HARDHAT_DEV_RELAYER_KEY =
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

const bool = z
  .enum(["true", "false", "1", "0", "yes", "no"])
  .transform((v) => v === "true" || v === "1" || v === "yes");
const hex32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hex string");
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address");

const envSchema = z.object({
  NODE_ENV: z.enum(["development", "test", "production"]).default("development"),
  HOST: z.string().default("127.0.0.1"),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  PUBLIC_BASE_URL: z.url().optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  TRUST_PROXY: bool.default(false),

  DATABASE_URL: z.string().min(1),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(20),
  DATABASE_PREPARED_STATEMENTS: bool.default(true),

  CHAIN_RPC_URL: z.url(),
  CHAIN_ID: z.coerce.number().int().positive().default(31337),
  CHAIN_NAME: z.string().optional(),
  RELAYER_PRIVATE_KEY: hex32.optional(),
  CUSTODY_MNEMONIC: z.string().trim().refine((m) => m.split(/\s+/).length >= 12, "must be a BIP-39 mnemonic of 12 or more words"),
  ART_CERTIFICATE_ADDRESS: address.optional(),
  ART_SHARES_ADDRESS: address.optional(),
  ART_MARKET_ADDRESS: address.optional(),
  AUDIT_ANCHOR_ADDRESS: address.optional(),
  // ArtExchange and the stablecoin it is paid in: both or neither; unset, on-chain purchases answer 503.
  ART_EXCHANGE_ADDRESS: address.optional(),
  PAYMENT_TOKEN_ADDRESS: address.optional(),
  CONTRACTS_START_BLOCK: z.coerce.number().int().min(0).default(0),
  // A block explorer of the chain (Etherscan, Blockscout): the verify page links addresses, transactions and blocks to it.
  EXPLORER_URL: z.url({ protocol: /^https?$/ }).optional(),

  INDEXER_URL: z.url().optional(),
  INDEXER_VIEWS_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]*$/).default("chain"),
  INDEXER_MAX_LAG_BLOCKS: z.coerce.number().int().min(0).default(5),
  INDEXER_STALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),

  BOOTSTRAP_ADMIN_API_KEY: z.string().min(20).max(200).optional(),
  REDIS_URL: z.string().optional(),
  RATE_LIMIT_TOKEN_PER_MINUTE: z.coerce.number().int().positive().default(600),
  RATE_LIMIT_ANONYMOUS_PER_MINUTE: z.coerce.number().int().positive().default(120),
  RATE_LIMIT_KEY_PREFIX: z.string().regex(/^[A-Za-z0-9:_-]{1,64}$/).default("rl"),
  ALLOW_PRIVATE_WEBHOOK_URLS: bool.optional(),
  // Development: keep what a loopback receiver answers in the delivery log (a machine one developer uses).
  WEBHOOK_LOOPBACK_RESPONSE_BODIES: bool.default(false),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\s*\d+(\.\d+)?\s*(,\s*\d+(\.\d+)?\s*)*$/, "must be comma-separated seconds, e.g. 5,30,120")
    .default("5,30,120,600,3600,21600,86400,86400"),
  WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(10),
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(1000).default(64),
  // Unset: half of WEBHOOK_CONCURRENCY (at least 1), so one user's slow receivers leave the rest to others.
  WEBHOOK_MAX_IN_FLIGHT_PER_USER: z.coerce.number().int().min(1).max(1000).optional(),
  WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: z.coerce.number().int().min(1).max(1000).default(16),
  SIWE_DOMAINS: z.string().optional(),
  // Browser origins allowed to call the API (CORS), comma-separated: origins, patterns with `*` for
  // the port or the leftmost labels (`http://localhost:*`, `https://*.example.com`), or `*` for any.
  // Unset: none in production; the local dev origins otherwise (DEV_CORS_ORIGINS).
  CORS_ORIGINS: z
    .string()
    .transform((v) => v.split(",").map((o) => o.trim()).filter(Boolean))
    .refine((rules) => rules.every(isOriginRule), { message: "must be comma-separated origins (scheme://host[:port]), with `*` only as the port, the leftmost labels (`*.`) or alone" })
    .optional(),
  JOBS_CONCURRENCY: z.coerce.number().int().min(1).max(100).default(10),
  JOBS_FETCH_BATCH: z.coerce.number().int().min(1).max(100).default(1),

  STORAGE_DIR: z.string().default(".data/storage"),
  ARTWORK_ROYALTY_BPS: z.coerce.number().int().min(0).max(1000).default(500),
  IMAGE_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  IMAGE_FETCH_CONCURRENCY: z.coerce.number().int().min(1).max(200).default(16),
  IMAGE_FETCH_PER_USER: z.coerce.number().int().min(1).max(200).default(4),
  CERTIFICATION_CONCURRENCY: z.coerce.number().int().min(1).max(200).default(32),
  // About 0.26 M gas a certification plus the relayer's 20 % headroom: 50 stay under the 2^24 gas
  // cap of one transaction (EIP-7825, Hardhat's default hardfork and mainnet's since Osaka).
  CERTIFICATION_BATCH_SIZE: z.coerce.number().int().min(1).max(50).default(40),
  CERTIFICATION_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(12),
  CERTIFICATION_RETRY_BASE_MS: z.coerce.number().int().min(10).max(3_600_000).default(2_000),
  CERTIFICATION_LEASE_MS: z.coerce.number().int().min(500).max(3_600_000).default(180_000),
  CERTIFICATION_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).default(15_000),
  CERTIFICATION_CRASH_AFTER_SUBMIT: bool.default(false),
  IDEMPOTENCY_CRASH_AFTER_COMMIT: bool.default(false),

  // Only the built-in sandbox so far; a real adapter (Stripe) adds its name here
  // (docs/operators/production.md#payments).
  PAYMENT_PROCESSOR: z.enum(["sandbox"]).default("sandbox"),
  PAYMENT_SANDBOX_IN_PRODUCTION: bool.default(false),
  PLATFORM_FEE_BPS: z.coerce.number().int().min(0).max(10_000).default(250),
  PAYMENT_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  PAYMENT_RETRY_BASE_MS: z.coerce.number().int().min(1).max(60_000).default(250),

  // How often a worker anchors the audit ledger's unanchored entries on-chain; 0: this process never does
  // (docs/auditors.md#the-marketplace-ledger).
  LEDGER_ANCHOR_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).refine((v) => v === 0 || v >= 100, "must be 0 (off) or at least 100").default(30_000),

  // How long POST /v1/marketplace/listings/:id/purchase waits for the sale to complete before answering 202.
  MARKETPLACE_PURCHASE_WAIT_MS: z.coerce.number().int().min(0).max(30_000).default(5_000),
  // How often a worker looks for listings whose certificate left the seller's wallet, and overdue offers.
  MARKETPLACE_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(3_600_000).default(5_000),
  // Runs of a sale's charge job (each retries transient processor failures PAYMENT_MAX_ATTEMPTS times) before the sale fails.
  MARKETPLACE_CHARGE_ATTEMPTS: z.coerce.number().int().min(1).max(25).default(10),
  // How long a process serves its ranking of GET /v1/community/discussions?order=popular before recomputing it (0: every request).
  COMMUNITY_POPULAR_CACHE_MS: z.coerce.number().int().min(0).max(3_600_000).default(5_000),
  // Anonymous public reads kept per URL by each HTTP process (0: none), forgotten on every change.
  PUBLIC_READ_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
  PUBLIC_READ_CACHE_MAX_MB: z.coerce.number().int().min(1).max(4_096).default(64),
  // How long POST /v1/fractional/:id/purchase (and fractionalizing) waits for the chain before answering 202.
  FRACTIONAL_PURCHASE_WAIT_MS: z.coerce.number().int().min(0).max(30_000).default(5_000),
  TICKET_HOLD_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  TICKET_HOLD_MAX_SHARE: z.coerce.number().gt(0).max(1).default(0.5),
  FREE_TICKETS_PER_USER: z.coerce.number().int().min(1).max(1_000_000).default(10),
});

export type Env = z.input<typeof envSchema>;

export interface Config {
  env: "development" | "test" | "production";
  production: boolean;
  host: string;
  port: number;
  /** The URL clients reach the API at; links (token metadata, docs) are built from it. */
  publicBaseUrl: string;
  logLevel: z.infer<typeof envSchema>["LOG_LEVEL"];
  trustProxy: boolean;
  database: { url: string; poolSize: number; preparedStatements: boolean };
  chain: {
    rpcUrl: string;
    id: number;
    name: string;
    relayerPrivateKey: `0x${string}`;
    /** BIP-39 mnemonic of the HD wallet that holds users' custodial addresses. */
    custodyMnemonic: string;
    artCertificateAddress: `0x${string}` | null;
    artSharesAddress: `0x${string}` | null;
    /** ArtMarket: settles sales (moves certificates once per sale id). */
    artMarketAddress: `0x${string}` | null;
    /** AuditAnchor: Merkle roots of the audit ledger. */
    auditAnchorAddress: `0x${string}` | null;
    /** ArtExchange: sales paid on-chain in `paymentTokenAddress`; null: none on this chain. */
    artExchangeAddress: `0x${string}` | null;
    /** The 6-decimal USD stablecoin ArtExchange takes (its `paymentToken()`). */
    paymentTokenAddress: `0x${string}` | null;
    startBlock: number;
    /** EXPLORER_URL without a trailing slash: `${explorerUrl}/address/0x…`, `/tx/0x…`, `/block/n`. */
    explorerUrl: string | null;
  };
  indexer: {
    url: string | null;
    viewsSchema: string;
    maxLagBlocks: number;
    /** Behind the head without progress (or more than maxLagBlocks behind) for this long: stalled; certifications are then confirmed from the chain. */
    stallTimeoutMs: number;
  };
  bootstrapAdminApiKey: string | null;
  /** `crashAfterCommit` (tests): SIGKILL the process after a request's unit of work commits, before its answer is sent. */
  idempotency: { crashAfterCommit: boolean };
  redisUrl: string | null;
  /** `keyPrefix` namespaces the counters in a shared Redis (one per deployment). */
  rateLimit: { tokenPerMinute: number; anonymousPerMinute: number; keyPrefix: string };
  /**
   * Where users' URLs (webhooks, image_url) may lead: public addresses, and with `allowPrivate`
   * (ALLOW_PRIVATE_WEBHOOK_URLS, development only) loopback off the stack's own ports.
   */
  outboundPolicy: OutboundPolicy;
  /**
   * Delays before each retry of a failed delivery (jittered ±10 %), a timeout per attempt, parallel
   * sends per process, and the attempts in flight at once (all processes) per user and per subscription.
   */
  webhooks: {
    retryScheduleSeconds: number[];
    timeoutMs: number;
    concurrency: number;
    /** Development: a loopback receiver's answer body is kept in the delivery log (else its code only). */
    keepLoopbackResponseBodies: boolean;
    maxInFlightPerUser: number;
    maxInFlightPerSubscription: number;
  };
  /** Domains a SIWE message may be bound to (EIP-4361 `domain`: host[:port]). */
  siweDomains: string[];
  /** Browser origins (and patterns) allowed to call the API across origins (api/src/http/cors.ts). */
  cors: { allowedOrigins: string[] };
  jobs: { concurrency: number; fetchBatch: number };
  /** Where uploaded and fetched artwork images are kept (local disk; STORAGE_DIR). */
  storage: { dir: string };
  certification: {
    /** ERC-2981 royalty of every certificate, paid to the artist's wallet. */
    royaltyBps: number;
    imageFetchTimeoutMs: number;
    /** image_url downloads at once per process (a job runner of their own, outside the certification slots). */
    imageFetchConcurrency: number;
    /** One artist's downloads in flight at once across all processes: slow URLs of one cannot take every slot. */
    imageFetchPerUser: number;
    /**
     * Chain operation attempts of one kind a worker process runs at once (share mints, settlements,
     * anchors); certifications, gathered into batches, at least 3 × batchSize.
     */
    concurrency: number;
    /** Most certifications in one `certifyBatch` transaction. */
    batchSize: number;
    /** Attempts of a certification before it is `certification_failed` (an admin can retry). */
    maxAttempts: number;
    /** Backoff of the n-th retry: retryBaseMs * 2^(n-1), capped at one hour, jittered. */
    retryBaseMs: number;
    /** How long an attempt may run before the sweep considers it lost (a crashed process). */
    leaseMs: number;
    /** The safety net: confirm what the indexer has, re-enqueue lost attempts. */
    sweepIntervalMs: number;
    /** Tests only: SIGKILL the process right after a certify transaction is sent. */
    crashAfterSubmit: boolean;
  };
  payments: {
    processor: "sandbox";
    /** The platform's fee on every charge, in basis points (250 = 2.5 %). */
    platformFeeBps: number;
    /** Attempts of a charge or refund that fails transiently, the n-th retry after retryBaseMs * 2^(n-1) (jittered). */
    maxAttempts: number;
    retryBaseMs: number;
  };
  /** The audit ledger: how often a worker anchors its unanchored entries on-chain (AuditAnchor); 0: never. */
  ledger: { anchorIntervalMs: number };
  /** Buy-now's wait for the outcome, and the worker's sweep of moved listings and overdue offers. */
  marketplace: { purchaseWaitMs: number; sweepIntervalMs: number; chargeAttempts: number };
  /** How long a share purchase or a fractionalization waits for the chain before answering 202. */
  fractional: { purchaseWaitMs: number };
  events: {
    ticketHoldMs: number;
    /** The share of an event's seats left that one user's unpaid holds may take (docs/ownership-and-money.md). */
    holdMaxShare: number;
    /** Free tickets of one kind per user and event. */
    freeTicketsPerUser: number;
  };
  /** How long a process serves its popular-discussions ranking. */
  community: { popularCacheMs: number };
  /** Anonymous public reads kept per URL (api/src/http/public-read-cache.ts); ttlMs 0: none. */
  publicReadCache: { ttlMs: number; maxBytes: number };
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** The browser origins of local development, on any port (a dApp's dev server): allowed outside production unless CORS_ORIGINS says otherwise. */
export const DEV_CORS_ORIGINS = ["http://localhost:*", "http://127.0.0.1:*"] as const;

const CHAIN_NAMES: Record<number, string> = {
  1: "ethereum",
  10: "optimism",
  137: "polygon",
  8453: "base",
  42161: "arbitrum",
  11155111: "sepolia",
  84532: "base-sepolia",
  31337: "hardhat-local",
};

/** Parses the environment once; nothing else in the API reads process.env. */
export function loadConfig(source: NodeJS.ProcessEnv | Record<string, string | undefined>): Config {
  // Empty strings mean "unset", as in most .env tooling.
  const cleaned = Object.fromEntries(
    Object.entries(source).filter(([, v]) => v !== undefined && v !== ""),
  );
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const e = parsed.data;
  const production = e.NODE_ENV === "production";
  const publicBaseUrl = (e.PUBLIC_BASE_URL ?? `http://${hostForUrl(e.HOST)}:${e.PORT}`).replace(/\/$/, "");

  if (production) {
    const missing = (
      [
        ["RELAYER_PRIVATE_KEY", e.RELAYER_PRIVATE_KEY],
        ["ART_CERTIFICATE_ADDRESS", e.ART_CERTIFICATE_ADDRESS],
        ["ART_SHARES_ADDRESS", e.ART_SHARES_ADDRESS],
        ["ART_MARKET_ADDRESS", e.ART_MARKET_ADDRESS],
        ["AUDIT_ANCHOR_ADDRESS", e.AUDIT_ANCHOR_ADDRESS],
        ["PUBLIC_BASE_URL", e.PUBLIC_BASE_URL],
      ] as const
    )
      .filter(([, v]) => !v)
      .map(([k]) => k);
    if (missing.length > 0) {
      throw new ConfigError(`Production mode requires: ${missing.join(", ")}`);
    }
    if (e.RELAYER_PRIVATE_KEY?.toLowerCase() === HARDHAT_DEV_RELAYER_KEY) {
      throw new ConfigError("Production mode refuses the public Hardhat dev account as relayer");
    }
    if (e.CERTIFICATION_CRASH_AFTER_SUBMIT) {
      throw new ConfigError("CERTIFICATION_CRASH_AFTER_SUBMIT is a test setting and cannot be enabled in production mode");
    }
    if (e.IDEMPOTENCY_CRASH_AFTER_COMMIT) {
      throw new ConfigError("IDEMPOTENCY_CRASH_AFTER_COMMIT is a test setting and cannot be enabled in production mode");
    }
    if (e.PAYMENT_PROCESSOR === "sandbox" && !e.PAYMENT_SANDBOX_IN_PRODUCTION) {
      throw new ConfigError("Production mode refuses the sandbox payment processor (PAYMENT_PROCESSOR=sandbox) unless PAYMENT_SANDBOX_IN_PRODUCTION=true");
    }
    if (e.ALLOW_PRIVATE_WEBHOOK_URLS === true) {
      throw new ConfigError("ALLOW_PRIVATE_WEBHOOK_URLS cannot be enabled in production mode");
    }
  }

  if (!e.ART_EXCHANGE_ADDRESS !== !e.PAYMENT_TOKEN_ADDRESS) {
    throw new ConfigError("ART_EXCHANGE_ADDRESS and PAYMENT_TOKEN_ADDRESS go together: set both (on-chain purchases) or neither");
  }

  const webhookUserCap = e.WEBHOOK_MAX_IN_FLIGHT_PER_USER ?? Math.max(1, Math.floor(e.WEBHOOK_CONCURRENCY / 2));

  const baseHost = new URL(publicBaseUrl).host;
  const siweDomains = e.SIWE_DOMAINS
    ? e.SIWE_DOMAINS.split(",").map((d) => d.trim()).filter(Boolean)
    : production
      ? [baseHost]
      : [...new Set([baseHost, `localhost:${e.PORT}`, `127.0.0.1:${e.PORT}`])];

  return {
    env: e.NODE_ENV,
    production,
    host: e.HOST,
    port: e.PORT,
    publicBaseUrl,
    logLevel: e.LOG_LEVEL,
    trustProxy: e.TRUST_PROXY,
    database: { url: e.DATABASE_URL, poolSize: e.DATABASE_POOL_SIZE, preparedStatements: e.DATABASE_PREPARED_STATEMENTS },
    chain: {
      rpcUrl: e.CHAIN_RPC_URL,
      id: e.CHAIN_ID,
      name: e.CHAIN_NAME ?? CHAIN_NAMES[e.CHAIN_ID] ?? `evm-${e.CHAIN_ID}`,
      relayerPrivateKey: (e.RELAYER_PRIVATE_KEY ?? HARDHAT_DEV_RELAYER_KEY) as `0x${string}`,
      custodyMnemonic: e.CUSTODY_MNEMONIC,
      artCertificateAddress: (e.ART_CERTIFICATE_ADDRESS as `0x${string}` | undefined) ?? null,
      artSharesAddress: (e.ART_SHARES_ADDRESS as `0x${string}` | undefined) ?? null,
      artMarketAddress: (e.ART_MARKET_ADDRESS as `0x${string}` | undefined) ?? null,
      auditAnchorAddress: (e.AUDIT_ANCHOR_ADDRESS as `0x${string}` | undefined) ?? null,
      artExchangeAddress: (e.ART_EXCHANGE_ADDRESS as `0x${string}` | undefined) ?? null,
      paymentTokenAddress: (e.PAYMENT_TOKEN_ADDRESS as `0x${string}` | undefined) ?? null,
      startBlock: e.CONTRACTS_START_BLOCK,
      explorerUrl: e.EXPLORER_URL?.replace(/\/+$/, "") ?? null,
    },
    indexer: {
      url: e.INDEXER_URL ?? null,
      viewsSchema: e.INDEXER_VIEWS_SCHEMA,
      maxLagBlocks: e.INDEXER_MAX_LAG_BLOCKS,
      stallTimeoutMs: e.INDEXER_STALL_TIMEOUT_MS,
    },
    bootstrapAdminApiKey: e.BOOTSTRAP_ADMIN_API_KEY ?? null,
    idempotency: { crashAfterCommit: e.IDEMPOTENCY_CRASH_AFTER_COMMIT },
    redisUrl: e.REDIS_URL ?? null,
    rateLimit: { tokenPerMinute: e.RATE_LIMIT_TOKEN_PER_MINUTE, anonymousPerMinute: e.RATE_LIMIT_ANONYMOUS_PER_MINUTE, keyPrefix: e.RATE_LIMIT_KEY_PREFIX },
    outboundPolicy: {
      allowPrivate: production ? false : (e.ALLOW_PRIVATE_WEBHOOK_URLS ?? true),
      reservedLoopbackPorts: stackPortsOf(e.PORT, [e.DATABASE_URL, e.REDIS_URL, e.CHAIN_RPC_URL, e.INDEXER_URL]),
    },
    webhooks: {
      retryScheduleSeconds: e.WEBHOOK_RETRY_SCHEDULE.split(",").map(Number),
      timeoutMs: Math.round(e.WEBHOOK_TIMEOUT_SECONDS * 1000),
      concurrency: e.WEBHOOK_CONCURRENCY,
      keepLoopbackResponseBodies: e.WEBHOOK_LOOPBACK_RESPONSE_BODIES,
      maxInFlightPerUser: webhookUserCap,
      maxInFlightPerSubscription: Math.min(e.WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION, webhookUserCap),
    },
    siweDomains,
    cors: { allowedOrigins: e.CORS_ORIGINS ?? (production ? [] : [...DEV_CORS_ORIGINS]) },
    jobs: { concurrency: e.JOBS_CONCURRENCY, fetchBatch: e.JOBS_FETCH_BATCH },
    storage: { dir: e.STORAGE_DIR },
    certification: {
      royaltyBps: e.ARTWORK_ROYALTY_BPS,
      imageFetchTimeoutMs: e.IMAGE_FETCH_TIMEOUT_MS,
      imageFetchConcurrency: e.IMAGE_FETCH_CONCURRENCY,
      imageFetchPerUser: e.IMAGE_FETCH_PER_USER,
      concurrency: e.CERTIFICATION_CONCURRENCY,
      batchSize: e.CERTIFICATION_BATCH_SIZE,
      maxAttempts: e.CERTIFICATION_MAX_ATTEMPTS,
      retryBaseMs: e.CERTIFICATION_RETRY_BASE_MS,
      leaseMs: e.CERTIFICATION_LEASE_MS,
      sweepIntervalMs: e.CERTIFICATION_SWEEP_INTERVAL_MS,
      crashAfterSubmit: e.CERTIFICATION_CRASH_AFTER_SUBMIT,
    },
    payments: {
      processor: e.PAYMENT_PROCESSOR,
      platformFeeBps: e.PLATFORM_FEE_BPS,
      maxAttempts: e.PAYMENT_MAX_ATTEMPTS,
      retryBaseMs: e.PAYMENT_RETRY_BASE_MS,
    },
    ledger: { anchorIntervalMs: e.LEDGER_ANCHOR_INTERVAL_MS },
    marketplace: { purchaseWaitMs: e.MARKETPLACE_PURCHASE_WAIT_MS, sweepIntervalMs: e.MARKETPLACE_SWEEP_INTERVAL_MS, chargeAttempts: e.MARKETPLACE_CHARGE_ATTEMPTS },
    fractional: { purchaseWaitMs: e.FRACTIONAL_PURCHASE_WAIT_MS },
    events: { ticketHoldMs: e.TICKET_HOLD_SECONDS * 1000, holdMaxShare: e.TICKET_HOLD_MAX_SHARE, freeTicketsPerUser: e.FREE_TICKETS_PER_USER },
    community: { popularCacheMs: e.COMMUNITY_POPULAR_CACHE_MS },
    publicReadCache: { ttlMs: e.PUBLIC_READ_CACHE_TTL_MS, maxBytes: e.PUBLIC_READ_CACHE_MAX_MB * 1024 * 1024 },
  };
}

/**
 * The ports of the stack's own services (this API, its Postgres, Redis, chain node and indexer):
 * a loopback webhook or image URL may not name them (lib/outbound.ts, docs/integrators/webhooks.md).
 */
function stackPortsOf(apiPort: number, urls: readonly (string | undefined)[]): number[] {
  const ports = new Set([apiPort]);
  for (const raw of urls) {
    if (!raw) continue;
    try {
      const url = new URL(raw);
      const port = url.port ? Number(url.port) : { "postgres:": 5432, "postgresql:": 5432, "redis:": 6379, "rediss:": 6379, "http:": 80, "https:": 443, "ws:": 80, "wss:": 443 }[url.protocol];
      if (port !== undefined) ports.add(port);
    } catch {
      // Not a URL (a socket path, a connection string of another form): nothing on a loopback port to keep out.
    }
  }
  return [...ports].sort((a, b) => a - b);
}

function hostForUrl(host: string): string {
  if (host === "0.0.0.0" || host === "::") return "127.0.0.1";
  return host.includes(":") ? `[${host}]` : host;
}
