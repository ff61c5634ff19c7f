/**
 * OPTIONS requests (a browser's CORS preflight). They need no key and never count as a failed
 * authentication, or one open page would lock its address out; there is no CORS, so no
 * Access-Control-* header is sent and the browser stops there. They are answered in the first
 * onRequest hook after the request id, before authentication and before fastify would read and
 * parse a body: a request that needs no key gets nothing read or parsed on its behalf. A body
 * sent with one is dropped unread (app.ts, onSend), so the connection goes on.
 */
import type { FastifyInstance } from 'fastify';

/**
 * Adds the hook to `app`, the API's level (the server's root, or decisionApp's scope). The route
 * the request matched answers it with its handler: the paths that take other methods answer 405
 * with Allow in their own shape (dialect-routes.ts, files.ts), every other path the API's 404.
 * None of those handlers reads a body; a route that takes OPTIONS must not either.
 */
export function registerPreflight(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'OPTIONS') return;
    const answer: unknown = await request.routeOptions.handler.call(app, request, reply);
    if (!reply.sent) reply.send(answer);
    return reply;
  });
}
