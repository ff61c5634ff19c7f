/**
 * OpenAI's decisions dialect (`POST /v1/decisions`, `client.decisions.create` in the official
 * SDKs) as one Dialect object: parse a body into the domain request, render the domain result,
 * render any error in OpenAI's shape, and how the HTTP server serves it. Pure; the routes
 * (src/server/routes/dialect-routes.ts) and the batch lines share it, so a batch line answers with
 * exactly the synchronous body.
 * @example
 * const parsed = openAiDecisions.parse(body);
 * if (!parsed.ok) return send(parsed.error);
 * send200(openAiDecisions.respond(parsed.call, await service.decideNormalized(parsed.call.request)));
 */
import type { Dialect, WireError } from '../dialect.js';
import { openAiError, openAiErrorWire } from './errors.js';
import { respondDecisions } from './respond.js';
import { DecisionCreateSchema, DecisionSchema, OpenAiErrorSchema, type DecisionBody } from './schemas.js';
import { parseDecisions, type DecisionsCall } from './validate.js';

export const DECISIONS_PATH = '/v1/decisions';

const error = (description: string) => ({ ...OpenAiErrorSchema, description });

/** Another method on the path (405) or a path below it (404), as OpenAI names an unknown route. */
function strayAnswer(status: 404 | 405, method: string, path: string): WireError {
  const shown = path.length > 200 ? `${path.slice(0, 200)}...` : path;
  const message =
    status === 405
      ? `Invalid URL (${method} ${shown}): ${DECISIONS_PATH} takes POST only`
      : `Invalid URL (${method} ${shown}): no route below ${DECISIONS_PATH}; send POST ${DECISIONS_PATH}`;
  return openAiErrorWire(status, message, 'invalid_request_error', null, null, status === 405 ? { allow: 'POST' } : {});
}

export const openAiDecisions: Dialect<DecisionsCall, DecisionBody> = Object.freeze({
  path: DECISIONS_PATH,
  parse: parseDecisions,
  respond: respondDecisions,
  error: openAiError,
  route: {
    openapi: {
      summary: 'OpenAI decisions: predicate, choice and score questions about one input',
      description: 'Drop-in for client.decisions.create; what differs from OpenAI is in docs/compatibility.md.',
      operationId: 'createDecision',
      tags: ['compatibility'],
      body: DecisionCreateSchema,
      response: {
        200: DecisionSchema,
        400: error('invalid_request_error: param names the field; context_length_exceeded for a state over the token limit'),
        401: error('invalid_api_key'),
        404: error('model_not_found'),
        415: error('invalid_request_error: a compressed body (Content-Encoding other than identity); send it uncompressed'),
        429: error('rate_limit_exceeded: see Retry-After (seconds) and retry-after-ms'),
        500: error('server_error: retry with backoff'),
      },
    },
    // After authentication, as every /v1 route (its failures, and a body that does not parse, in OpenAI's shape).
    stray: { beforeAuth: false, answer: strayAnswer },
  },
});

export { parseDecisions, type DecisionsCall, type DecisionsQuestion } from './validate.js';
export { respondDecisions } from './respond.js';
export { openAiError, invalidRequest } from './errors.js';
export * from './schemas.js';
