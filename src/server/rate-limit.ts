/**
 * Rate limits as token buckets. A bucket holds at most `burst` tokens and refills at
 * `requestsPerSecond`; each request takes one token. An empty bucket is 429 `rate_limited` with
 * `Retry-After` = whole seconds until a token is back (at least 1).
 * - Per API key (keyId), for authenticated requests: registerRateLimit().
 * - Per client IP, for failed authentications (a malformed or unknown key; a request with no
 *   Authorization header guesses nothing and is not counted): auth.ts takes a token for each
 *   failure and refuses every request from an IP whose bucket is empty, so keys cannot be guessed
 *   at the speed of the network.
 * Buckets live in memory per process. Per-key buckets are bounded by the number of keys; per-IP
 * buckets are dropped once full again (see prune()).
 */
import type { FastifyInstance } from 'fastify';

import { ApiError } from '../api/errors.js';
import { isPublicRoute } from './public-routes.js';
import { parseDecimal } from '../support/decimal.js';

export interface BucketOptions {
  requestsPerSecond: number;
  burst: number;
}

export interface RateLimitOptions extends BucketOptions {
  /** Failed authentications per client IP; default DEFAULT_INVALID_KEY_LIMIT. */
  invalidKeys?: BucketOptions;
}

export const DEFAULT_RATE_LIMIT: Readonly<BucketOptions> = Object.freeze({ requestsPerSecond: 100, burst: 200 });
export const DEFAULT_INVALID_KEY_LIMIT: Readonly<BucketOptions> = Object.freeze({ requestsPerSecond: 2, burst: 30 });
/**
 * The slowest refill: one token in 100,000 s (about 28 hours). Retry-After is the whole seconds
 * until a token is back, so a slower rate would ask clients to wait longer than anyone means (and
 * below about 1e-21 per second the header would be written in exponent notation).
 */
export const MIN_REQUESTS_PER_SECOND = 1e-5;

/**
 * Rate limits from DECIDE_RATE_LIMIT_RPS / _BURST (per key) and DECIDE_INVALID_KEY_RPS / _BURST
 * (failed authentications per client IP) over the defaults.
 */
export function rateLimitFromEnv(env: NodeJS.ProcessEnv = process.env): Required<RateLimitOptions> {
  const bucket = (prefix: string, defaults: BucketOptions): BucketOptions => ({
    requestsPerSecond: parseAtLeast(env[`${prefix}_RPS`], `${prefix}_RPS`, MIN_REQUESTS_PER_SECOND) ?? defaults.requestsPerSecond,
    burst: parseAtLeast(env[`${prefix}_BURST`], `${prefix}_BURST`, 1) ?? defaults.burst,
  });
  return { ...bucket('DECIDE_RATE_LIMIT', DEFAULT_RATE_LIMIT), invalidKeys: bucket('DECIDE_INVALID_KEY', DEFAULT_INVALID_KEY_LIMIT) };
}

/** The same bounds as TokenBuckets', checked at start so that the message names the variable. */
function parseAtLeast(value: string | undefined, name: string, min: number): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = parseDecimal(value) ?? NaN;
  if (!Number.isFinite(n) || n < min) throw new Error(`${name}: must be a number of at least ${min}, got '${value}'`);
  return n;
}

interface Bucket {
  tokens: number;
  /** Milliseconds (the clock's unit) of the last refill. */
  at: number;
}

/** Above this many buckets, the full ones are dropped (a full bucket is the same as none). */
const PRUNE_ABOVE = 10_000;

export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  readonly requestsPerSecond: number;
  readonly burst: number;

  constructor(options: BucketOptions, private readonly now: () => number = () => performance.now()) {
    if (!(options.requestsPerSecond >= MIN_REQUESTS_PER_SECOND) || !Number.isFinite(options.requestsPerSecond)) {
      throw new Error(`rate limit: requestsPerSecond must be a number of at least ${MIN_REQUESTS_PER_SECOND}`);
    }
    if (!(options.burst >= 1) || !Number.isFinite(options.burst)) throw new Error('rate limit: burst must be at least 1');
    this.requestsPerSecond = options.requestsPerSecond;
    this.burst = options.burst;
  }

  /** Takes one token for `key`: 0 when granted, else the whole seconds to wait (>= 1). */
  take(key: string): number {
    const b = this.refilled(key);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return this.secondsUntilToken(b);
  }

  /** 0 when `key` has a token, else the whole seconds until it has one (>= 1); takes nothing. */
  wait(key: string): number {
    const b = this.buckets.get(key);
    if (!b) return 0;
    this.refill(b);
    return b.tokens >= 1 ? 0 : this.secondsUntilToken(b);
  }

  private refilled(key: string): Bucket {
    let b = this.buckets.get(key);
    if (b) {
      this.refill(b);
      return b;
    }
    if (this.buckets.size >= PRUNE_ABOVE) this.prune();
    b = { tokens: this.burst, at: this.now() };
    this.buckets.set(key, b);
    return b;
  }

  private refill(b: Bucket): void {
    const t = this.now();
    b.tokens = Math.min(this.burst, b.tokens + ((t - b.at) / 1000) * this.requestsPerSecond);
    b.at = t;
  }

  private secondsUntilToken(b: Bucket): number {
    return Math.max(1, Math.ceil((1 - b.tokens) / this.requestsPerSecond));
  }

  /**
   * Drops the buckets that are full again, then, if that was not enough (callers from very many
   * addresses), the oldest ones down to half the bound, so pruning stays rare.
   */
  private prune(): void {
    for (const [key, b] of this.buckets) {
      this.refill(b);
      if (b.tokens >= this.burst) this.buckets.delete(key);
    }
    for (const key of this.buckets.keys()) {
      if (this.buckets.size <= PRUNE_ABOVE / 2) break;
      this.buckets.delete(key);
    }
  }
}

/** Adds the rate-limit hook; it must run after authentication (it keys on request.keyId). */
export function registerRateLimit(app: FastifyInstance, options: BucketOptions): TokenBuckets {
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
