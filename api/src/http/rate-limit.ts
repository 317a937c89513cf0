import type { Request, Response } from "express";
import { Redis } from "ioredis";
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from "rate-limiter-flexible";
import type { AuthContext } from "../lib/actor.ts";
import { ApiError } from "../lib/errors.ts";

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window frees a request. */
  resetSeconds: number;
}

export interface RateLimiter {
  consume(kind: "user" | "anonymous", key: string): Promise<RateLimitDecision>;
  /**
   * Whether the store answers, waiting up to `timeoutMs` for it: a Redis store refuses to queue
   * commands while it connects (a request then gets 503), so the API listens once it is ready.
   */
  ready(timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Fixed one-minute windows per user, shared by all its tokens and keys (per client IP when
 * anonymous or when a credential is refused). In memory by default; in Redis when REDIS_URL is
 * set, so several API instances share one budget.
 */
export function createRateLimiter(opts: {
  tokenPerMinute: number;
  anonymousPerMinute: number;
  redisUrl: string | null;
  keyPrefix: string;
}): RateLimiter {
  const redis = opts.redisUrl ? new Redis(opts.redisUrl, { enableOfflineQueue: false, lazyConnect: false }) : null;
  redis?.on("error", () => {}); // surfaced through consume(); ioredis reconnects by itself
  const make = (points: number, keyPrefix: string): RateLimiterAbstract =>
    redis
      ? new RateLimiterRedis({ storeClient: redis, points, duration: 60, keyPrefix, useRedisPackage: false })
      : new RateLimiterMemory({ points, duration: 60, keyPrefix });
  const limiters = {
    user: { limiter: make(opts.tokenPerMinute, `${opts.keyPrefix}:user`), limit: opts.tokenPerMinute },
    anonymous: { limiter: make(opts.anonymousPerMinute, `${opts.keyPrefix}:anon`), limit: opts.anonymousPerMinute },
  };

  return {
    async consume(kind, key) {
      const { limiter, limit } = limiters[kind];
      try {
        const res = await limiter.consume(key, 1);
        return { allowed: true, limit, remaining: res.remainingPoints, resetSeconds: Math.ceil(res.msBeforeNext / 1000) };
      } catch (err) {
        if (err instanceof RateLimiterRes) {
          return { allowed: false, limit, remaining: 0, resetSeconds: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) };
        }
        throw err; // the store is down: the error middleware answers 503
      }
    },
    async ready(timeoutMs) {
      if (!redis || redis.status === "ready") return true;
      return new Promise<boolean>((resolve) => {
        const onReady = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          redis.off("ready", onReady);
          resolve(false);
        }, timeoutMs);
        redis.once("ready", onReady);
      });
    },
    async close() {
      if (redis) await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/** Takes one request from the caller's budget: the user's with a credential, else the address's. */
export function consumeRateLimit(rateLimiter: RateLimiter, req: Request, auth: AuthContext | null): Promise<RateLimitDecision> {
  return auth ? rateLimiter.consume("user", auth.principal) : rateLimiter.consume("anonymous", `ip:${req.ip}`);
}

/** The decision's RateLimit-* headers; refused: 429 with Retry-After. */
export function enforceRateLimit(res: Response, decision: RateLimitDecision): void {
  res.setHeader("RateLimit-Limit", String(decision.limit));
  res.setHeader("RateLimit-Remaining", String(decision.remaining));
  res.setHeader("RateLimit-Reset", String(decision.resetSeconds));
  if (!decision.allowed) {
    throw new ApiError(429, "rate_limited", `Rate limit of ${decision.limit} requests per minute exceeded; retry in ${decision.resetSeconds} s`, {
      headers: { "Retry-After": String(decision.resetSeconds) },
    });
  }
}
