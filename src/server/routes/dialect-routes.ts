/**
 * The routes of every wire dialect, registered from the registry (src/api/dialects.ts) by one
 * function: ours (`/v1/decide`), System One's (`/v1/systemone`) and OpenAI's (`/v1/decisions`).
 * For each: `POST <path>`, whose body goes to dialect.parse(), the domain request to
 * DecisionService.decideNormalized() and the domain result through dialect.respond(); and where
 * the dialect says so (its `route.stray`), its own answers to another method on the path (405)
 * and to a path below it (404). Every failure on these routes is answered in the dialect's own
 * shape, including those raised before the handler by the shared hooks (authentication, rate
 * limits, body parsing, fastify's own errors): their errorHandler sends them through dialect.error().
 */
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, HTTPMethods, RouteShorthandOptions } from 'fastify';

import type { AuthFailure, Dialect, WireError } from '../../api/dialect.js';
import { OFF_THREAD_BODY_BYTES } from '../../api/body-limit.js';
import { DIALECTS } from '../../api/dialects.js';
import { ApiError, errorCodeOfStatus, toApiError, type ErrorCode } from '../../api/errors.js';
import { jsonInOrder } from '../../domain/key-order.js';
import type { DecisionService } from '../../service/decision-service.js';
import { onAbandoned } from '../abandoned.js';
import { ownerOf } from '../auth.js';
import type { BodyThread } from '../body-thread.js';
import { httpError, sendWire } from '../errors.js';
import { parseJsonBody } from '../json-body.js';
import { logErrorAnswer } from '../request-log.js';
import { requestPath } from '../request-target.js';
import { DOCUMENTS_ONLY } from './route-options.js';

export interface DialectRouteOptions {
  service: DecisionService;
  /** Request body limit in bytes. */
  bodyLimit: number;
  /** Where bodies of OFF_THREAD_BODY_BYTES or more are read. */
  bodies: BodyThread;
}

/** A body left unread by the JSON parser because of its size: the route reads it in the body thread. */
class LargeBody {
  constructor(readonly bytes: Buffer) {}
}

/** The JSON parser of these routes: a large body is passed on as bytes (LargeBody), others read at once. */
function parseSmallJsonBody(request: FastifyRequest, body: Buffer, done: (err: Error | null, value?: unknown) => void): void {
  if (body.length >= OFF_THREAD_BODY_BYTES) return done(null, new LargeBody(body));
  parseJsonBody(request, body, done);
}

const BEARER_SCHEME = /^Bearer +\S/i;
const OTHER_METHODS: HTTPMethods[] = ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** A key was sent with the Bearer scheme (then it failed to verify), or not (missing, other scheme). */
export function authFailure(request: FastifyRequest): AuthFailure {
  const header = request.headers.authorization;
  return typeof header === 'string' && BEARER_SCHEME.test(header) ? 'invalid' : 'missing';
}

/**
 * Aborts when the client goes away before its response is written (the connection closed): a
 * large request then stops taking engine calls from everyone else's.
 */
function abandonedWith(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  onAbandoned(reply, () => controller.abort());
  return controller.signal;
}

/**
 * Sends a dialect's error, logged as the app's error handler logs (logErrorAnswer): 5xx with the error, else our
 * code (the same on every door, whatever the dialect's shape calls it) and the status.
 */
function sendRejection(request: FastifyRequest, reply: FastifyReply, wire: WireError, code: ErrorCode, err?: unknown): FastifyReply {
  logErrorAnswer(request, wire.status, code, err);
  return sendWire(reply, wire);
}

/** The error handler of a dialect's routes: fastify's and the hooks' errors in the dialect's shape. */
export function dialectErrorHandler(dialect: Dialect) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const api = httpError(err, request);
    // Errors that reach this handler come before the body was parsed: an invalid_question here is
    // about reading the body (not JSON, wrong Content-Type); 415 (compressed) keeps its status.
    const unreadableBody = api.code === 'invalid_question' && api.status === 400;
    return sendRejection(request, reply, dialect.error(api, { auth: authFailure(request), unreadableBody, requestId: request.id }), api.code, err);
  };
}

/** `POST <url>` for `dialect`, and its stray-request answers. */
function registerDialect(app: FastifyInstance, dialect: Dialect, { service, bodyLimit, bodies }: DialectRouteOptions): void {
  // A dialect's path is the API's (`/v1/...`); this scope is that `/v1` under wherever the API is
  // mounted (the server's root, or a prefix in a host's app).
  const scope = /^\/[^/]+(?=\/)/.exec(dialect.path)?.[0];
  if (!scope || !app.prefix.endsWith(scope)) throw new Error(`dialect path ${dialect.path} is outside the ${app.prefix} scope`);
  const url = dialect.path.slice(scope.length);
  const { openapi, requestIdHeader, stray } = dialect.route;
  const errorHandler = dialectErrorHandler(dialect);
  // On every response of the path, errors included (an onSend hook runs for each).
  const named: RouteShorthandOptions = requestIdHeader
    ? {
        onSend: async (request, reply, payload) => {
          reply.header(requestIdHeader, request.id);
          return payload;
        },
      }
    : {};

  app.post(
    url,
    {
      bodyLimit,
      schema: openapi,
      ...DOCUMENTS_ONLY,
      // Keys in the caller's order (answers by question id, a choice's probabilities by option).
      serializerCompiler: () => (data) => jsonInOrder(data),
      errorHandler,
      ...named,
    },
    async (request, reply) => {
      if (request.body === undefined) {
        // No body and no Content-Type: fastify ran no parser. The same answer as an empty JSON body.
        const empty = new ApiError('invalid_question', 'request body: empty; send a JSON object with Content-Type: application/json');
        return sendRejection(request, reply, dialect.error(empty, { requestId: request.id, unreadableBody: true }), empty.code);
      }
      const context = { limits: service.validationLimits, requestId: request.id };
      const parsed = request.body instanceof LargeBody ? await bodies.parse(dialect, request.body.bytes, context) : dialect.parse(request.body, context);
      if (!parsed.ok) return sendRejection(request, reply, parsed.error, parsed.code);
      const signal = abandonedWith(reply);
      try {
        // Each API key its own cache scope: no key learns another's state from cached_tokens or timing.
        const cacheScope = ownerOf(request);
        return dialect.respond(parsed.call, await service.decideNormalized(parsed.call.request, { requestId: request.id, signal, cacheScope }));
      } catch (err) {
        // Nobody is left to answer (the rest of its engine work was dropped): logged and counted
        // as abandoned by the server's hooks.
        if (signal.aborted) return reply;
        return sendRejection(request, reply, dialect.error(err, { requestId: request.id }), toApiError(err).code, err);
      }
    },
  );

  if (!stray) return; // another method or a deeper path: the API's own 404 (errors.ts)
  const strays: Array<[404 | 405, HTTPMethods[], string]> = [
    [405, OTHER_METHODS, url],
    [404, ['POST', ...OTHER_METHODS], `${url}/*`],
  ];
  for (const [status, methods, at] of strays) {
    const answer = (request: FastifyRequest, reply: FastifyReply) => {
      if (requestIdHeader) reply.header(requestIdHeader, request.id); // first, as the vendor's router sends it
      return sendRejection(request, reply, stray.answer(status, request.method, requestPath(request.url), request.id), errorCodeOfStatus(status));
    };
    app.route({
      method: methods,
      url: at,
      schema: { hide: true },
      ...named,
      // The handler answers OPTIONS too, before authentication (preflight.ts).
      handler: async (request, reply) => answer(request, reply),
      ...(stray.beforeAuth
        ? // A route-level onRequest hook answers after the shared hooks, which skip public routes.
          { config: { public: true }, onRequest: async (request, reply) => answer(request, reply) }
        : { errorHandler }),
    });
  }
}

/** Registers every dialect of the registry; `app` is the API's /v1 scope (a dialect's path starts with /v1). */
export const dialectRoutes: FastifyPluginAsync<DialectRouteOptions> = async (app, options) => {
  // In this scope only: the other routes' JSON bodies (batches, files) are small and read at once.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseSmallJsonBody);
  for (const dialect of DIALECTS) registerDialect(app, dialect, options);
};
