// The one error path: every engine code becomes one API error, and nothing internal reaches a body.
import { describe, expect, it } from 'vitest';

import { ApiError, ERROR_STATUS, errorBody, toApiError } from '../../src/api/errors.js';
import { EngineError, type EngineErrorCode } from '../../src/errors/engine-error.js';

const CASES: Array<[EngineErrorCode, string, boolean]> = [
  // [engine code, API code, does the engine's message reach the client]
  ['ERR_INPUT', 'invalid_question', true],
  ['ERR_STATE_TOO_LONG', 'state_too_long', true],
  ['ERR_QUEUE_FULL', 'rate_limited', true],
  ['ERR_MODEL_NOT_FOUND', 'not_found', true],
  ['ERR_MODEL_LOAD', 'server_error', false],
  ['ERR_MODEL_IMPORT', 'server_error', false],
  ['ERR_ENGINE_CLOSED', 'server_error', false],
  ['ERR_PROVIDER_UNAVAILABLE', 'server_error', false],
  ['ERR_ORT_LOAD', 'server_error', false],
  ['ERR_OUT_OF_MEMORY', 'server_error', false],
  ['ERR_RUNTIME', 'server_error', false],
];

describe('toApiError', () => {
  it.each(CASES)('%s -> %s', (engineCode, apiCode, exposed) => {
    const secret = `/srv/models/x/onnx/model.onnx: detail for ${engineCode}`;
    const cause = new EngineError(engineCode, secret);
    const api = toApiError(cause);
    expect(api).toBeInstanceOf(ApiError);
    expect(api.code).toBe(apiCode);
    expect(api.status).toBe(ERROR_STATUS[api.code]);
    expect(api.cause).toBe(cause);
    if (exposed) expect(api.message).toBe(secret);
    else expect(api.message).not.toContain('/srv/models');
    expect(errorBody(cause, 'req-1')).toEqual({ code: apiCode, message: api.message, request_id: 'req-1' });
  });

  it('a full queue asks the client to retry after a whole number of seconds', () => {
    expect(toApiError(new EngineError('ERR_QUEUE_FULL', 'full')).retryAfterSeconds).toBe(1);
  });

  it('keeps an ApiError as it is', () => {
    const err = new ApiError('not_found', "batch 'b' not found");
    expect(toApiError(err)).toBe(err);
  });

  it('hides anything else behind server_error, keeping it as the cause', () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'x')");
    const api = toApiError(bug);
    expect(api.code).toBe('server_error');
    expect(api.message).not.toContain('undefined');
    expect(api.cause).toBe(bug);
    expect(errorBody('a thrown string', 'r').code).toBe('server_error');
  });
});
