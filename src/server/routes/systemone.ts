/**
 * POST /v1/systemone: TypeSafe's System One format (src/api/systemone), answered by the same
 * service path as /v1/decide. Every response of this path, errors and authentication failures
 * included, carries `x-typesafe-request-id: req_<32 hex>` (the request's id; request-id.ts), which
 * TypeSafe's SDK requires. Other methods on the path get System One's 405, paths below it its 404.
 */
import type { FastifyPluginAsync, HTTPMethods } from 'fastify';

import type { WireError } from '../../api/dialect.js';

import { SystemOneErrorSchema, SystemOneRequestSchema, SystemOneResponseSchema, systemOne } from '../../api/systemone/index.js';
import { registerDialectRoute, sendWire, type DialectRouteOptions } from './dialect-route.js';

export const TYPESAFE_REQUEST_ID_HEADER = 'x-typesafe-request-id';

const error = (description: string) => ({ ...SystemOneErrorSchema, description });

export const systemOneRoutes: FastifyPluginAsync<DialectRouteOptions> = async (app, options) => {
  const onSend = (request: { id: string }, reply: { header(name: string, value: string): unknown }) => {
    reply.header(TYPESAFE_REQUEST_ID_HEADER, request.id);
  };
  registerDialectRoute(app, systemOne, '/systemone', options, {
    onSend,
    schema: {
      summary: 'System One (TypeSafe format): probabilities for noul, choice and score questions about one state',
      description: 'Drop-in for clients of POST /v1/systemone; what differs from the vendor is in docs/compatibility.md.',
      operationId: 'systemOne',
      tags: ['compatibility'],
      body: SystemOneRequestSchema,
      response: {
        200: SystemOneResponseSchema,
        400: error('A rule or limit (detail names it), an unknown type or model, a state over the token limit'),
        401: error('The API key does not verify'),
        403: error('No API key, or a scheme other than Bearer'),
        422: error('The body has the wrong shape (a list of problems with their loc)'),
        429: error('Rate limited or overloaded: see Retry-After (seconds) and retry-after-ms'),
        500: error('Server error: retry with backoff'),
      },
    },
  });
  // What the vendor's router answers before authentication and before reading the body: another
  // method on the path is 405, any path below it 404, both in its shape and with its request id. A
  // route-level onRequest hook answers at once (after the shared hooks, which skip public routes),
  // so neither a missing key nor an unreadable body can turn them into a 403 or a 422.
  const routerAnswer = (status: 404 | 405, methods: HTTPMethods[], url: string) =>
    app.route({
      method: methods,
      url,
      schema: { hide: true },
      config: { public: true },
      onRequest: async (request, reply) => {
        onSend(request, reply);
        const wire: WireError =
          status === 405
            ? { status, body: { detail: 'Method Not Allowed' }, headers: { allow: 'POST' } }
            : { status, body: { detail: 'Not Found' }, headers: {} };
        return sendWire(reply, wire);
      },
      handler: async () => undefined,
    });
  routerAnswer(405, ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], '/systemone');
  routerAnswer(404, ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], '/systemone/*');
};
