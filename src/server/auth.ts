/**
 * Bearer authentication for every route except those whose route config says `public: true`
 * (`/healthz`, `/readyz`, `/metrics`). Unmatched paths are authenticated too, so an anonymous
 * caller learns nothing about which paths exist. A missing, malformed or unknown key is
 * 401 `invalid_key` with `WWW-Authenticate: Bearer` (the error handler adds the header).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

import { ApiError } from '../api/errors.js';
import type { ApiKeySet } from './api-keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The non-secret id of the caller's API key (first 16 hex digits of its SHA-256); '' on public
     * routes. Batch ownership is keyed by it.
     */
    keyId: string;
  }
  interface FastifyContextConfig {
    /** No authentication and no rate limit (health and metrics). */
    public?: boolean;
  }
}

const BEARER = /^Bearer +([^\s]+) *$/i;

export function isPublicRoute(request: FastifyRequest): boolean {
  return request.routeOptions.config?.public === true;
}

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

/** Adds `request.keyId` and the authentication hook to `app` (call on the root-level app plugin). */
export function registerAuth(app: FastifyInstance, keys: ApiKeySet): void {
  app.decorateRequest('keyId', '');
  app.addHook('onRequest', async (request) => {
    if (isPublicRoute(request)) return;
    request.keyId = authenticate(request.headers.authorization, keys);
  });
}
