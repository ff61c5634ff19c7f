/**
 * The dialect mappings as pure functions (no engine): System One and OpenAI decisions bodies ->
 * the domain request, a domain result -> each dialect's body (ours included), ApiError -> each
 * dialect's error, and the registry every door takes its dialect from.
 * The HTTP behaviour with the real engine and the official `openai` client is in
 * compat-http.test.ts.
 */
import { describe, expect, it } from 'vitest';

import { ApiError } from '../../src/api/errors.js';
import { decideDialect } from '../../src/api/decide/index.js';
import type { Dialect } from '../../src/api/dialect.js';
import { DIALECT_PATHS, dialectFor } from '../../src/api/dialects.js';
import { openAiDecisions, type DecisionsCall } from '../../src/api/openai/index.js';
import type { DecisionResult } from '../../src/domain/decision.js';
import { systemOne, systemOneConfidence, type SystemOneCall } from '../../src/api/systemone/index.js';
import { validateDecideRequest } from '../../src/api/validate.js';

/** The verbatim quickstart request of the System One docs (docs.typesafe.ai's quickstart, docs/compatibility.md "Sources"), our model id. */
const QUICKSTART = {
  state: "Hi, I've been trying to connect my Stripe account for 3 days and it keeps failing. I'm losing sales. Please help ASAP.",
  model: 'svc-alpha',
  questions: {
    department: {
      type: 'choice',
      instructions: 'Which team should handle this',
      criteria: { billing: 'Payment or subscription issues', technical: 'Bugs or integration problems', sales: 'Pricing or account questions' },
    },
    frustration: {
      type: 'score',
      instructions: 'How frustrated the customer appears',
      criteria: ['Calm, just stating facts', 'Frustrated but civil', 'Very angry, strong language'],
    },
    is_urgent: { type: 'noul', instructions: 'The message conveys urgency or time-sensitivity' },
  },
};

function parsedSystemOne(body: unknown): SystemOneCall {
  const parsed = systemOne.parse(body);
  if (!parsed.ok) throw new Error(`rejected: ${JSON.stringify(parsed.error)}`);
  return parsed.call;
}

function parsedDecisions(body: unknown): DecisionsCall {
  const parsed = openAiDecisions.parse(body);
  if (!parsed.ok) throw new Error(`rejected: ${JSON.stringify(parsed.error)}`);
  return parsed.call;
}

function rejected(dialect: typeof systemOne | typeof openAiDecisions, body: unknown) {
  const parsed = dialect.parse(body);
  if (parsed.ok) throw new Error('accepted');
  return parsed.error as { status: number; body: any; headers: Record<string, string> };
}

describe('System One -> domain', () => {
  it('maps the quickstart onto the domain request /v1/decide makes of the same questions', () => {
    const call = parsedSystemOne(QUICKSTART);
    const decide = validateDecideRequest({
      model: 'svc-alpha',
      state: QUICKSTART.state,
      questions: {
        department: QUICKSTART.questions.department,
        frustration: {
          type: 'score',
          instructions: 'How frustrated the customer appears',
          criteria: { '0': 'Calm, just stating facts', '1': 'Frustrated but civil', '2': 'Very angry, strong language' },
        },
        is_urgent: QUICKSTART.questions.is_urgent,
      },
    });
    expect(call.request).toEqual(decide);
    expect(call.legends.get('frustration')).toEqual(QUICKSTART.questions.frustration.criteria);
  });

  it('sends structured instructions, descriptions and states as compact JSON; null descriptions read as the key', () => {
    const call = parsedSystemOne({
      model: 'm',
      state: [{ ticket: 'late' }, 2],
      questions: {
        q: { type: 'choice', instructions: { ask: 'route', keys: ['a'] }, criteria: { billing: { about: 'money' }, other: null } },
        u: { type: 'noul', instructions: 'urgent?', criteria: { true: 'time-sensitive', false: ['calm'] } },
        n: { type: 'noul', instructions: 'only yes described', criteria: { true: 'yes!' } },
      },
    });
    expect(call.request.stateText).toBe('[{"ticket":"late"},2]');
    const [q, u, n] = call.request.questions;
    expect(q!.instructions).toBe('{"ask":"route","keys":["a"]}');
    expect(q!.options.map((o) => [o.key, o.description])).toEqual([
      ['billing', '{"about":"money"}'],
      ['other', ''],
    ]);
    expect(u!.options.map((o) => [o.key, o.description])).toEqual([
      ['no', '["calm"]'],
      ['yes', 'time-sensitive'],
    ]);
    expect(n!.options.map((o) => o.description)).toEqual(['', 'yes!']);
  });

  it('shape problems are one 422 with a Pydantic list; rules are 400 with detail', () => {
    const shape = rejected(systemOne, { state: 3, questions: {} });
    expect(shape.status).toBe(422);
    expect(shape.body.detail.map((p: any) => p.loc)).toEqual([['body', 'model'], ['body', 'state'], ['body', 'questions']]);
    expect(shape.body.detail[0]).toMatchObject({ type: 'missing', msg: 'Field required' });

    const criteria = rejected(systemOne, { model: 'm', state: 's', questions: { s: { type: 'score', instructions: 'x', criteria: { a: 1 } } } });
    expect(criteria.status).toBe(422);
    expect(criteria.body.detail[0].loc).toEqual(['body', 'questions', 's', 'criteria']);

    const unknownType = rejected(systemOne, { model: 'm', state: 's', questions: { q: { type: 'rank', instructions: 'x' } } });
    expect(unknownType).toMatchObject({ status: 400, body: { detail: { error_type: 'api_usage_error' } } });
    expect(unknownType.body.detail.message).toContain('noul, choice, score');

    const extra = rejected(systemOne, { model: 'm', state: 's', questions: QUICKSTART.questions, stream: true });
    expect(extra.status).toBe(400);
    expect(extra.body.detail.message).toContain('"stream"');

    const noInstructions = rejected(systemOne, { model: 'm', state: 's', questions: { q: { type: 'noul' } } });
    expect(noInstructions.status).toBe(400);
    expect(noInstructions.body.detail.message).toContain('questions["q"].instructions');

    // A description over the limit is named where the caller wrote it, not where /v1/decide keeps it.
    const long = 'x'.repeat(2001);
    const tooLong: Array<[Record<string, unknown>, string]> = [
      [{ type: 'noul', instructions: 'x', criteria: { true: long, false: 'n' } }, 'questions["q"].criteria.true'],
      [{ type: 'noul', instructions: 'x', criteria: { true: 'y', false: { text: long } } }, 'questions["q"].criteria.false'],
      [{ type: 'score', instructions: 'x', criteria: ['low', long, 'high'] }, 'questions["q"].criteria[1]'],
      [{ type: 'choice', instructions: 'x', criteria: { a: 'A', b: long } }, 'questions["q"].criteria["b"]'],
    ];
    for (const [question, field] of tooLong) {
      const error = rejected(systemOne, { model: 'm', state: 's', questions: { q: question } });
      expect(error).toMatchObject({ status: 400, body: { detail: { error_type: 'api_usage_error', message: `${field}: the description is longer than 2000 characters` } } });
    }
  });

  it('our limits are 400 with a bare-string detail naming the limit', () => {
    const choices = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`o${i}`, null]));
    expect(rejected(systemOne, { model: 'm', state: 's', questions: { q: { type: 'choice', instructions: 'x', criteria: choices } } })).toMatchObject({
      status: 400,
      body: { detail: 'Too many choices. Must have at most 255 choices.' },
    });
    const allowed = Object.fromEntries(Array.from({ length: 255 }, (_, i) => [`o${i}`, null]));
    expect(systemOne.parse({ model: 'm', state: 's', questions: { q: { type: 'choice', instructions: 'x', criteria: allowed } } }).ok).toBe(true);
    const levels = Array.from({ length: 11 }, (_, i) => `level ${i}`);
    expect(rejected(systemOne, { model: 'm', state: 's', questions: { q: { type: 'score', instructions: 'x', criteria: levels } } })).toMatchObject({
      status: 400,
      body: { detail: 'Too many score levels. Must have at most 10 levels.' },
    });
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`q${i}`, { type: 'noul', instructions: 'x' }]));
    expect(rejected(systemOne, { model: 'm', state: 's', questions: many })).toMatchObject({
      status: 400,
      body: { detail: 'Too many questions. Must have at most 64 questions.' },
    });
  });
});

describe('OpenAI decisions -> domain', () => {
  it('maps predicate/choice/score onto the domain questions /v1/decide makes of the same text', () => {
    const call = parsedDecisions({
      model: 'svc-alpha',
      input: 'The package arrived with a broken screen.',
      questions: [
        { type: 'predicate', name: 'damaged', instructions: 'Does the customer report a damaged item?' },
        { type: 'choice', name: 'department', instructions: 'Which department?', choices: [{ value: 'returns' }, { value: 'billing', description: 'Charges' }] },
        { type: 'score', instructions: 'How severe?', levels: [{ label: 'cosmetic' }, { label: 'broken', description: 'does not work' }] },
      ],
    });
    const decide = validateDecideRequest({
      model: 'svc-alpha',
      state: 'The package arrived with a broken screen.',
      questions: {
        damaged: { type: 'noul', instructions: 'Does the customer report a damaged item?' },
        department: { type: 'choice', instructions: 'Which department?', criteria: { returns: 'returns', billing: 'Charges' } },
        severity: { type: 'score', instructions: 'How severe?', criteria: { '0': 'cosmetic', '1': 'broken: does not work' } },
      },
    });
    // The model reads the same text; only the internal ids and choice keys differ.
    const strip = (q: { type: string; instructions: string; options: Array<{ description?: string }> }) => ({
      type: q.type,
      instructions: q.instructions,
      texts: q.options.map((o) => o.description || undefined),
    });
    expect(call.request.stateText).toBe(decide.stateText);
    expect(call.request.questions.map(strip)).toEqual(decide.questions.map(strip));
    expect(call.questions.map((q) => q.name)).toEqual(['damaged', 'department', null]);
  });

  it('messages: one user message is the state; input_json reads as compact JSON; several messages become role blocks', () => {
    const one = parsedDecisions({
      model: 'm',
      input: [{ role: 'user', content: [{ type: 'input_json', data: { ticket: 'late', n: 2 } }] }],
      questions: [{ type: 'predicate', instructions: 'late?' }],
    });
    expect(one.request.stateText).toBe(validateDecideRequest({ model: 'm', state: { ticket: 'late', n: 2 }, questions: { q: { type: 'noul', instructions: 'x' } } }).stateText);
    const several = parsedDecisions({
      model: 'm',
      input: [
        { role: 'developer', content: 'Tickets from the EU shop.' },
        { role: 'user', content: [{ type: 'input_text', text: 'Where is it?' }, { type: 'input_json', data: [{ order: 7 }] }], type: 'message' },
      ],
      questions: [{ type: 'predicate', instructions: 'late?' }],
    });
    expect(several.request.stateText).toBe('developer: Tickets from the EU shop.\n\nuser: Where is it?\n\n[{"order":7}]');
  });

  it('images, assistant messages and tool items are a 400 that says so', () => {
    const image = rejected(openAiDecisions, {
      model: 'm',
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }],
      questions: [{ type: 'predicate', instructions: 'x' }],
    });
    expect(image.status).toBe(400);
    expect(image.body.error).toMatchObject({ type: 'invalid_request_error', param: 'input[0].content[0]' });
    expect(image.body.error.message).toContain('input_image parts are not supported');
    const assistant = rejected(openAiDecisions, { model: 'm', input: [{ role: 'assistant', content: 'hi' }], questions: [{ type: 'predicate', instructions: 'x' }] });
    expect(assistant.body.error.param).toBe('input[0].role');
    const tool = rejected(openAiDecisions, { model: 'm', input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }], questions: [{ type: 'predicate', instructions: 'x' }] });
    expect(tool.body.error.message).toContain('"function_call" items are not supported');
    const noRole = rejected(openAiDecisions, { model: 'm', input: [{ content: 'hi' }], questions: [{ type: 'predicate', instructions: 'x' }] });
    expect(noRole.body.error).toMatchObject({ param: 'input[0].role', message: 'input[0].role: required, one of user, system, developer' });
  });

  it('prompt_cache_options: the SDK-typed mode and ttl are accepted and ignored; other values and fields are a 400 naming them', () => {
    const body = (options: unknown) => ({ model: 'm', input: 'x', prompt_cache_options: options, questions: [{ type: 'predicate', instructions: 'x' }] });
    for (const ok of [null, {}, { mode: 'implicit' }, { mode: 'explicit', ttl: '30m' }, { mode: null, ttl: null }]) {
      expect(parsedDecisions(body(ok)).request).toEqual(parsedDecisions(body(undefined)).request);
    }
    expect(rejected(openAiDecisions, body({ mode: 'nope' })).body.error).toMatchObject({ param: 'prompt_cache_options.mode', message: expect.stringContaining('"nope"') });
    expect(rejected(openAiDecisions, body({ ttl: '1h' })).body.error.param).toBe('prompt_cache_options.ttl');
    expect(rejected(openAiDecisions, body({ retention: 'x' })).body.error.param).toBe('prompt_cache_options.retention');
    expect(rejected(openAiDecisions, body('implicit')).body.error.param).toBe('prompt_cache_options');
  });

  it('limits and typed values: 256 choices, 11 levels, 65 questions, duplicate values are 400 naming the field', () => {
    const choices = Array.from({ length: 256 }, (_, i) => ({ value: `v${i}` }));
    expect(rejected(openAiDecisions, { model: 'm', input: 'x', questions: [{ type: 'choice', instructions: 'x', choices }] }).body.error).toMatchObject({
      param: 'questions[0].choices',
      message: 'questions[0].choices: at most 255 choices per question, got 256',
    });
    expect(openAiDecisions.parse({ model: 'm', input: 'x', questions: [{ type: 'choice', instructions: 'x', choices: choices.slice(0, 255) }] }).ok).toBe(true);
    const levels = Array.from({ length: 11 }, (_, i) => ({ label: `l${i}` }));
    expect(rejected(openAiDecisions, { model: 'm', input: 'x', questions: [{ type: 'score', instructions: 'x', levels }] }).body.error.param).toBe('questions[0].levels');
    const many = Array.from({ length: 65 }, () => ({ type: 'predicate', instructions: 'x' }));
    expect(rejected(openAiDecisions, { model: 'm', input: 'x', questions: many }).body.error.message).toContain('at most 64 questions');
    const dup = rejected(openAiDecisions, { model: 'm', input: 'x', questions: [{ type: 'choice', instructions: 'x', choices: [{ value: 'a' }, { value: 'a' }] }] });
    expect(dup.body.error.param).toBe('questions[0].choices[1].value');
    // Distinct values the model would read alike: as shown (the description, else the value, on one line).
    for (const alike of [[{ value: 'yes' }, { value: 'yes ' }], [{ value: 'a', description: 'Refund' }, { value: 'b', description: 'Refund' }]]) {
      const error = rejected(openAiDecisions, { model: 'm', input: 'x', questions: [{ type: 'choice', instructions: 'x', choices: alike }] }).body.error;
      expect(error).toMatchObject({ param: 'questions[0].choices[1]', message: expect.stringContaining('reads the same to the model as choices[0]') });
    }
    // A string that reads as a boolean choice once shown (spaces trimmed) is quoted, as "true" is: distinct.
    const spaced = parsedDecisions({ model: 'm', input: 'x', questions: [{ type: 'choice', instructions: 'x', choices: [{ value: true }, { value: 'true ' }] }] });
    expect(spaced.request.questions[0]!.options.map((o) => o.description)).toEqual(['true', '"true "']);
    // System One refuses them as /v1/decide does (its criteria are ours).
    expect(rejected(systemOne, { model: 'm', state: 'x', questions: { q: { type: 'choice', instructions: 'x', criteria: { yes: null, 'yes ': null } } } })).toMatchObject({
      status: 400,
      body: { detail: { message: expect.stringContaining('options "yes" and "yes " read the same to the model') } },
    });
    // A string and a boolean with the same text are distinct choices.
    const typed = parsedDecisions({ model: 'm', input: 'x', questions: [{ type: 'choice', instructions: 'x', choices: [{ value: 'true' }, { value: true }] }] });
    expect(typed.questions[0]!.values).toEqual(['true', true]);
    // ... and the model can tell them apart: the string reads quoted, the boolean bare.
    expect(typed.request.questions[0]!.options.map((o) => o.description)).toEqual(['"true"', 'true']);
    const plain = parsedDecisions({ model: 'm', input: 'x', questions: [{ type: 'choice', instructions: 'x', choices: [{ value: 'false' }, { value: 'no', description: 'No.' }, { value: true }] }] });
    expect(plain.request.questions[0]!.options.map((o) => o.description)).toEqual(['false', 'No.', 'true']);
  });
});

const RESULT: DecisionResult = {
  id: 'dec_01JD0000000000000000000000',
  model: 'svc-alpha-2026-10',
  answers: {},
  inputTokens: 120,
  cachedTokens: 80,
  outputTokens: 3,
};

describe('domain -> dialect bodies', () => {
  it('System One: vendor answer shapes, keys, score = Σ i·p_i, inferred confidence, integer usage', () => {
    const call = parsedSystemOne(QUICKSTART);
    const body = systemOne.respond(call, {
      ...RESULT,
      answers: {
        department: { type: 'choice', probs: { billing: 0.84, technical: 0.159, sales: 0.001 }, top: 'billing', confidence: 0.84 },
        frustration: { type: 'score', probs: { '0': 0, '1': 0.7, '2': 0.3 }, top: '1', confidence: 0.7 },
        is_urgent: { type: 'noul', probs: { no: 0.001, yes: 0.999 }, top: 'yes', confidence: 0.999 },
      },
    });
    expect(body).toEqual({
      model: 'svc-alpha-2026-10',
      answers: {
        department: { type: 'choice', choice: 'billing', probabilities: { billing: 0.84, technical: 0.159, sales: 0.001 }, confidence: 0.76 },
        frustration: {
          type: 'score',
          score: 1.3,
          legend: { '0': 'Calm, just stating facts', '1': 'Frustrated but civil', '2': 'Very angry, strong language' },
          probabilities: { '0': 0, '1': 0.7, '2': 0.3 },
          confidence: 0.55,
        },
        is_urgent: { type: 'noul', noul: 0.999 },
      },
      usage: { input_tokens: 120, output_tokens: 3 },
    });
    // The vendor docs' own examples (docs/compatibility.md, what confidence means).
    expect(systemOneConfidence([0.08, 0.92, 0])).toBe(0.88);
    expect(systemOneConfidence([0.1, 0.37, 0.24, 0.29])).toBe(0.16);
    expect(systemOneConfidence([0.5, 0.5])).toBe(0);
  });

  it('OpenAI: answers in order, names echoed, typed values, score levels by index, usage details', () => {
    const call = parsedDecisions({
      model: 'svc-alpha',
      input: 'x',
      questions: [
        { type: 'predicate', name: 'damaged', instructions: 'x' },
        { type: 'choice', instructions: 'x', choices: [{ value: 'returns' }, { value: true }] },
        { type: 'score', name: 'sev', instructions: 'x', levels: [{ label: 'cosmetic' }, { label: 'broken' }] },
      ],
    });
    const body = openAiDecisions.respond(call, {
      ...RESULT,
      answers: {
        '0': { type: 'noul', probs: { no: 0.03, yes: 0.97 }, top: 'yes', confidence: 0.97 },
        '1': { type: 'choice', probs: { '0': 0.07, '1': 0.93 }, top: '1', confidence: 0.93 },
        '2': { type: 'score', probs: { '0': 0.12, '1': 0.88 }, top: '1', confidence: 0.88 },
      },
    });
    expect(body).toEqual({
      model: 'svc-alpha-2026-10',
      answers: [
        { type: 'predicate', name: 'damaged', probability: 0.97 },
        { type: 'choice', name: null, choice: true, probabilities: [{ value: 'returns', probability: 0.07 }, { value: true, probability: 0.93 }], confidence: 0.93 },
        {
          type: 'score',
          name: 'sev',
          score: 0.88,
          probabilities: [
            { value: 0, label: 'cosmetic', probability: 0.12 },
            { value: 1, label: 'broken', probability: 0.88 },
          ],
          confidence: 0.88,
        },
      ],
      usage: {
        input_tokens: 120,
        input_tokens_details: { cached_tokens: 80, cache_write_tokens: 0 },
        output_tokens: 3,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 123,
      },
    });
  });
});

describe('ApiError -> dialect errors', () => {
  it('System One: 403 missing / 401 invalid key, 400 unknown model and state too long, 429 with both retry headers, hidden 500', () => {
    const key = new ApiError('invalid_key', 'missing API key');
    expect(systemOne.error(key, { auth: 'missing' })).toMatchObject({ status: 403, body: { detail: { error_type: 'authentication_error' } } });
    expect(systemOne.error(key, { auth: 'invalid' }).status).toBe(401);
    expect(systemOne.error(new ApiError('not_found', "model 'jev-latest' is not installed"))).toMatchObject({
      status: 400,
      body: { detail: { error_type: 'api_usage_error', message: "Unknown model: model 'jev-latest' is not installed" } },
    });
    expect(systemOne.error(new ApiError('state_too_long', 'state is 9000 tokens'))).toMatchObject({ status: 400, body: { detail: { error_type: 'max_tokens_exceeded' } } });
    expect(systemOne.error(new ApiError('rate_limited', 'slow down', { retryAfterSeconds: 3 }))).toEqual({
      status: 429,
      body: { detail: { error_type: 'rate_limit_error', message: 'slow down' } },
      headers: { 'retry-after': '3', 'retry-after-ms': '3000' },
    });
    expect(systemOne.error(new ApiError('invalid_question', 'request body: not valid JSON'), { unreadableBody: true })).toMatchObject({
      status: 422,
      body: { detail: [{ type: 'json_invalid', loc: ['body'] }] },
    });
    const hidden = systemOne.error(new Error('secret stack detail'));
    expect(hidden.status).toBe(500);
    expect(JSON.stringify(hidden.body)).not.toContain('secret');
  });

  it('OpenAI: {error: {message, type, param, code}} with the statuses the SDK maps to typed errors', () => {
    expect(openAiDecisions.error(new ApiError('invalid_key', 'bad key'))).toMatchObject({ status: 401, body: { error: { code: 'invalid_api_key' } } });
    expect(openAiDecisions.error(new ApiError('not_found', 'no model'))).toMatchObject({ status: 404, body: { error: { param: 'model', code: 'model_not_found' } } });
    expect(openAiDecisions.error(new ApiError('state_too_long', 'long'))).toMatchObject({ status: 400, body: { error: { code: 'context_length_exceeded' } } });
    expect(openAiDecisions.error(new ApiError('rate_limited', 'slow', { retryAfterSeconds: 2 }))).toMatchObject({
      status: 429,
      body: { error: { type: 'rate_limit_error' } },
      headers: { 'retry-after': '2', 'retry-after-ms': '2000' },
    });
    expect(Object.keys((openAiDecisions.error(new Error('x')).body as any).error).sort()).toEqual(['code', 'message', 'param', 'type']);
  });

  it('ours: {code, message, request_id} with the status of the code, WWW-Authenticate on 401, Retry-After on 429, hidden 500', () => {
    expect(decideDialect.error(new ApiError('invalid_key', 'bad key'), { requestId: 'dec_1' })).toEqual({
      status: 401,
      body: { code: 'invalid_key', message: 'bad key', request_id: 'dec_1' },
      headers: { 'www-authenticate': 'Bearer' },
    });
    expect(decideDialect.error(new ApiError('not_found', 'no model'), { requestId: 'req_2' })).toEqual({
      status: 404,
      body: { code: 'not_found', message: 'no model', request_id: 'req_2' },
      headers: {},
    });
    expect(decideDialect.error(new ApiError('rate_limited', 'slow', { retryAfterSeconds: 4 })).headers).toEqual({ 'retry-after': '4' });
    const hidden = decideDialect.error(new Error('secret stack detail'), { requestId: 'dec_3' });
    expect(hidden).toMatchObject({ status: 500, body: { code: 'server_error', request_id: 'dec_3' } });
    expect(JSON.stringify(hidden.body)).not.toContain('secret');
  });

  it("ours: a body the validator refuses is its invalid_question, naming the request's id", () => {
    const parsed = decideDialect.parse({ model: 'm', state: 's', questions: {} }, { requestId: 'dec_4' });
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.error.status).toBe(400);
    expect(parsed.error.body).toEqual({ code: 'invalid_question', message: expect.stringMatching(/^questions/), request_id: 'dec_4' });
  });

  it('every dialect reads the request id only to build an error body (a batch line makes it on first read)', () => {
    const bodies: Array<[Dialect<any, unknown>, unknown]> = [
      [decideDialect, { model: 'm', state: 's', questions: { q: { type: 'noul', instructions: 'x' } } }],
      [systemOne, { model: 'm', state: 's', questions: { q: { type: 'noul', instructions: 'x' } } }],
      [openAiDecisions, { model: 'm', input: 's', questions: [{ type: 'predicate', instructions: 'x' }] }],
    ];
    for (const [dialect, body] of bodies) {
      let reads = 0;
      const context = {
        get requestId() {
          reads += 1;
          return 'req_x';
        },
      };
      expect(dialect.parse(body, context).ok).toBe(true);
      expect(reads, dialect.path).toBe(0);
    }
  });
});

describe('domain result -> our body', () => {
  it('/v1/decide: the same answers object (its key order kept), usage in snake_case', () => {
    const answers = { refund: { type: 'noul' as const, probs: { no: 0.2, yes: 0.8 }, top: 'yes', confidence: 0.8 } };
    const call = decideDialect.parse({ model: 'm', state: 's', questions: { refund: { type: 'noul', instructions: 'x' } } });
    if (!call.ok) throw new Error('rejected');
    const body = decideDialect.respond(call.call, { ...RESULT, answers });
    expect(body).toEqual({ id: RESULT.id, model: RESULT.model, answers, usage: { input_tokens: 120, cached_tokens: 80 } });
    expect(body.answers).toBe(answers);
  });
});

describe('the registry', () => {
  it('dialectFor finds each dialect by the path a batch line names, ours included', () => {
    expect(dialectFor('/v1/systemone')).toBe(systemOne);
    expect(dialectFor('/v1/decisions')).toBe(openAiDecisions);
    expect(dialectFor('/v1/decide')).toBe(decideDialect);
    expect(dialectFor('__proto__')).toBeUndefined();
    expect(dialectFor('/v1/decide/')).toBeUndefined();
    // The batch endpoints, in the order the docs list them.
    expect(DIALECT_PATHS).toEqual(['/v1/decisions', '/v1/systemone', '/v1/decide']);
  });
});
