/**
 * /v1/systemone and /v1/decisions over real HTTP (fastify listening on a port) on the tiny model:
 * System One with plain fetch against the verbatim examples of its docs, OpenAI's with the official
 * `openai` client (`client.decisions.create`) and its typed errors; the same question through
 * /v1/decide, /v1/systemone and /v1/decisions gives the same probabilities within 1e-6; auth, rate
 * limits, load shedding, request ids, metrics and the OpenAPI document as for /v1/decide.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { TEST_KEY, longState, tempModels, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let service: DecisionService;
let sheddingService: DecisionService;
let app: FastifyInstance;
let limited: FastifyInstance;
let shedding: FastifyInstance;
let url: string;
let limitedUrl: string;
let sheddingUrl: string;

const MODEL_ID = 'svc-alpha-2026-10';
const TYPESAFE_ID = /^req_[0-9a-f]{32}$/;

async function listen(server: FastifyInstance): Promise<string> {
  await server.listen({ port: 0, host: '127.0.0.1' });
  const address = server.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

beforeAll(async () => {
  dirs = await tempModels([MODEL_ID]);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  // A live job may wait 1 ms, and the first one waits 1 s for companions: every scoring request is
  // shed with ERR_QUEUE_FULL (deterministically) before its engine call starts.
  sheddingService = await DecisionService.open({
    modelsDir: dirs.modelsDir,
    ensureDefaultModel: false,
    runtime: { scheduler: { windowMs: 1000, maxQueueWaitMs: 1 } },
  });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: `${dirs.dataDir}/a`, rateLimit: false });
  limited = await createServer({
    service,
    apiKeys: [TEST_KEY],
    dataDir: `${dirs.dataDir}/b`,
    rateLimit: { requestsPerSecond: 0.001, burst: 1, invalidKeys: { requestsPerSecond: 100, burst: 100 } },
  });
  shedding = await createServer({ service: sheddingService, apiKeys: [TEST_KEY], dataDir: `${dirs.dataDir}/c`, rateLimit: false });
  url = await listen(app);
  limitedUrl = await listen(limited);
  sheddingUrl = await listen(shedding);
});

afterAll(async () => {
  await app?.close();
  await limited?.close();
  await shedding?.close();
  await service?.close();
  await sheddingService?.close();
  dirs?.cleanup();
});

interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

async function post(path: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TEST_KEY}` }, base = url): Promise<Reply> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const systemone = (body: unknown, headers?: Record<string, string>, base?: string) => post('/v1/systemone', body, headers, base);

function openai(base = url, apiKey = TEST_KEY): OpenAI {
  return new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
}

/** The verbatim quickstart request of the System One docs (docs.typesafe.ai's quickstart, docs/compatibility.md "Sources"); only the model id is ours. */
const QUICKSTART = {
  state: "Hi, I've been trying to connect my Stripe account for 3 days and it keeps failing. I'm losing sales. Please help ASAP.",
  model: 'svc-alpha',
  questions: {
    department: {
      type: 'choice',
      instructions: 'Which team should handle this',
      criteria: {
        billing: 'Payment or subscription issues',
        technical: 'Bugs or integration problems',
        sales: 'Pricing or account questions',
      },
    },
    frustration: {
      type: 'score',
      instructions: 'How frustrated the customer appears',
      criteria: ['Calm, just stating facts', 'Frustrated but civil', 'Very angry, strong language'],
    },
    is_urgent: {
      type: 'noul',
      instructions: 'The message conveys urgency or time-sensitivity',
    },
  },
};

function sum(values: number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

describe('POST /v1/systemone (plain fetch, the docs examples)', () => {
  it('answers the quickstart in the vendor shapes', async () => {
    const res = await systemone(QUICKSTART);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-typesafe-request-id')).toMatch(TYPESAFE_ID);
    const { model, answers, usage } = res.body;
    expect(Object.keys(res.body).sort()).toEqual(['answers', 'model', 'usage']);
    expect(model).toBe(MODEL_ID);
    expect(Object.keys(answers)).toEqual(['department', 'frustration', 'is_urgent']);

    const dept = answers.department;
    expect(Object.keys(dept).sort()).toEqual(['choice', 'confidence', 'probabilities', 'type']);
    expect(Object.keys(dept.probabilities)).toEqual(['billing', 'technical', 'sales']);
    const dp = Object.values(dept.probabilities) as number[];
    expect(Math.abs(sum(dp) - 1)).toBeLessThanOrEqual(1e-6);
    expect(dept.probabilities[dept.choice]).toBe(Math.max(...dp));
    expect(dept.confidence).toBeCloseTo((Math.max(...dp) - 1 / 3) / (1 - 1 / 3), 6);

    const fr = answers.frustration;
    expect(fr.type).toBe('score');
    expect(fr.legend).toEqual({ '0': 'Calm, just stating facts', '1': 'Frustrated but civil', '2': 'Very angry, strong language' });
    expect(Object.keys(fr.probabilities)).toEqual(['0', '1', '2']);
    const fp = [0, 1, 2].map((i) => fr.probabilities[String(i)] as number);
    expect(fr.score).toBeCloseTo(fp[1]! + 2 * fp[2]!, 6);
    expect(fr.confidence).toBeCloseTo((Math.max(...fp) - 1 / 3) / (2 / 3), 6);

    expect(Object.keys(answers.is_urgent).sort()).toEqual(['noul', 'type']);
    expect(answers.is_urgent.noul).toBeGreaterThan(0);
    expect(answers.is_urgent.noul).toBeLessThan(1);

    expect(Number.isInteger(usage.input_tokens) && usage.input_tokens > 0).toBe(true);
    expect(usage.output_tokens).toBe(3);
  });

  it('answers the noul-with-criteria and score examples of the API reference, structured text included', async () => {
    const res = await systemone({
      model: 'svc-alpha',
      state: { ticket: { messages: [{ text: 'The checkout page shows a blank screen for every customer.' }] } },
      questions: {
        urgent: {
          type: 'noul',
          instructions: 'Does this convey urgency?',
          criteria: { true: 'Explicitly time-sensitive', false: 'No urgency expressed' },
        },
        bug_severity: {
          type: 'score',
          instructions: { ask: 'How severe is `ticket.messages[0].text`?' },
          criteria: [
            'Cosmetic; no impact to functionality',
            'Broken or degraded feature, but workaround exists',
            { level: 'Blocking issue', note: 'no workaround exists' },
          ],
        },
      },
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.answers.urgent).sort()).toEqual(['noul', 'type']);
    // A structured level comes back in the legend as the caller gave it.
    expect(res.body.answers.bug_severity.legend['2']).toEqual({ level: 'Blocking issue', note: 'no workaround exists' });
  });

  it('auth before the body: 403 without a key or with another scheme, 401 for a bad key; detail objects; request id on each', async () => {
    const cases: Array<[Record<string, string>, unknown, number]> = [
      [{}, QUICKSTART, 403],
      [{ authorization: `Basic ${TEST_KEY}` }, QUICKSTART, 403],
      [{}, '{not json', 403],
      [{ authorization: 'Bearer not-the-key' }, QUICKSTART, 401],
    ];
    for (const [headers, body, status] of cases) {
      const res = await systemone(body, headers);
      expect(res.status).toBe(status);
      expect(res.body.detail.error_type).toBe('authentication_error');
      expect(typeof res.body.detail.message).toBe('string');
      expect(res.headers.get('x-typesafe-request-id')).toMatch(TYPESAFE_ID);
    }
  });

  it('shape errors are 422 lists, rules 400 details, limits 400 strings naming the limit; request id on each', async () => {
    const cases: Array<[unknown, number, (body: any) => void]> = [
      [{ state: 'x', questions: QUICKSTART.questions }, 422, (b) => expect(b.detail).toEqual([{ type: 'missing', loc: ['body', 'model'], msg: 'Field required' }])],
      [{ ...QUICKSTART, questions: {} }, 422, (b) => expect(b.detail[0].loc).toEqual(['body', 'questions'])],
      ['{"model": "svc-alpha", ', 422, (b) => expect(b.detail[0].type).toBe('json_invalid')],
      [{ ...QUICKSTART, questions: { q: { type: 'rank', instructions: 'x' } } }, 400, (b) => expect(b.detail.error_type).toBe('api_usage_error')],
      [{ ...QUICKSTART, model: 'jev-latest' }, 400, (b) => expect(b.detail.message).toMatch(/^Unknown model: .*jev-latest.*svc-alpha-2026-10/)],
      [
        { ...QUICKSTART, questions: { q: { type: 'choice', instructions: 'x', criteria: Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`o${i}`, null])) } } },
        400,
        (b) => expect(b.detail).toBe('Too many choices. Must have at most 255 choices.'),
      ],
      // Below 2 levels, an empty list included, is the limit's 400, not a 422 shape error (as for choices).
      ...[[], ['only']].map((levels): [unknown, number, (body: any) => void] => [
        { ...QUICKSTART, questions: { q: { type: 'score', instructions: 'x', criteria: levels } } },
        400,
        (b) => expect(b.detail).toBe('Too few score levels. Must have at least 2 levels.'),
      ]),
      [{ ...QUICKSTART, questions: { q: { type: 'choice', instructions: 'x', criteria: {} } } }, 400, (b) => expect(b.detail).toBe('Too few choices. Must have at least 2 choices.')],
      [{ ...QUICKSTART, state: longState(5000) }, 400, (b) => expect(b.detail.error_type).toBe('max_tokens_exceeded')],
      [{ ...QUICKSTART, state: 'x'.repeat(1024 * 1024) }, 400, (b) => expect(b.detail.message).toContain('1048576 bytes')],
    ];
    for (const [body, status, check] of cases) {
      const res = await systemone(body);
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      check(res.body);
      expect(res.headers.get('x-typesafe-request-id')).toMatch(TYPESAFE_ID);
    }
    const get = await fetch(`${url}/v1/systemone`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
    expect(get.status).toBe(405);
    expect(await get.json()).toEqual({ detail: 'Method Not Allowed' });
    expect(get.headers.get('x-typesafe-request-id')).toMatch(TYPESAFE_ID);
  });
});

const DECISION_PARAMS = {
  model: 'svc-alpha',
  input: 'The package arrived with a broken screen.',
  questions: [
    { type: 'predicate' as const, name: 'damaged', instructions: 'Does the customer report a damaged item?' },
    {
      type: 'choice' as const,
      name: 'department',
      instructions: 'Which department should handle this complaint?',
      choices: [{ value: 'returns' }, { value: 'billing' }, { value: true, description: 'Escalate to a human' }],
    },
    { type: 'score' as const, instructions: 'How severe is the damage?', levels: [{ label: 'cosmetic' }, { label: 'broken' }] },
  ],
};

describe('POST /v1/decisions (the official openai client)', () => {
  it('client.decisions.create answers in question order with names, typed values and usage', async () => {
    const decision = await openai().decisions.create(DECISION_PARAMS);
    expect(decision.model).toBe(MODEL_ID);
    expect(decision.answers.map((a) => [a.type, a.name])).toEqual([
      ['predicate', 'damaged'],
      ['choice', 'department'],
      ['score', null],
    ]);
    const [predicate, choice, score] = decision.answers as [
      OpenAI.Decisions.Decision.AnswerResourcePredicate,
      OpenAI.Decisions.Decision.AnswerResourceChoice,
      OpenAI.Decisions.Decision.AnswerResourceScore,
    ];
    expect(predicate.probability).toBeGreaterThan(0);
    expect(predicate.probability).toBeLessThan(1);
    expect(choice.probabilities.map((p) => p.value)).toEqual(['returns', 'billing', true]);
    expect(Math.abs(sum(choice.probabilities.map((p) => p.probability)) - 1)).toBeLessThanOrEqual(1e-6);
    const best = choice.probabilities.reduce((a, b) => (b.probability > a.probability ? b : a));
    expect(choice.choice).toBe(best.value);
    expect(choice.confidence).toBe(best.probability);
    expect(score.probabilities.map((p) => [p.value, p.label])).toEqual([
      [0, 'cosmetic'],
      [1, 'broken'],
    ]);
    expect(score.score).toBeCloseTo(score.probabilities[1]!.probability, 6);
    expect(score.confidence).toBe(Math.max(...score.probabilities.map((p) => p.probability)));

    const { usage } = decision;
    expect(usage.output_tokens).toBe(3);
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    // Asked again, the input's prefix comes from the prefix cache and counts as cached.
    const again = await openai().decisions.create(DECISION_PARAMS);
    expect(again.usage.input_tokens).toBe(usage.input_tokens);
    expect(again.usage.input_tokens_details.cached_tokens).toBeGreaterThan(0);
    expect(again.answers).toEqual(decision.answers);
  });

  it("the SDK raises its typed errors: AuthenticationError, BadRequestError (param named), NotFoundError", async () => {
    await expect(openai(url, 'wrong-key').decisions.create(DECISION_PARAMS)).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

    const tooMany = { ...DECISION_PARAMS, questions: [{ type: 'choice' as const, instructions: 'x', choices: Array.from({ length: 256 }, (_, i) => ({ value: `v${i}` })) }] };
    const err = await openai().decisions.create(tooMany).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('questions[0].choices');
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('at most 255 choices');
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).type).toBe('invalid_request_error');

    const image = await openai()
      .decisions.create({ ...DECISION_PARAMS, input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' }] }] })
      .catch((e: unknown) => e);
    expect(image).toBeInstanceOf(OpenAI.BadRequestError);
    expect((image as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('input_image parts are not supported');

    const unknown = await openai().decisions.create({ ...DECISION_PARAMS, model: 'gpt-6-luna' }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');

    const long = await openai().decisions.create({ ...DECISION_PARAMS, input: longState(5000) }).catch((e: unknown) => e);
    expect(long).toBeInstanceOf(OpenAI.BadRequestError);
    expect((long as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
    // Named as this door's request names it: the input, never our word "state".
    expect((long as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(/^400 input is \d+ tokens; .*trim the input/);
    expect((long as InstanceType<typeof OpenAI.BadRequestError>).message).not.toMatch(/\bstate\b/);
  });

  it("client.models.list() and retrieve() read OpenAI's Model fields: id, object, created (the version's date), owned_by", async () => {
    const listed = [];
    for await (const model of openai().models.list()) listed.push(model);
    const version = listed.find((m) => m.id === 'svc-alpha-2026-10');
    expect(version).toMatchObject({ object: 'model', created: Date.UTC(2026, 9, 1) / 1000, owned_by: 'decision-engine' });
    expect(await openai().models.retrieve('svc-alpha')).toMatchObject({ id: 'svc-alpha-2026-10', created: Date.UTC(2026, 9, 1) / 1000, owned_by: 'decision-engine' });
  });
});

describe('a key given twice or a lone surrogate inside an array: every door names the place, indices included', () => {
  // JSON.stringify cannot write these bodies; `pad` (40 KB of spaces in a string) makes the body one the body thread reads.
  const pad = (large: boolean) => (large ? ' '.repeat(40_000) : '');
  const choices = (second: string, large: boolean) =>
    `{"model":"svc-alpha","input":"s${pad(large)}","questions":[{"type":"predicate","instructions":"p"},{"type":"choice","instructions":"p","choices":[{"value":"a"},${second}]}]}`;

  for (const large of [false, true]) {
    it(`/v1/decisions: the message and param (the SDK's BadRequestError.param) point into the choice${large ? ' (a body of 40 KB)' : ''}`, async () => {
      const cases: Array<[string, string, string]> = [
        [choices('{"value":"b","value":"c"}', large), 'duplicate key "value" in questions[1].choices[1]; each key may appear once', 'questions[1].choices[1].value'],
        [choices('{"value":"b\\ud800"}', large), 'a string in questions[1].choices[1].value holds a lone surrogate', 'questions[1].choices[1].value'],
        [`{"model":"svc-alpha","model":"svc-alpha","input":"s${pad(large)}","questions":[]}`, 'duplicate key "model"; each key may appear once', 'model'],
        // Named as written: "state" is no field of this door, not its `input`.
        [`{"model":"svc-alpha","input":"s${pad(large)}","questions":[],"state":"a","state":"b"}`, 'duplicate key "state"; each key may appear once', 'state'],
      ];
      for (const [body, message, param] of cases) {
        const res = await post('/v1/decisions', body);
        expect(res.status, body.slice(0, 60)).toBe(400);
        expect(res.body.error).toMatchObject({ type: 'invalid_request_error', param, code: null });
        expect(res.body.error.message).toContain(`request body: ${message}`);
      }
      // The official client (its body swapped for the raw text: it cannot write a key twice) raises BadRequestError with that param.
      const sdk = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_KEY, maxRetries: 0, fetch: (input, init) => fetch(input, { ...init, body: cases[0]![0] }) });
      const err = await sdk.decisions.create(DECISION_PARAMS).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('questions[1].choices[1].value');
    });

    it(`/v1/systemone and /v1/decide keep their shapes, the message naming the array index${large ? ' (a body of 40 KB)' : ''}`, async () => {
      const body = `{"model":"svc-alpha","state":{"rows":[{"a":1},{"a":2,"a":3}],"note":"${pad(large)}"},"questions":{"q":{"type":"noul","instructions":"r"}}}`;
      const where = 'request body: duplicate key "a" in state.rows[1]; each key may appear once';
      const s1 = await systemone(body);
      expect(s1.status).toBe(422);
      expect(s1.body).toEqual({ detail: [{ type: 'json_invalid', loc: ['body'], msg: where }] });
      const ours = await post('/v1/decide', body);
      expect(ours.status).toBe(400);
      expect(ours.body).toMatchObject({ code: 'invalid_question', message: where });
      const surrogate = await systemone(`{"model":"svc-alpha","state":["a","b\\udc00"],"questions":{"q":{"type":"score","instructions":"r${pad(large)}","criteria":["x","y"]}}}`);
      expect(surrogate.body.detail[0].msg).toContain('a string in state[1] holds a lone surrogate');
    });
  }
});

describe('the same question through every door', () => {
  const STATE = { ticket: 'My card was charged twice for one order and I want the money back today.', customer: { tier: 'gold' } };

  it('noul/predicate, choice and score: /v1/decide, /v1/systemone and /v1/decisions agree within 1e-6', async () => {
    const decide = await post('/v1/decide', {
      model: 'svc-alpha',
      state: STATE,
      questions: {
        refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
        topic: { type: 'choice', instructions: 'What is the ticket about?', criteria: { shipping: 'Delivery and parcels', billing: 'Charges and invoices', other: 'Anything else' } },
        urgency: { type: 'score', instructions: 'How urgent is it?', criteria: { '0': 'not urgent', '1': 'somewhat urgent', '2': 'urgent' } },
      },
    });
    const s1 = await systemone({
      model: 'svc-alpha',
      state: STATE,
      questions: {
        refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
        topic: { type: 'choice', instructions: 'What is the ticket about?', criteria: { shipping: 'Delivery and parcels', billing: 'Charges and invoices', other: 'Anything else' } },
        urgency: { type: 'score', instructions: 'How urgent is it?', criteria: ['not urgent', 'somewhat urgent', 'urgent'] },
      },
    });
    const oa = await openai().decisions.create({
      model: 'svc-alpha',
      input: [{ role: 'user', content: [{ type: 'input_json', data: STATE }] }],
      questions: [
        { type: 'predicate', instructions: 'Does the customer ask for a refund?' },
        {
          type: 'choice',
          instructions: 'What is the ticket about?',
          choices: [
            { value: 'shipping', description: 'Delivery and parcels' },
            { value: 'billing', description: 'Charges and invoices' },
            { value: 'other', description: 'Anything else' },
          ],
        },
        { type: 'score', instructions: 'How urgent is it?', levels: [{ label: 'not urgent' }, { label: 'somewhat urgent' }, { label: 'urgent' }] },
      ],
    });
    expect(decide.status).toBe(200);
    expect(s1.status).toBe(200);
    const d = decide.body.answers;
    const a = s1.body.answers;
    const [predicate, choice, score] = oa.answers as any[];
    const close = (x: number, y: number) => expect(Math.abs(x - y)).toBeLessThanOrEqual(1e-6 + 1e-12);

    close(a.refund.noul, d.refund.probs.yes);
    close(predicate.probability, d.refund.probs.yes);
    for (const [i, key] of ['shipping', 'billing', 'other'].entries()) {
      close(a.topic.probabilities[key], d.topic.probs[key]);
      close(choice.probabilities[i].probability, d.topic.probs[key]);
    }
    for (const i of [0, 1, 2]) {
      close(a.urgency.probabilities[String(i)], d.urgency.probs[String(i)]);
      close(score.probabilities[i].probability, d.urgency.probs[String(i)]);
    }
    // The same prompt tokens were read through every door.
    expect(s1.body.usage.input_tokens).toBe(decide.body.usage.input_tokens);
    expect(oa.usage.input_tokens).toBe(decide.body.usage.input_tokens);
  });
});

describe('rate limits, load shedding, metrics, OpenAPI', () => {
  it('over the per-key rate limit: 429 with Retry-After and retry-after-ms in each dialect; the SDK raises RateLimitError', async () => {
    // The limited app's bucket holds one request for this key: the first call takes it.
    expect((await systemone(QUICKSTART, undefined, limitedUrl)).status).toBe(200);
    const s1 = await systemone(QUICKSTART, undefined, limitedUrl);
    expect(s1.status).toBe(429);
    expect(s1.body.detail.error_type).toBe('rate_limit_error');
    expect(Number(s1.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(s1.headers.get('retry-after-ms'))).toBe(Number(s1.headers.get('retry-after')) * 1000);
    expect(s1.headers.get('x-typesafe-request-id')).toMatch(TYPESAFE_ID);

    const err = await openai(limitedUrl).decisions.create(DECISION_PARAMS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after-ms')).toMatch(/^\d+000$/);
  });

  it('a full engine queue is shed as 429 in each dialect', async () => {
    const s1 = await systemone(QUICKSTART, undefined, sheddingUrl);
    expect(s1.status).toBe(429);
    expect(s1.headers.get('retry-after-ms')).toBe('1000');
    const err = await openai(sheddingUrl).decisions.create(DECISION_PARAMS).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
  });

  it('metrics count the new routes; the OpenAPI document lists them', async () => {
    await systemone(QUICKSTART);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/decide_http_requests_total\{method="POST",route="\/v1\/systemone",status="200"\} [1-9]/);
    expect(metrics).toMatch(/route="\/v1\/decisions"/);
    const doc = (await (await fetch(`${url}/openapi.json`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).json()) as {
      paths: Record<string, { post: { operationId: string; responses: Record<string, unknown> } }>;
    };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/systemone', '/v1/decisions']));
    expect(doc.paths['/v1/decisions']!.post.operationId).toBe('createDecision');
    expect(Object.keys(doc.paths['/v1/systemone']!.post.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403', '422', '429']));
  });

  it('the OpenAPI request schemas accept what the doors answer (null descriptions, a cache breakpoint) and refuse a value over 128 characters, as the doors do', async () => {
    const doc = (await (await fetch(`${url}/openapi.json`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).json()) as {
      paths: Record<string, { post: { requestBody: { content: { 'application/json': { schema: unknown } } } } }>;
    };
    // A JSON Schema validator (fastify's ajv, nothing removed or coerced) over the published schemas.
    const checker = Fastify({ ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } } });
    for (const path of ['/v1/decisions', '/v1/systemone']) {
      checker.post(path, { schema: { body: doc.paths[path]!.post.requestBody.content['application/json'].schema } }, async () => ({ ok: true }));
    }
    const schemaAccepts = async (path: string, body: unknown) =>
      (await checker.inject({ method: 'POST', url: path, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } })).statusCode === 200;
    const decisions = (value: string) => ({
      model: 'svc-alpha',
      input: 'The screen arrived broken.',
      questions: [
        { type: 'choice', instructions: [{ type: 'input_text', text: 'Which?', prompt_cache_breakpoint: null }], choices: [{ value, description: null }, { value: 'b' }] },
        { type: 'score', instructions: 'How bad?', levels: [{ label: 'low', description: null }, { label: 'high' }] },
      ],
    });
    const s1 = (key: string) => ({ model: 'svc-alpha', state: 's', questions: { q: { type: 'choice', instructions: 'Which?', criteria: { [key]: null, b: 'y' } } } });
    try {
      for (const [path, body, accepted] of [
        ['/v1/decisions', decisions('a'), true],
        ['/v1/decisions', decisions('a'.repeat(129)), false],
        ['/v1/systemone', s1('a'.repeat(128)), true],
        ['/v1/systemone', s1('a'.repeat(129)), false],
      ] as const) {
        const res = await post(path, body);
        expect(res.status, `${path} ${JSON.stringify(res.body).slice(0, 200)}`).toBe(accepted ? 200 : 400);
        expect(await schemaAccepts(path, body), path).toBe(accepted);
      }
    } finally {
      await checker.close();
    }
  });
});
