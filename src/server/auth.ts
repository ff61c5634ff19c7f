/**
 * Bearer authentication for every route except the public ones (public-routes.ts: `/healthz`,
 * `/readyz`, `/metrics`); OPTIONS requests are answered before it (preflight.ts). Unmatched paths are authenticated too, so an
 * anonymous caller learns nothing about which paths exist. A missing, malformed or unknown key, or more than
 * one Authorization header, is 401 `invalid_key` with `WWW-Authenticate: Bearer` (the error handler
 * adds the header). Failures that present a credential (any Authorization header) are counted per
 * client IP (rate-limit.ts): an IP out of tokens gets 429 `rate_limited` for every request, with or
 * without a good key, until its bucket refills. A request with no Authorization header guesses
 * nothing and is not counted: any web page can make its visitor's browser send such requests (an
 * image, a no-cors fetch; no page can add the header without CORS), and counting them would let
 * the page lock the visitor's address out.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

import { ApiError } from '../api/errors.js';
import type { ApiKeySet } from './api-keys.js';
import { isPublicRoute } from './public-routes.js';
import { TokenBuckets, type BucketOptions } from './rate-limit.js';
import { failureBucketOf } from './client-address.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The non-secret id of the caller's API key (first 16 hex digits of its SHA-256); '' on public
     * routes. Batch ownership is keyed by it.
     */
    keyId: string;
  }
}

const BEARER = /^Bearer +([^\s]+) *$/i;

/** The keyId of the request's key, or throws 401 invalid_key. */
export function authenticate(header: string | string[] | undefined, keys: ApiKeySet): string {
  if (header === undefined || header === '') {
    throw new ApiError('invalid_key', "missing API key: send the header 'Authorization: Bearer <API key>'");
  }
  const match = typeof header === 'string' ? BEARER.exec(header) : null;
  if (!match) throw new ApiError('invalid_key', "malformed Authorization header: expected 'Bearer <API key>'");
  const keyId = keys.verify(match[1]!);
  if (!keyId) throw new ApiError('invalid_key', 'the API key is not valid');
  return keyId;
}

/**
 * Who owns what the request creates or reads (batches, files): its key's id. Every /v1 route is
 * authenticated before its handler runs; a request that reaches one without a key id (a route
 * registered where this hook is not) is refused all the same.
 */
export function ownerOf(request: FastifyRequest): string {
  const keyId: unknown = request.keyId;
  if (typeof keyId !== 'string' || keyId === '') throw new ApiError('invalid_key', 'missing API key');
  return keyId;
}

/** How many times the request carries `name` (lower case). Node keeps only the first Authorization. */
function headerCount(rawHeaders: string[], name: string): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === name) n += 1;
  return n;
}

/**
 * Adds `request.keyId` and the authentication hook to `app`, the API's level (app.ts: the server's
 * root, or decisionApp's scope in a host's app).
 * `invalidKeys`: the per-IP limit on failed authentications; false: none.
 */
export function registerAuth(app: FastifyInstance, keys: ApiKeySet, invalidKeys: BucketOptions | false): void {
  const failures = invalidKeys ? new TokenBuckets(invalidKeys) : undefined;
  app.decorateRequest('keyId', '');
  app.addHook('onRequest', async (request) => {
    if (isPublicRoute(request)) return;
    const wait = failures?.wait(failureBucketOf(request.ip)) ?? 0;
    if (wait > 0) {
      throw new ApiError('rate_limited', `too many requests with a missing or invalid API key from this address; retry after ${wait} s`, {
        retryAfterSeconds: wait,
      });
    }
    try {
      if (headerCount(request.raw.rawHeaders, 'authorization') > 1) {
        throw new ApiError('invalid_key', 'more than one Authorization header: send exactly one');
      }
      request.keyId = authenticate(request.headers.authorization, keys);
    } catch (err) {
      if (headerCount(request.raw.rawHeaders, 'authorization') > 0) failures?.take(failureBucketOf(request.ip));
      throw err;
    }
  });
}
