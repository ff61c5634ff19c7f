// OpenAI's error body `{"error": {"message", "type", "param", "code"}}` and the one mapping from our
// ApiError to it, with the statuses the `openai` SDKs turn into typed errors: 400 BadRequestError,
// 401 AuthenticationError, 404 NotFoundError, 429 RateLimitError (retried after `retry-after-ms`),
// 5xx InternalServerError.
import { toApiError, type ApiError } from '../errors.js';
import { retryHeaders, type ErrorContext, type WireError } from '../dialect.js';
import type { OpenAiErrorBody } from './schemas.js';

/** OpenAI's error body with its status: the one place its shape is written. */
export function openAiErrorWire(status: number, message: string, type: string, param: string | null, code: string | null, headers: Record<string, string> = {}): WireError {
  const body: OpenAiErrorBody = { error: { message, type, param, code } };
  return { status, body, headers };
}

/** 400 invalid_request_error naming the offending field in `param`. */
export function invalidRequest(message: string, param: string | null): WireError {
  return openAiErrorWire(400, message, 'invalid_request_error', param, null);
}

/**
 * A domain field (ApiError.field) as OpenAI's request names it: question ids are the positions
 * (`questions["2"]` is `questions[2]`), the state is `input`.
 */
function openAiField(field: string): string {
  const question = /^questions\["(\d+)"\]/.exec(field);
  if (question) return `questions[${question[1]}]${field.slice(question[0].length)}`;
  return field === 'state' ? 'input' : field;
}

/**
 * 400 for a request that breaks a rule: `param` and the message's leading field in OpenAI's names.
 * For a body that does not read as JSON (a key given twice, a lone surrogate) the field is already
 * the place in the body as the caller wrote it (`questions[0].choices[1].value`): OpenAI's name.
 */
function invalidQuestion(api: ApiError, unreadableBody: boolean): WireError {
  const status = api.status === 415 ? 415 : 400;
  if (api.field === undefined) return openAiErrorWire(status, api.message, 'invalid_request_error', null, null);
  const param = unreadableBody ? api.field : openAiField(api.field);
  const message = api.message.startsWith(api.field) ? `${param}${api.message.slice(api.field.length)}` : api.message;
  return openAiErrorWire(status, message, 'invalid_request_error', param, null);
}

/**
 * Any thrown value as OpenAI's error (OpenAI answers every authentication failure with 401; the
 * context says only whether the body was unreadable). Server errors keep toApiError()'s hidden text.
 * @example
 * const { status, body } = openAiError(new ApiError('invalid_key', 'the API key is not valid')); // 401
 */
export function openAiError(err: unknown, context: ErrorContext = {}): WireError {
  const api = toApiError(err);
  switch (api.code) {
    case 'invalid_key':
      return openAiErrorWire(401, api.message, 'invalid_request_error', null, 'invalid_api_key', { 'www-authenticate': 'Bearer' });
    case 'invalid_question':
      return invalidQuestion(api, context.unreadableBody === true);
    case 'not_found':
      return openAiErrorWire(404, api.message, 'invalid_request_error', 'model', 'model_not_found');
    case 'state_too_long':
      // The engine says "state"; here the state is the request's `input`.
      return openAiErrorWire(400, api.message.replace(/\bstate\b/g, 'input'), 'invalid_request_error', 'input', 'context_length_exceeded');
    case 'rate_limited':
      return openAiErrorWire(429, api.message, 'rate_limit_error', null, 'rate_limit_exceeded', retryHeaders(api.retryAfterSeconds));
    case 'server_error':
    default:
      return openAiErrorWire(api.status >= 500 ? api.status : 500, api.message, 'server_error', null, null, api.retryAfterSeconds === undefined ? {} : retryHeaders(api.retryAfterSeconds));
  }
}
