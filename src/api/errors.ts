// The error codes of the /v1 API, the error class the API layers throw for them, and toApiError():
// the one mapping from any failure (an EngineError from the engine or the model layer, or anything
// else) to the API's error. Statuses follow the spec; not_found (404) is listed in docs/api.md.
import { isEngineError, type EngineErrorCode } from '../errors/engine-error.js';

/** Every `code` an error body can carry. */
export const ERROR_CODES = [
  'invalid_question',
  'invalid_key',
  'state_too_long',
  'rate_limited',
  'not_found',
  'server_error',
] as const;

/**
 * An API error's `code` (HTTP status in ERROR_STATUS), as the library's ApiError carries it.
 * @example
 * const retryable: ErrorCode[] = ['rate_limited', 'server_error'];
 * if (err instanceof ApiError && retryable.includes(err.code)) await retry();
 */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** HTTP status for each error code. */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = Object.freeze({
  invalid_question: 400,
  invalid_key: 401,
  not_found: 404,
  state_too_long: 413,
  rate_limited: 429,
  server_error: 500,
});

/** The code of a 4xx or 5xx status made without an ApiError (a door's own answer): the code with that status, else invalid_question. */
export function errorCodeOfStatus(status: number): ErrorCode {
  return ERROR_CODES.find((code) => ERROR_STATUS[code] === status) ?? 'invalid_question';
}

/** Every 429 says when to come back: this many seconds unless its maker knows better. */
export const DEFAULT_RETRY_AFTER_SECONDS = 1;

export interface ApiErrorOptions {
  /**
   * For `rate_limited` (default 1), and a `server_error` whose status is 503 (a part the service
   * needs is unavailable for a while): seconds for the `Retry-After` header (rounded up, at least 1).
   */
  retryAfterSeconds?: number;
  /**
   * A status more precise than the code's, where HTTP has one and the spec's code list does not:
   * 415 for a body with a Content-Encoding, 405 for a method the path does not take (code invalid_question).
   */
  status?: number;
  /**
   * The request field the error is about, as the domain request names it (`model`, `state`,
   * `questions["q1"]`), where the message starts with it: a dialect that names fields its own
   * way (OpenAI's `param`) reads it instead of parsing the message. For a body that does not read
   * as JSON (a key given twice), the place in the body as the caller wrote it (`questions[0].choices[1].value`).
   */
  field?: string;
  cause?: unknown;
}

/**
 * An error that maps to one API error response.
 *
 * @example
 * throw new ApiError('invalid_question', 'questions["q1"].type: must be one of noul, choice, score');
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryAfterSeconds?: number;
  readonly field?: string;

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = options.status ?? ERROR_STATUS[code];
    if (options.field !== undefined) this.field = options.field;
    if (options.retryAfterSeconds !== undefined) {
      const s = options.retryAfterSeconds;
      // Retry-After is an integer number of seconds, and 0 would invite a hot retry loop.
      this.retryAfterSeconds = Number.isFinite(s) && s > 1 ? Math.ceil(s) : 1;
    } else if (code === 'rate_limited') {
      this.retryAfterSeconds = DEFAULT_RETRY_AFTER_SECONDS;
    }
  }
}

export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}

/** The JSON body of every error response. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  request_id: string;
}

/**
 * What each engine code becomes on the wire. Codes about the caller's request keep the engine's
 * message (it names the field or the limit); the others get a fixed message, the details stay in
 * `cause` for the server log and the CLI.
 */
const FROM_ENGINE: Readonly<Record<EngineErrorCode, { code: ErrorCode; message?: string }>> = Object.freeze({
  ERR_INPUT: { code: 'invalid_question' },
  ERR_STATE_TOO_LONG: { code: 'state_too_long' },
  ERR_QUEUE_FULL: { code: 'rate_limited' },
  ERR_MODEL_NOT_FOUND: { code: 'not_found' },
  ERR_MODEL_LOAD: { code: 'server_error', message: 'the model could not be loaded' },
  ERR_MODEL_IMPORT: { code: 'server_error', message: 'the model could not be imported' },
  ERR_ENGINE_CLOSED: { code: 'server_error', message: 'the service is shutting down' },
  ERR_PROVIDER_UNAVAILABLE: { code: 'server_error', message: 'the execution provider is not available' },
  ERR_ORT_LOAD: { code: 'server_error', message: 'ONNX Runtime could not be loaded' },
  ERR_OUT_OF_MEMORY: { code: 'server_error', message: 'the engine ran out of memory' },
  ERR_RUNTIME: { code: 'server_error', message: 'the engine failed to score the request' },
});

/**
 * The API error for any thrown value: an ApiError as it is, an EngineError by its code, anything
 * else `server_error`. The original error is kept as `cause`.
 * @example
 * try { await runtime.prepare(request) } catch (err) { outcome = { ok: false, error: toApiError(err) } }
 */
export function toApiError(err: unknown): ApiError {
  if (isApiError(err)) return err;
  if (isEngineError(err)) {
    const wire = FROM_ENGINE[err.code] ?? FROM_ENGINE.ERR_RUNTIME;
    return new ApiError(wire.code, wire.message ?? err.message, {
      cause: err,
      ...(wire.message === undefined && err.field !== undefined ? { field: err.field } : {}),
    });
  }
  return new ApiError('server_error', HIDDEN_MESSAGE, { cause: err });
}

const HIDDEN_MESSAGE = 'Internal server error; retry with backoff.';

/**
 * The message of an error and of its causes, for logs and the CLI (never for an HTTP body). A cause
 * whose message an earlier one already ends with (a wrapper that quotes its cause) is not repeated.
 */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e !== undefined && parts.length < 5; e = (e as { cause?: unknown })?.cause) {
    const message = e instanceof Error ? e.message : String(e);
    if (!parts.some((part) => part.endsWith(message))) parts.push(message);
  }
  return parts.join(': ');
}

/**
 * The error body for any thrown value, through toApiError(): internal messages and stacks never
 * reach the client.
 */
export function errorBody(err: unknown, requestId: string): ErrorBody {
  const api = toApiError(err);
  return { code: api.code, message: api.message, request_id: requestId };
}
