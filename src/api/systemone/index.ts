/**
 * The System One dialect (`POST /v1/systemone`, TypeSafe's format as vLLM, Fireworks, Upstage and
 * LocalAI also serve it) as one Dialect object: parse a body into the domain request, render the
 * domain result, render any error, and how the HTTP server serves it. Pure; the routes
 * (src/server/routes/dialect-routes.ts) and the batch lines share it, so a batch line answers with
 * exactly the synchronous body.
 * @example
 * const parsed = systemOne.parse(body);
 * if (!parsed.ok) return send(parsed.error);
 * try { send200(systemOne.respond(parsed.call, await service.decideNormalized(parsed.call.request))) }
 * catch (err) { send(systemOne.error(err)) }
 */
import type { Dialect, WireError } from '../dialect.js';
import { systemOneError } from './errors.js';
import { respondSystemOne } from './respond.js';
import { SystemOneErrorSchema, SystemOneRequestSchema, SystemOneResponseSchema, type SystemOneResponse } from './schemas.js';
import { parseSystemOne, type SystemOneCall } from './validate.js';

export const SYSTEMONE_PATH = '/v1/systemone';

/** On every response of the path, errors included: the request's id, which TypeSafe's SDK requires. */
export const TYPESAFE_REQUEST_ID_HEADER = 'x-typesafe-request-id';

const error = (description: string) => ({ ...SystemOneErrorSchema, description });

/** What the vendor's router answers before authentication and before reading the body. */
function strayAnswer(status: 404 | 405): WireError {
  return status === 405
    ? { status, body: { detail: 'Method Not Allowed' }, headers: { allow: 'POST' } }
    : { status, body: { detail: 'Not Found' }, headers: {} };
}

export const systemOne: Dialect<SystemOneCall, SystemOneResponse> = Object.freeze({
  path: SYSTEMONE_PATH,
  parse: parseSystemOne,
  respond: respondSystemOne,
  error: systemOneError,
  route: {
    openapi: {
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
        415: error('A compressed body (Content-Encoding other than identity): send it uncompressed'),
        422: error('The body has the wrong shape (a list of problems with their loc)'),
        429: error('Rate limited or overloaded: see Retry-After (seconds) and retry-after-ms'),
        500: error('Server error: retry with backoff'),
      },
    },
    requestIdHeader: TYPESAFE_REQUEST_ID_HEADER,
    // So neither a missing key nor an unreadable body can turn them into a 403 or a 422.
    stray: { beforeAuth: true, answer: strayAnswer },
  },
});

export { parseSystemOne, type SystemOneCall } from './validate.js';
export { respondSystemOne, systemOneConfidence } from './respond.js';
export { systemOneError } from './errors.js';
export * from './schemas.js';
