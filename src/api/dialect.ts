/**
 * The contract every foreign wire dialect implements (`/v1/systemone`, OpenAI's `/v1/decisions`).
 * A dialect is a thin, pure mapping onto ONE domain request (`NormalizedDecideRequest`) that the
 * service scores exactly as it scores `/v1/decide`, so the same question through any door gets the
 * same answer. No I/O here: the HTTP routes (src/server/routes/) and the batch runner both use it.
 *
 * Flow, the same for a synchronous request and a batch line:
 *   const parsed = dialect.parse(body);                 // never throws
 *   if (!parsed.ok) -> send parsed.error (status, body, headers)
 *   const response = await service.decideNormalized(parsed.call.request);   // may throw ApiError
 *   -> 200 dialect.respond(parsed.call, response)
 *   catch (err) -> send dialect.error(err)
 */
import type { NormalizedDecideRequest } from '../domain/decision.js';
import type { DecideResponse } from './schemas.js';
import type { ValidationLimits } from './validate.js';

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

export type DialectParse<Call extends DialectCall> = { ok: true; call: Call } | { ok: false; error: WireError };

/**
 * Why authentication failed, for dialects that split it by status (System One: a missing key or a
 * scheme other than Bearer is 403, a key that does not verify is 401). Ours and OpenAI's say 401.
 */
export type AuthFailure = 'missing' | 'invalid';

/** What the caller of Dialect.error() knows beyond the error itself. */
export interface ErrorContext {
  /** For invalid_key: a missing key or non-Bearer scheme ('missing') or a key that does not verify ('invalid'). */
  auth?: AuthFailure;
  /** The body could not be read as JSON at all (System One answers that with a 422 `json_invalid`). */
  unreadableBody?: boolean;
}

export interface Dialect<Call extends DialectCall = DialectCall, Body = unknown> {
  /** The synchronous endpoint, e.g. '/v1/systemone' (also a batch line's `url`). */
  readonly path: string;
  /** Validates a parsed JSON body; never throws. Limits default to ours (src/api/validate.ts). */
  parse(body: unknown, limits?: Partial<ValidationLimits>): DialectParse<Call>;
  /** The 200 body for a scored request. */
  respond(call: Call, response: DecideResponse): Body;
  /** Any thrown value (ApiError, EngineError, anything) as this dialect's error; 5xx text is hidden. */
  error(err: unknown, context?: ErrorContext): WireError;
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

/** Headers of a 429: `retry-after` (integer seconds) and `retry-after-ms`, which both SDKs honour. */
export function retryHeaders(retryAfterSeconds: number | undefined): Record<string, string> {
  const seconds = retryAfterSeconds ?? 1;
  return { 'retry-after': String(seconds), 'retry-after-ms': String(seconds * 1000) };
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** A JSON value's type in words, for messages. */
export function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}
