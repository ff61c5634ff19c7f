/**
 * The HTTP end of the one error path. Whatever fails (a route, a hook, fastify's own body parsing,
 * an unknown path, a malformed URL), the client gets an error in the dialect of the route: on the
 * routes of a foreign dialect its own shape (routes/dialect-routes.ts), everywhere else ours,
 * `{code, message, request_id}` with the status of that code (decideError in src/api/decide/).
 * Fastify's own errors are translated here; everything else goes through toApiError() in
 * src/api/errors.ts, which hides 5xx details; the log line has them and the request id.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

import { decideError } from '../api/decide/index.js';
import type { WireError } from '../api/dialect.js';
import { DIALECTS } from '../api/dialects.js';
import { ApiError, errorCodeOfStatus, isApiError, toApiError } from '../api/errors.js';
import { toOpenAiWire } from '../batches/openai/errors.js';
import { countUnrouted } from './metrics.js';
import { REQUEST_ID_HEADER } from './request-id.js';
import { logErrorAnswer } from './request-log.js';
import { requestPath } from './request-target.js';

/** Fastify's own 4xx errors and their API error. Messages are ours: fastify's name no fields. */
function fromFastifyError(err: FastifyError, request: FastifyRequest): ApiError | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': {
      const limit = request.routeOptions?.bodyLimit;
      return new ApiError(
        'state_too_long',
        `request body is larger than ${limit ? `${limit} bytes` : 'the limit'}: trim the state or split it across requests`,
      );
    }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': {
      const type = String(request.headers['content-type'] ?? '').slice(0, 100);
      // What the route reads: its OpenAPI `consumes`, or the types of its body's `content` (POST
      // /v1/batches: the form and OpenAI's JSON); a route that says neither reads JSON.
      const schema = request.routeOptions?.schema as { consumes?: string[]; body?: { content?: Record<string, unknown> } } | undefined;
      const types = schema?.consumes ?? Object.keys(schema?.body?.content ?? {});
      const wanted = (types.length > 0 ? types : ['application/json']).join(' or ');
      return new ApiError(
        'invalid_question',
        type
          ? `request body: Content-Type '${type}' is not supported; send ${wanted}`
          : `request body: Content-Type header missing; send ${wanted}`,
      );
    }
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_question', 'request body: empty; send a JSON object');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_question', 'request body: its size does not match Content-Length');
    case 'FST_ERR_VALIDATION':
      return new ApiError('invalid_question', err.message);
    default:
      return undefined;
  }
}

/** The ApiError the client sees for any thrown value: fastify's errors first, then toApiError(). */
export function httpError(err: unknown, request: FastifyRequest): ApiError {
  if (isApiError(err)) return err;
  const fe = err as FastifyError;
  const mapped = typeof fe?.code === 'string' ? fromFastifyError(fe, request) : undefined;
  if (mapped) return mapped;
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) {
    // Other client errors from fastify or its plugins (e.g. multipart limits): keep their status class.
    const message = typeof fe.message === 'string' && fe.message ? fe.message.slice(0, 500) : 'bad request';
    return new ApiError(errorCodeOfStatus(status), message);
  }
  return toApiError(err);
}

/** Sends a dialect's error (status, headers, JSON body). */
export function sendWire(reply: FastifyReply, wire: WireError): FastifyReply {
  for (const [name, value] of Object.entries(wire.headers)) reply.header(name, value);
  return reply.code(wire.status).type('application/json; charset=utf-8').send(wire.body);
}

/**
 * Sends the error response for `err`, logged with our code: in our shape, or the shape `wireOf`
 * gives (the shared batch routes' both shapes). Also used where fastify bypasses the error handler.
 */
export function sendError(
  err: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  wireOf: (api: ApiError, requestId: string) => WireError = (api, requestId) => decideError(api, { requestId }),
): FastifyReply {
  const mapped = httpError(err, request);
  logErrorAnswer(request, mapped.status, mapped.code, err);
  // Also set by the request-id hook, which fastify's framework errors (a malformed URL) may precede.
  reply.header(REQUEST_ID_HEADER, request.id);
  return sendWire(reply, wireOf(mapped, request.id));
}

/**
 * The request's path as an error message quotes it: without the query string (clients put keys
 * there, and an error body ends up in client logs and error trackers), at most 200 characters.
 */
export function pathForMessage(request: FastifyRequest): string {
  const path = requestPath(request.url);
  return path.length > 200 ? `${path.slice(0, 200)}...` : path;
}

/** The API's 404: an unknown path, in our shape. */
function sendNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(new ApiError('not_found', `no route ${request.method} ${pathForMessage(request)}`), request, reply);
}

/** Installs the error handler and the 404 handler of the whole server (createServer). */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => sendError(err, request, reply));
  app.setNotFoundHandler(sendNotFound);
}

/**
 * The same for the API in a scope of a host's fastify app (decisionApp): the error handler covers
 * the scope's routes only, and unknown paths get the API's 404 only where they are the API's:
 * every path under the scope's prefix (its own 404 handler), or, mounted at the host's root,
 * whose 404 handler stays the host's, the paths under /v1 (a catch-all route, which the host's
 * own /v1 routes, being more specific, still win over).
 */
export function registerScopedErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => sendError(err, request, reply));
  if (app.prefix !== '') app.setNotFoundHandler(sendNotFound);
  else app.all('/v1/*', { schema: { hide: true } }, sendNotFound);
}

/**
 * An error answered before any route was chosen (a malformed URL, malformed HTTP), in the shape of
 * the door its path belongs to: OpenAI's under /v1/files, a dialect's under its path (with the
 * dialect's request-id header, System One's x-typesafe-request-id), ours elsewhere. The one place
 * that maps a path to its door for such answers; the routes themselves carry their own handlers.
 */
export function doorError(path: string, error: ApiError, requestId: string): WireError {
  if (/^\/v1\/files(?:\/|$)/.test(path)) return toOpenAiWire(error);
  const dialect = DIALECTS.find((d) => path === d.path || path.startsWith(`${d.path}/`));
  if (!dialect) return decideError(error, { requestId });
  const wire = dialect.error(error, { requestId });
  const header = dialect.route.requestIdHeader;
  return header ? { ...wire, headers: { ...wire.headers, [header]: requestId } } : wire;
}

/**
 * For fastify's `frameworkErrors` option (malformed URLs and the like, before routing): no route's
 * error handler has been chosen yet, so the path picks the shape (doorError).
 */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const pathOnly = requestPath(request.url);
  const error =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new ApiError('not_found', `no route ${request.method} ${pathForMessage(request)}: a path segment longer than any id`)
      : new ApiError('invalid_question', err.code === 'FST_ERR_BAD_URL' ? 'malformed URL' : 'bad request');
  logErrorAnswer(request, error.status, error.code, err);
  countUnrouted(request, reply);
  // Also set by the request-id hook, which these errors precede.
  reply.header(REQUEST_ID_HEADER, request.id);
  void sendWire(reply, doorError(pathOnly, error, request.id));
}
