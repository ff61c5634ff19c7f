/**
 * Errors of the OpenAI-dialect routes (/v1/files*, JSON-created batches) in OpenAI's shape
 * `{"error": {message, type, param, code}}`: a thrown OpenAiWireError carries its exact status and
 * body; anything else (our ApiError, fastify's, the shared hooks') goes through the decisions
 * dialect's mapping (src/api/openai/errors.ts), except a 404 of ours, which here is about a file
 * or a batch rather than a model, and state_too_long, which here is a file over the limits (413).
 */
import type { WireError } from '../../api/dialect.js';
import { toApiError } from '../../api/errors.js';
import { openAiError, openAiErrorWire } from '../../api/openai/errors.js';

export class OpenAiWireError extends Error {
  constructor(readonly wire: WireError) {
    super((wire.body as { error?: { message?: string } }).error?.message ?? `status ${wire.status}`);
  }
}

export function oaError(status: number, message: string, param: string | null = null, code: string | null = null): OpenAiWireError {
  return new OpenAiWireError(openAiErrorWire(status, message, status >= 500 ? 'server_error' : 'invalid_request_error', param, code));
}

/** Any thrown value as OpenAI's error; `notFoundParam` names what a plain 404 was about. */
export function toOpenAiWire(err: unknown, notFoundParam: string | null = null): WireError {
  if (err instanceof OpenAiWireError) return err.wire;
  const api = toApiError(err);
  if (api.code === 'not_found') return oaError(404, api.message, notFoundParam).wire;
  // Here only an upload or a body over its limit (OpenAI's decisions map it to a context 400).
  if (api.code === 'state_too_long') return oaError(413, api.message, 'file', 'file_too_large').wire;
  return openAiError(api);
}
