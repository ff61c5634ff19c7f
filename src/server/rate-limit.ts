/**
 * Per-key request rate limit: one token bucket per API key (keyId). A bucket holds at most `burst`
 * tokens and refills at `requestsPerSecond`; each request takes one token. An empty bucket is
 * 429 `rate_limited` with `Retry-After` = whole seconds until a token is back (at least 1).
 * Buckets live in memory per process; their number is bounded by the number of configured keys.
 */
import type { FastifyInstance } from 'fastify';

import { ApiError } from '../api/errors.js';
import { isPublicRoute } from './auth.js';

export interface RateLimitOptions {
  requestsPerSecond: number;
  burst: number;
}

export const DEFAULT_RATE_LIMIT: Readonly<RateLimitOptions> = Object.freeze({ requestsPerSecond: 100, burst: 200 });

/** Rate limit from DECIDE_RATE_LIMIT_RPS / DECIDE_RATE_LIMIT_BURST over the defaults. */
export function rateLimitFromEnv(env: NodeJS.ProcessEnv = process.env): RateLimitOptions {
  const rps = parsePositive(env.DECIDE_RATE_LIMIT_RPS, 'DECIDE_RATE_LIMIT_RPS');
  const burst = parsePositive(env.DECIDE_RATE_LIMIT_BURST, 'DECIDE_RATE_LIMIT_BURST');
  return { requestsPerSecond: rps ?? DEFAULT_RATE_LIMIT.requestsPerSecond, burst: burst ?? DEFAULT_RATE_LIMIT.burst };
}

function parsePositive(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}: must be a positive number, got '${value}'`);
  return n;
}

interface Bucket {
  tokens: number;
  /** Milliseconds (the clock's unit) of the last refill. */
  at: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  readonly requestsPerSecond: number;
  readonly burst: number;

  constructor(options: RateLimitOptions, private readonly now: () => number = () => performance.now()) {
    if (!(options.requestsPerSecond > 0) || !Number.isFinite(options.requestsPerSecond)) {
      throw new Error('rate limit: requestsPerSecond must be a positive number');
    }
    if (!(options.burst >= 1) || !Number.isFinite(options.burst)) throw new Error('rate limit: burst must be at least 1');
    this.requestsPerSecond = options.requestsPerSecond;
    this.burst = options.burst;
  }

  /** Takes one token for `key`: 0 when granted, else the whole seconds to wait (>= 1). */
  take(key: string): number {
    const t = this.now();
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: this.burst, at: t };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.requestsPerSecond);
      b.at = t;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.requestsPerSecond));
  }
}

/** Adds the rate-limit hook; it must run after authentication (it keys on request.keyId). */
export function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): TokenBuckets {
  const buckets = new TokenBuckets(options);
  app.addHook('onRequest', async (request) => {
    if (isPublicRoute(request) || !request.keyId) return;
    const wait = buckets.take(request.keyId);
    if (wait > 0) {
      throw new ApiError(
        'rate_limited',
        `rate limit of ${buckets.requestsPerSecond} requests per second (burst ${buckets.burst}) exceeded for this API key; retry after ${wait} s`,
        { retryAfterSeconds: wait },
      );
    }
  });
  return buckets;
}
