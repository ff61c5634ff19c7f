/**
 * Our own dialect (`POST /v1/decide`, docs/api.md) as one Dialect object, beside System One's and
 * OpenAI's: the body is validated by validate.ts (the one source of the rules and of the
 * `invalid_question` messages), the 200 body is the domain result with snake_case usage, and every
 * error is `{code, message, request_id}` with the status of its code (errors.ts). The server's
 * other routes (models, batches, an unknown path) answer their errors with decideError() too.
 * @example
 * const parsed = decideDialect.parse(body, { requestId: 'req_1' });
 * if (parsed.ok) body = decideDialect.respond(parsed.call, await service.decideNormalized(parsed.call.request));
 */
import type { DecisionResult } from '../../domain/decision.js';
import type { Dialect, DialectCall, DialectParse, ErrorContext, ParseContext, WireError } from '../dialect.js';
import { ApiError, errorBody, toApiError } from '../errors.js';
import { ref, type DecideResponse } from '../schemas.js';
import { validateDecideRequest } from '../validate.js';

export const DECIDE_PATH = '/v1/decide';

/**
 * The 200 body of /v1/decide for a domain result: the same answers object (its key order kept),
 * usage in snake_case.
 */
export function decideResponse(result: DecisionResult): DecideResponse {
  return {
    id: result.id,
    model: result.model,
    answers: result.answers,
    usage: { input_tokens: result.inputTokens, cached_tokens: result.cachedTokens },
  };
}

/**
 * Any thrown value as our error: `{code, message, request_id}` (5xx text hidden by toApiError),
 * `www-authenticate: Bearer` on invalid_key, `retry-after` (integer seconds) on rate_limited and
 * on a 503 that says when to come back.
 * @example
 * const { status, body } = decideError(new ApiError('not_found', 'no model x'), { requestId: 'req_1' }); // 404
 */
export function decideError(err: unknown, context: ErrorContext = {}): WireError {
  const api = toApiError(err);
  const headers: Record<string, string> = {};
  if (api.code === 'invalid_key') headers['www-authenticate'] = 'Bearer';
  if (api.retryAfterSeconds !== undefined) headers['retry-after'] = String(api.retryAfterSeconds);
  return { status: api.status, body: errorBody(api, context.requestId ?? ''), headers };
}

/** Validates a /v1/decide body into the domain request; never throws (any failure is its error). */
export function parseDecide(body: unknown, context: ParseContext = {}): DialectParse<DialectCall> {
  try {
    return { ok: true, call: { request: validateDecideRequest(body, context.limits) } };
  } catch (err) {
    return { ok: false, error: decideError(err, context), code: toApiError(err).code };
  }
}

const errors = (codes: string) => ref('Error', codes);

/**
 * Another method on /v1/decide (405 with `Allow: POST`) or a path below it (our 404), after
 * authentication, in our shape. The spec's codes have none for a method: a request the path does
 * not take is `invalid_question`, with HTTP's own status.
 */
function strayAnswer(status: 404 | 405, method: string, path: string, requestId: string): WireError {
  const shown = path.length > 200 ? `${path.slice(0, 200)}...` : path;
  if (status === 404) return decideError(new ApiError('not_found', `no route ${method} ${shown}`), { requestId });
  const wire = decideError(new ApiError('invalid_question', `${method} ${shown}: ${DECIDE_PATH} takes POST only`, { status: 405 }), { requestId });
  return { ...wire, headers: { ...wire.headers, allow: 'POST' } };
}

export const decideDialect: Dialect<DialectCall, DecideResponse> = Object.freeze({
  path: DECIDE_PATH,
  parse: parseDecide,
  respond: (_call: DialectCall, result: DecisionResult) => decideResponse(result),
  error: decideError,
  route: {
    openapi: {
      summary: 'Decide: calibrated probabilities for typed questions about one state',
      operationId: 'decide',
      tags: ['decide'],
      body: ref('DecideRequest'),
      response: {
        200: ref('DecideResponse'),
        400: errors('invalid_question: malformed JSON, a wrong field type, or a question that breaks a rule'),
        401: errors('invalid_key'),
        404: errors('not_found: the model is not installed (the message lists the installed ids)'),
        413: errors('state_too_long: the state exceeds the token limit, or the body the byte limit'),
        415: errors('invalid_question: a compressed body (Content-Encoding other than identity); send it uncompressed'),
        429: errors('rate_limited: see the Retry-After header (integer seconds)'),
        500: errors('server_error: retry with backoff'),
      },
    },
    stray: { beforeAuth: false, answer: strayAnswer },
  },
});
