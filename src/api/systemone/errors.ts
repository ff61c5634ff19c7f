// System One's error bodies: `{"detail": ...}` in the four shapes the vendor uses (a string for a
// broken limit, {error_type, message}, {error_type} alone, a Pydantic list for a 422), and the one
// mapping from our ApiError to them. The live vendor API (docs/compatibility.md, errors table):
// missing key or a scheme other than Bearer 403, bad key 401, shape errors 422, semantic errors
// (unknown type, unknown model, limits, state too long) 400.
import { toApiError } from '../errors.js';
import { retryHeaders, type ErrorContext, type WireError } from '../dialect.js';
import type { SystemOneProblem } from './schemas.js';


function wire(status: number, detail: unknown, headers: Record<string, string> = {}): WireError {
  return { status, body: { detail }, headers };
}

/** 400 `{"detail": {"error_type": "api_usage_error", "message": ...}}`: a request that breaks a rule. */
export function usageError(message: string): WireError {
  return wire(400, { error_type: 'api_usage_error', message });
}

/** 400 `{"detail": "Too many ..."}`: a limit, as a bare string (the vendor's shape for limits). */
export function limitError(message: string): WireError {
  return wire(400, message);
}

/** 422 with Pydantic's list of problems, each `loc` starting at "body". */
export function unprocessable(problems: SystemOneProblem[]): WireError {
  return wire(422, problems);
}

/**
 * Any thrown value as System One's error. `context.auth`: 403 for a missing key or a scheme other
 * than Bearer, 401 for a key that does not verify; `context.unreadableBody`: 422 json_invalid. Messages are ours (they name the field or the rule);
 * server errors keep toApiError()'s hidden text.
 * @example
 * const { status, body, headers } = systemOneError(err, { auth: 'missing' }); // 403 for invalid_key
 */
export function systemOneError(err: unknown, context: ErrorContext = {}): WireError {
  const api = toApiError(err);
  switch (api.code) {
    case 'invalid_key':
      return wire(context.auth === 'invalid' ? 401 : 403, { error_type: 'authentication_error', message: api.message });
    case 'invalid_question':
      if (context.unreadableBody) return unprocessable([{ type: 'json_invalid', loc: ['body'], msg: api.message }]);
      // 415 (a compressed body) keeps its status; everything else about the request is a 400.
      return wire(api.status === 415 ? 415 : 400, { error_type: 'api_usage_error', message: api.message });
    case 'not_found':
      return usageError(`Unknown model: ${api.message}`);
    case 'state_too_long':
      return wire(400, { error_type: 'max_tokens_exceeded', message: api.message });
    case 'rate_limited':
      return wire(429, { error_type: 'rate_limit_error', message: api.message }, retryHeaders(api.retryAfterSeconds));
    case 'server_error':
    default:
      return wire(api.status >= 500 ? api.status : 500, { error_type: 'internal_server_error', message: api.message });
  }
}
