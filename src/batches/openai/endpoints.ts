/**
 * The endpoints an OpenAI-dialect batch can call, one small adapter each: parse a line's `body` as
 * that endpoint's request (or its 4xx, in its own error shape), render a scored answer as the body
 * the synchronous endpoint would have sent, render an error as that endpoint's status and body.
 *   /v1/decide      ours: validateDecideRequest(), DecideResponse as it is, {code, message, request_id}
 *   /v1/systemone   System One's dialect (src/api/systemone)
 *   /v1/decisions   OpenAI's decisions dialect (src/api/openai)
 * Pure: used by the batch runners (SQLite and Postgres alike) through openai/lines.ts.
 */
import type { WireError } from '../../api/dialect.js';
import { dialectFor } from '../../api/dialects.js';
import { errorBody, toApiError } from '../../api/errors.js';
import type { DecideResponse } from '../../api/schemas.js';
import { validateDecideRequest, type NormalizedDecideRequest, type ValidationLimits } from '../../api/validate.js';

export const DECIDE_PATH = '/v1/decide';

/** The endpoints a batch line may name, in the order the docs list them. */
export const BATCH_ENDPOINTS = ['/v1/decisions', '/v1/systemone', DECIDE_PATH] as const;

export type EndpointParse =
  | { ok: true; request: NormalizedDecideRequest; render(response: DecideResponse): unknown }
  | { ok: false; error: WireError };

export interface BatchEndpoint {
  readonly path: string;
  parse(body: unknown, limits?: Partial<ValidationLimits>): EndpointParse;
  /** Any thrown value as this endpoint's error; `requestId` goes where the body carries one. */
  error(err: unknown, requestId: string): WireError;
}

const decideEndpoint: BatchEndpoint = {
  path: DECIDE_PATH,
  parse(body, limits) {
    try {
      return { ok: true, request: validateDecideRequest(body, limits), render: (response) => response };
    } catch (err) {
      return { ok: false, error: this.error(err, '') };
    }
  },
  error(err, requestId) {
    const api = toApiError(err);
    return { status: api.status, body: errorBody(api, requestId), headers: {} };
  },
};

function dialectEndpoint(path: string): BatchEndpoint | undefined {
  const dialect = dialectFor(path);
  if (!dialect) return undefined;
  return {
    path,
    // The synchronous route parses with the dialect's own limits (none given): so does a batch line.
    parse(body) {
      const parsed = dialect.parse(body);
      if (!parsed.ok) return { ok: false, error: parsed.error };
      const call = parsed.call;
      return { ok: true, request: call.request, render: (response) => dialect.respond(call, response) };
    },
    error: (err) => dialect.error(err),
  };
}

/** The adapter for a batch's endpoint, or undefined when we serve no such endpoint in batches. */
export function batchEndpoint(path: string): BatchEndpoint | undefined {
  if (path === DECIDE_PATH) return decideEndpoint;
  return (BATCH_ENDPOINTS as readonly string[]).includes(path) ? dialectEndpoint(path) : undefined;
}
