/**
 * The contract every wire dialect implements: ours (`/v1/decide`), System One (`/v1/systemone`) and
 * OpenAI's decisions (`/v1/decisions`). A dialect is a thin, pure mapping onto ONE domain request
 * (`NormalizedDecideRequest`) that the service scores the same way whichever door it came through,
 * and from the ONE domain result (`DecisionResult`) back to its own body, so the same question gets
 * the same answer everywhere. No I/O here: the HTTP routes (src/server/routes/dialect-routes.ts)
 * and the batch lines (src/batches/openai/lines.ts) both take the dialect from the registry
 * (dialects.ts) by its path.
 *
 * Flow, the same for a synchronous request and a batch line:
 *   const parsed = dialect.parse(body, { limits, requestId });   // never throws for bad input
 *   if (!parsed.ok) -> send parsed.error (status, body, headers)
 *   const result = await service.decideNormalized(parsed.call.request);   // may throw ApiError
 *   -> 200 dialect.respond(parsed.call, result)
 *   catch (err) -> send dialect.error(err, { requestId })
 */
import type { DecisionResult, NormalizedDecideRequest } from '../domain/decision.js';
import type { ValidationLimits } from './validate.js';
import { DEFAULT_RETRY_AFTER_SECONDS, type ErrorCode } from './errors.js';

/** An error as one dialect sends it: HTTP status, JSON body, extra response headers. */
export interface WireError {
  status: number;
  body: unknown;
  /** Lower-case header names, e.g. `retry-after` and `retry-after-ms` on a 429. */
  headers: Record<string, string>;
}

/**
 * A parsed dialect request: the domain request the service scores, plus what the dialect needs to
 * render the answer in its own shape (option values, names, legends, question order).
 */
export interface DialectCall {
  request: NormalizedDecideRequest;
}

/** A body refused: the answer in the dialect's shape, and our code for it (the same on every door: logs, metrics). */
export type DialectParse<Call extends DialectCall> = { ok: true; call: Call } | { ok: false; error: WireError; code: ErrorCode };

/** What the caller knows about the request, for a dialect whose bodies name it. */
export interface RequestContext {
  /**
   * The request's id (ours writes it as `request_id` in every error body). Read only when an
   * error body is built: a batch line passes a getter that makes the id on first use.
   */
  readonly requestId?: string;
}

/** What parse() is given beside the body. */
export interface ParseContext extends RequestContext {
  /** Our limits where the dialect has none of its own; default DEFAULT_VALIDATION_LIMITS (validate.ts). */
  limits?: Partial<ValidationLimits>;
}

/**
 * Why authentication failed, for dialects that split it by status (System One: a missing key or a
 * scheme other than Bearer is 403, a key that does not verify is 401). Ours and OpenAI's say 401.
 */
export type AuthFailure = 'missing' | 'invalid';

/** What the caller of Dialect.error() knows beyond the error itself. */
export interface ErrorContext extends RequestContext {
  /** For invalid_key: a missing key or non-Bearer scheme ('missing') or a key that does not verify ('invalid'). */
  auth?: AuthFailure;
  /** The body could not be read as JSON at all (System One answers that with a 422 `json_invalid`). */
  unreadableBody?: boolean;
}

/**
 * How the HTTP server serves a dialect beside its parse/respond/error: the OpenAPI operation of
 * `POST path` and what the vendor's server answers around it. Data only; the one route function
 * (src/server/routes/dialect-routes.ts) registers every dialect from it.
 */
export interface DialectRoute {
  /** The OpenAPI operation of `POST path`; documentation only (parse() is the one validator). */
  openapi: {
    summary: string;
    description?: string;
    operationId: string;
    tags: string[];
    body: unknown;
    response: Record<number, unknown>;
  };
  /** A header that carries the request's id on every response of the path, errors included. */
  requestIdHeader?: string;
  /**
   * The answer to another method on the path (405) or to a path below it (404). Absent: the API's
   * own 404 for an unknown route. `beforeAuth`: answered before authentication and before the body
   * is read, as the vendor's router does; otherwise after them, their failures in this dialect's shape.
   */
  stray?: {
    beforeAuth: boolean;
    /** `path`: the request's path without its query string; `requestId` for a body that carries it. */
    answer(status: 404 | 405, method: string, path: string, requestId: string): WireError;
  };
}

export interface Dialect<Call extends DialectCall = DialectCall, Body = unknown> {
  /** The synchronous endpoint, e.g. '/v1/systemone' (also a batch line's `url`). */
  readonly path: string;
  /** Validates a parsed JSON body; never throws for bad input. */
  parse(body: unknown, context?: ParseContext): DialectParse<Call>;
  /** The 200 body for a scored request. */
  respond(call: Call, result: DecisionResult): Body;
  /** Any thrown value (ApiError, EngineError, anything) as this dialect's error; 5xx text is hidden. */
  error(err: unknown, context?: ErrorContext): WireError;
  /** How the HTTP server serves it. */
  readonly route: DialectRoute;
}

/** Rounds to 6 decimals (the precision of every probability on the wire). */
export function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

/** Σ i·p_i over option positions 0..n-1: the expected level of a score question. */
export function expectedLevel(probabilities: readonly number[]): number {
  let s = 0;
  probabilities.forEach((p, i) => (s += i * p));
  return round6(s);
}

/** Headers of a 429 or 503: `retry-after` (integer seconds) and `retry-after-ms`, which both SDKs honour. */
export function retryHeaders(retryAfterSeconds = DEFAULT_RETRY_AFTER_SECONDS): Record<string, string> {
  return { 'retry-after': String(retryAfterSeconds), 'retry-after-ms': String(retryAfterSeconds * 1000) };
}
