import { describe, expect, it } from 'vitest';
import { Value } from '@sinclair/typebox/value';
import { ApiError, ERROR_CODES, errorBody } from '../../src/api/errors.js';
import { DecideRequestSchema, DecideResponseSchema, ErrorSchema } from '../../src/api/schemas.js';
import { validateDecideRequest } from '../../src/api/validate.js';

const request = {
  model: 'svc-alpha-2026-10',
  state: { ticket: 'charged twice' },
  questions: {
    refund: { type: 'noul', instructions: 'Refund asked?' },
    topic: { type: 'choice', instructions: 'Topic?', criteria: { billing: 'Money', other: '' } },
    urgency: { type: 'score', instructions: 'Urgency?', criteria: { '0': 'low', '2.5': 'high' } },
  },
};

describe('errors', () => {
  it('maps every code to its status', () => {
    const statuses = ERROR_CODES.map((c) => new ApiError(c, 'm').status);
    expect(statuses).toEqual([400, 401, 413, 429, 404, 500]);
  });

  it('rounds Retry-After up to whole seconds, at least 1', () => {
    expect(new ApiError('rate_limited', 'slow down', { retryAfterSeconds: 2.1 }).retryAfterSeconds).toBe(3);
    expect(new ApiError('rate_limited', 'slow down', { retryAfterSeconds: 0 }).retryAfterSeconds).toBe(1);
    expect(new ApiError('rate_limited', 'slow down').retryAfterSeconds).toBeUndefined();
  });

  it('builds error bodies and hides anything that is not an ApiError', () => {
    const id = 'dec_01JD0000000000000000000000';
    const body = errorBody(new ApiError('not_found', 'unknown model "x"'), id);
    expect(body).toEqual({ code: 'not_found', message: 'unknown model "x"', request_id: id });
    expect(Value.Check(ErrorSchema, body)).toBe(true);
    const hidden = errorBody(new TypeError('secret at /srv/app.js:12'), id);
    expect(hidden.code).toBe('server_error');
    expect(hidden.message).not.toContain('secret');
    expect(Value.Check(ErrorSchema, hidden)).toBe(true);
  });
});

describe('TypeBox wire schemas', () => {
  it('accept a request that validation accepts', () => {
    expect(() => validateDecideRequest(request)).not.toThrow();
    expect(Value.Check(DecideRequestSchema, request)).toBe(true);
  });

  it('reject what the spec rejects in shape', () => {
    const bad = (patch: Record<string, unknown>) => Value.Check(DecideRequestSchema, { ...request, ...patch });
    expect(bad({ questions: {} })).toBe(false);
    expect(bad({ state: [1] })).toBe(false);
    expect(bad({ extra: 1 })).toBe(false);
    expect(bad({ questions: { q: { type: 'maybe', instructions: 'x' } } })).toBe(false);
    expect(bad({ questions: { q: { type: 'choice', instructions: 'x', criteria: { a: 'only one' } } } })).toBe(false);
    expect(bad({ questions: { q: { type: 'noul', instructions: '' } } })).toBe(false);
  });

  it('describe the response', () => {
    const response = {
      id: 'dec_01JD7Q2S3T4V5W6X7Y8Z9ABCDE',
      model: 'svc-alpha-2026-10',
      answers: { refund: { type: 'noul', probs: { no: 0.2, yes: 0.8 }, top: 'yes', confidence: 0.8 } },
      usage: { input_tokens: 120, cached_tokens: 80 },
    };
    expect(Value.Check(DecideResponseSchema, response)).toBe(true);
    expect(Value.Check(DecideResponseSchema, { ...response, id: 'req_1' })).toBe(false);
    expect(Value.Check(DecideResponseSchema, { ...response, usage: { input_tokens: 1 } })).toBe(false);
  });
});
