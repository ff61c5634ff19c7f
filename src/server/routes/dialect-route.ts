/**
 * One POST route for a foreign wire dialect (src/api/dialect.ts): the body goes to dialect.parse(),
 * the domain request to DecisionService.decideNormalized() (the path /v1/decide takes), the answer
 * through dialect.respond(). Every failure is answered in the dialect's own error shape, including
 * those raised before the handler by the shared hooks (authentication, rate limits, body parsing,
 * fastify's own errors): the route's errorHandler sends them through dialect.error().
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchema } from 'fastify';

import type { AuthFailure, Dialect, DialectCall, WireError } from '../../api/dialect.js';
import { jsonInOrder } from '../../domain/key-order.js';
import type { DecisionService } from '../../service/decision-service.js';
import { httpError } from '../errors.js';

export interface DialectRouteOptions {
  service: DecisionService;
  /** Request body limit in bytes. */
  bodyLimit: number;
}

const BEARER_SCHEME = /^Bearer +\S/i;

/** A key was sent with the Bearer scheme (then it failed to verify), or not (missing, other scheme). */
export function authFailure(request: FastifyRequest): AuthFailure {
  const header = request.headers.authorization;
  return typeof header === 'string' && BEARER_SCHEME.test(header) ? 'invalid' : 'missing';
}

export function sendWire(reply: FastifyReply, wire: WireError): FastifyReply {
  for (const [name, value] of Object.entries(wire.headers)) reply.header(name, value);
  return reply.code(wire.status).type('application/json; charset=utf-8').send(wire.body);
}

/** The error handler of a dialect route: fastify's and the hooks' errors in the dialect's shape. */
export function dialectErrorHandler(dialect: Dialect) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const api = httpError(err, request);
    // Errors that reach this handler come before the body was parsed: an invalid_question here is
    // about reading the body (not JSON, wrong Content-Type); 415 (compressed) keeps its status.
    const wire = dialect.error(api, { auth: authFailure(request), unreadableBody: api.code === 'invalid_question' && api.status === 400 });
    if (wire.status >= 500) request.log.error({ err }, 'request failed');
    else request.log.info({ code: api.code, status: wire.status }, 'request rejected');
    return sendWire(reply, wire);
  };
}

/**
 * Registers `POST <path>` for `dialect` on `app` (a /v1-prefixed scope: `path` is the part after it).
 * `onSend` runs for every response of the route, errors included.
 */
export function registerDialectRoute<Call extends DialectCall>(
  app: FastifyInstance,
  dialect: Dialect<Call, unknown>,
  path: string,
  { service, bodyLimit }: DialectRouteOptions,
  route: { schema: FastifySchema; onSend?: (request: FastifyRequest, reply: FastifyReply) => void },
): void {
  app.post(
    path,
    {
      bodyLimit,
      schema: route.schema,
      // The schema is for the OpenAPI document only: dialect.parse() is the one validator.
      validatorCompiler: () => () => true,
      // Keys in the caller's order (answers by question id, a choice's probabilities by option).
      serializerCompiler: () => (data) => jsonInOrder(data),
      errorHandler: dialectErrorHandler(dialect as Dialect),
      onSend: async (request, reply, payload) => {
        route.onSend?.(request, reply);
        return payload;
      },
    },
    async (request, reply) => {
      const parsed = dialect.parse(request.body);
      if (!parsed.ok) {
        request.log.info({ status: parsed.error.status }, 'request rejected');
        return sendWire(reply, parsed.error);
      }
      try {
        return dialect.respond(parsed.call, await service.decideNormalized(parsed.call.request, { requestId: request.id }));
      } catch (err) {
        const wire = dialect.error(err);
        if (wire.status >= 500) request.log.error({ err }, 'request failed');
        return sendWire(reply, wire);
      }
    },
  );
}
