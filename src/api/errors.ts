// The error codes of the /v1 API and the one error class every layer throws for them.
// Statuses follow the spec; not_found (404) is fixed by shared/design/api-decisions.md.

/** Every `code` an error body can carry. */
export const ERROR_CODES = [
  'invalid_question',
  'invalid_key',
  'state_too_long',
  'rate_limited',
  'not_found',
  'server_error',
] as const;

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

export interface ApiErrorOptions {
  /** Only for `rate_limited`: seconds for the `Retry-After` header (rounded up, at least 1). */
  retryAfterSeconds?: number;
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

  constructor(code: ErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    if (options.retryAfterSeconds !== undefined) {
      const s = options.retryAfterSeconds;
      // Retry-After is an integer number of seconds, and 0 would invite a hot retry loop.
      this.retryAfterSeconds = Number.isFinite(s) && s > 1 ? Math.ceil(s) : 1;
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

const HIDDEN_MESSAGE = 'Internal server error; retry with backoff.';

/**
 * The error body for any thrown value. Anything that is not an ApiError becomes `server_error`
 * with a fixed message: internal messages and stacks never reach the client.
 */
export function errorBody(err: unknown, requestId: string): ErrorBody {
  if (isApiError(err)) return { code: err.code, message: err.message, request_id: requestId };
  return { code: 'server_error', message: HIDDEN_MESSAGE, request_id: requestId };
}
