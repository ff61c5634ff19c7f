import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Value } from '@sinclair/typebox/value';
import { DIALECTS } from '../../src/api/dialects.js';
import { ApiError, ERROR_CODES, errorBody } from '../../src/api/errors.js';
import { DecideRequestSchema, DecideResponseSchema, ErrorSchema } from '../../src/api/schemas.js';
import { DEFAULT_VALIDATION_LIMITS, validateDecideRequest } from '../../src/api/validate.js';
import { QUESTION_LIMITS } from '../../src/domain/question-limits.js';

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

  it('rounds Retry-After up to whole seconds, at least 1; a 429 always has one', () => {
    expect(new ApiError('rate_limited', 'slow down', { retryAfterSeconds: 2.1 }).retryAfterSeconds).toBe(3);
    expect(new ApiError('rate_limited', 'slow down', { retryAfterSeconds: 0 }).retryAfterSeconds).toBe(1);
    expect(new ApiError('rate_limited', 'slow down').retryAfterSeconds).toBe(1);
    expect(new ApiError('server_error', 'boom').retryAfterSeconds).toBeUndefined();
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

/**
 * The request bodies /openapi.json publishes for /v1/decisions and /v1/systemone (each dialect's
 * route.openapi.body, as JSON) state the limits their validators enforce, read from the same
 * constants, and a JSON Schema validator (fastify's ajv, nothing removed or coerced) accepts and
 * rejects with the door's parse() on each limit and on what the docs allow (null descriptions).
 */
describe('the /v1/decisions and /v1/systemone request schemas of the OpenAPI document', () => {
  const published = (path: string) => JSON.parse(JSON.stringify(DIALECTS.find((d) => d.path === path)!.route.openapi.body));
  const { maxKeyLength, maxDescriptionLength, maxInstructionsLength } = DEFAULT_VALIDATION_LIMITS;
  const long = (n: number) => 'x'.repeat(n);
  let app: FastifyInstance;

  beforeAll(async () => {
    app = Fastify({ ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } } });
    for (const path of ['/v1/decisions', '/v1/systemone']) app.post(path, { schema: { body: published(path) } }, async () => ({ ok: true }));
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
  });
  const schemaAccepts = async (path: string, body: unknown) =>
    (await app.inject({ method: 'POST', url: path, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } })).statusCode === 200;
  const doorAccepts = (path: string, body: unknown) => DIALECTS.find((d) => d.path === path)!.parse(body, {}).ok;

  it("state the validators' limits", () => {
    const decisions = published('/v1/decisions');
    const [predicate, choice, score] = decisions.properties.questions.items.anyOf;
    const textPart = predicate.properties.instructions.anyOf[1].items.anyOf[0];
    expect(predicate.properties.instructions.anyOf[0].maxLength).toBe(maxInstructionsLength);
    expect(textPart).toMatchObject({ additionalProperties: false, required: ['type', 'text'] });
    expect(Object.keys(textPart.properties)).toEqual(['type', 'text', 'prompt_cache_breakpoint']);
    const item = choice.properties.choices.items;
    expect(item.properties.value.anyOf[0]).toMatchObject({ minLength: 1, maxLength: maxKeyLength });
    expect(item.properties.description.anyOf).toEqual([{ type: 'string', maxLength: maxDescriptionLength }, { type: 'null' }]);
    expect(choice.properties.choices).toMatchObject({ minItems: QUESTION_LIMITS.minOptions, maxItems: QUESTION_LIMITS.maxOptions });
    const level = score.properties.levels.items;
    expect(level.properties.label).toMatchObject({ minLength: 1, maxLength: maxKeyLength });
    expect(level.properties.description.anyOf[0].maxLength).toBe(maxDescriptionLength);
    expect(score.properties.levels).toMatchObject({ minItems: QUESTION_LIMITS.minLevels, maxItems: QUESTION_LIMITS.maxLevels });
    expect(decisions.properties.questions.maxItems).toBe(QUESTION_LIMITS.maxQuestions);

    const systemOne = published('/v1/systemone');
    expect(systemOne.properties.questions).toMatchObject({ maxProperties: QUESTION_LIMITS.maxQuestions, propertyNames: { minLength: 1, maxLength: maxKeyLength } });
    const question = systemOne.properties.questions.additionalProperties ?? Object.values(systemOne.properties.questions.patternProperties)[0];
    expect(question.properties.instructions.anyOf[0]).toMatchObject({ minLength: 1, maxLength: maxInstructionsLength });
    const [noul, choices, levels] = question.properties.criteria.anyOf;
    expect(noul.properties.true.anyOf[0].anyOf[0].maxLength).toBe(maxDescriptionLength);
    expect(choices).toMatchObject({ maxProperties: QUESTION_LIMITS.maxOptions, propertyNames: { minLength: 1, maxLength: maxKeyLength } });
    expect(levels).toMatchObject({ maxItems: QUESTION_LIMITS.maxLevels });
    expect(levels.items.anyOf[0].maxLength).toBe(maxDescriptionLength);
  });

  const decisions = (choice: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    model: 'svc-alpha',
    input: 'The screen arrived broken.',
    questions: [{ type: 'choice', instructions: 'Which?', choices: [{ value: 'a', ...choice }, { value: 'b' }], ...extra }],
  });
  const levels = (level: Record<string, unknown>) => ({
    model: 'svc-alpha',
    input: 's',
    questions: [{ type: 'score', instructions: 'How?', levels: [{ label: 'low', ...level }, { label: 'high' }] }],
  });
  const parts = (part: Record<string, unknown>) => decisions({}, { instructions: [{ type: 'input_text', text: 'Which?', ...part }] });
  const systemOne = (questions: Record<string, unknown>) => ({ model: 'svc-alpha', state: 's', questions });
  const choiceS1 = (criteria: Record<string, unknown>, instructions: unknown = 'Which?') => systemOne({ q: { type: 'choice', instructions, criteria } });

  const ACCEPTED: Array<[string, string, unknown]> = [
    ['/v1/decisions', 'a null description', decisions({ description: null })],
    ['/v1/decisions', 'a blank description', decisions({ description: ' ' })],
    ['/v1/decisions', 'a null level description', levels({ description: null })],
    ['/v1/decisions', `a ${maxKeyLength}-character value and a ${maxDescriptionLength}-character description`, decisions({ value: long(maxKeyLength), description: long(maxDescriptionLength) })],
    ['/v1/decisions', `a ${maxKeyLength}-character label`, levels({ label: long(maxKeyLength) })],
    ['/v1/decisions', `${maxInstructionsLength}-character instructions`, decisions({}, { instructions: long(maxInstructionsLength) })],
    ['/v1/decisions', 'prompt_cache_breakpoint on an input_text part', parts({ prompt_cache_breakpoint: { ttl: '30m' } })],
    ['/v1/systemone', 'a null choice description and a null noul side', systemOne({ c: { type: 'choice', instructions: 'x', criteria: { a: null, b: 'y' } }, n: { type: 'noul', instructions: 'x', criteria: { true: 'yes', false: null } } })],
    ['/v1/systemone', `a ${maxKeyLength}-character id and option name`, systemOne({ [long(maxKeyLength)]: { type: 'choice', instructions: 'x', criteria: { [long(maxKeyLength)]: null, b: null } } })],
    ['/v1/systemone', `${maxInstructionsLength}-character instructions, a ${maxDescriptionLength}-character description`, choiceS1({ a: long(maxDescriptionLength), b: null }, long(maxInstructionsLength))],
  ];
  const REJECTED: Array<[string, string, unknown]> = [
    ['/v1/decisions', `a ${maxKeyLength + 1}-character value`, decisions({ value: long(maxKeyLength + 1) })],
    ['/v1/decisions', 'an empty value', decisions({ value: '' })],
    ['/v1/decisions', `a ${maxDescriptionLength + 1}-character description`, decisions({ description: long(maxDescriptionLength + 1) })],
    ['/v1/decisions', `a ${maxKeyLength + 1}-character label`, levels({ label: long(maxKeyLength + 1) })],
    ['/v1/decisions', `a ${maxDescriptionLength + 1}-character level description`, levels({ description: long(maxDescriptionLength + 1) })],
    ['/v1/decisions', `${maxInstructionsLength + 1}-character instructions`, decisions({}, { instructions: long(maxInstructionsLength + 1) })],
    ['/v1/decisions', 'an unknown field on an input_text part', parts({ foo: 1 })],
    ['/v1/decisions', 'an empty array of instruction parts', decisions({}, { instructions: [] })],
    ['/v1/systemone', `a ${maxKeyLength + 1}-character question id`, systemOne({ [long(maxKeyLength + 1)]: { type: 'noul', instructions: 'x' } })],
    ['/v1/systemone', 'an empty question id', systemOne({ '': { type: 'noul', instructions: 'x' } })],
    ['/v1/systemone', `a ${maxKeyLength + 1}-character option name`, choiceS1({ [long(maxKeyLength + 1)]: null, b: null })],
    ['/v1/systemone', `a ${maxDescriptionLength + 1}-character description`, choiceS1({ a: long(maxDescriptionLength + 1), b: null })],
    ['/v1/systemone', `a ${maxDescriptionLength + 1}-character score level`, systemOne({ q: { type: 'score', instructions: 'x', criteria: ['a', long(maxDescriptionLength + 1)] } })],
    ['/v1/systemone', `${maxInstructionsLength + 1}-character instructions`, choiceS1({ a: null, b: null }, long(maxInstructionsLength + 1))],
    ['/v1/systemone', 'empty instructions', choiceS1({ a: null, b: null }, '')],
  ];

  it.each(ACCEPTED)('%s: the door and the schema accept %s', async (path, _, body) => {
    expect(doorAccepts(path, body)).toBe(true);
    expect(await schemaAccepts(path, body)).toBe(true);
  });

  it.each(REJECTED)('%s: the door and the schema reject %s', async (path, _, body) => {
    expect(doorAccepts(path, body)).toBe(false);
    expect(await schemaAccepts(path, body)).toBe(false);
  });
});
