/**
 * Which routes are public: those whose route config says `public: true` (`/healthz`, `/readyz`,
 * `/metrics`) skip authentication (auth.ts) and the per-key rate limit (rate-limit.ts). Its own
 * file so that both can ask without importing each other.
 */
import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** No authentication and no rate limit (health and metrics). */
    public?: boolean;
  }
}

export function isPublicRoute(request: FastifyRequest): boolean {
  return request.routeOptions.config?.public === true;
}
