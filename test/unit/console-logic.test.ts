/**
 * The console's pure pieces under Node (the browser test drives them through the page): what each
 * API error is called, the "Copy as" snippets (a state with quotes survives the shell; noul, choice
 * and score criteria in each dialect's form), and reading /metrics text.
 */
import { execFileSync } from 'node:child_process';

import { describe as group, expect, it } from 'vitest';

import { asCurl, asOpenAi, asSystemOne, copyAsProblem, shellQuote } from '../../console/src/copy-as.js';
import { healthFigures, parseMetrics, perSecond } from '../../console/src/metrics-text.js';
import { ApiProblem, describe } from '../../console/src/problems.js';
import { rowFailure } from '../../console/src/result-rows.js';
import type { DecideRequest } from '../../console/src/types.js';
import { ApiError } from '../../src/api/errors.js';
import { parseDecisions } from '../../src/api/openai/validate.js';
import { parseSystemOne } from '../../src/api/systemone/validate.js';
import { validateDecideRequest, type NormalizedQuestion } from '../../src/api/validate.js';
import { resultRow } from '../../src/batches/chunk-scoring.js';
import { parseEndpointLine } from '../../src/batches/openai/lines.js';
import type { RawLine } from '../../src/batches/jsonl-lines.js';

/** A question as the model reads it: type, instructions, each option's label (score: its key) and text. */
function asTheModelReadsIt(q: NormalizedQuestion) {
  const shown = (o: { key: string; description?: string }) => (o.description !== undefined && o.description.trim() !== '' ? o.description : o.key);
  return {
    type: q.type,
    instructions: q.instructions,
    described: q.options.some((o) => o.description !== undefined && o.description.trim() !== ''),
    options: q.options.map((o) => ({ label: q.type === 'score' ? o.key : undefined, text: shown(o) })),
  };
}

/** Levels 0..n-1 (one without a description), descriptions of no and yes: System One can say it all. */
const EXPRESSIBLE: DecideRequest = {
  model: 'svc-alpha',
  state: 'where is my parcel',
  questions: {
    refund: { type: 'noul', instructions: 'Refund?', criteria: { no: 'keeps it', yes: 'wants money back' } },
    topic: { type: 'choice', instructions: 'Topic?', criteria: { billing: 'Charges', shipping: '' } },
    urgency: { type: 'score', instructions: 'Urgent?', criteria: { '2': 'very', '1': '', '0': 'not' } },
  },
};

const REQUEST: DecideRequest = {
  model: 'svc-alpha',
  state: `it's "late" $HOME \`x\` \\ done`,
  questions: {
    refund: { type: 'noul', instructions: 'Refund?', criteria: { no: 'keeps it', yes: 'wants money back' } },
    topic: { type: 'choice', instructions: 'Topic?', criteria: { billing: 'Charges', shipping: '' } },
    urgency: { type: 'score', instructions: 'Urgent?', criteria: { '10': 'very', '2': 'some', '0': 'not' } },
  },
};

group('what an API error is called', () => {
  it('names each status by what it means, with the message, request id and Retry-After', () => {
    expect(describe(new ApiProblem(400, 'invalid_question', 'questions["q"].type: unknown', 'req_1'))).toEqual({
      title: 'The request was refused',
      detail: 'questions["q"].type: unknown (request req_1)',
    });
    expect(describe(new ApiProblem(429, 'rate_limited', 'slow down', 'req_2', 7)).title).toBe('Rate limited: try again in 7 s');
    expect(describe(new ApiProblem(429, 'rate_limited', 'slow down')).title).toBe('Rate limited: try again shortly');
    expect(describe(new ApiProblem(503, 'server_error', 'no model is loaded')).title).toMatch(/not ready.*loading/);
    expect(describe(new ApiProblem(401, 'invalid_key', 'the API key is not valid')).title).toBe('The API key was not accepted');
    expect(describe(new ApiProblem(500, 'server_error', 'Internal server error')).title).toMatch(/Server error 500: retry with backoff/);
    expect(describe(new ApiProblem(0, 'unreachable', 'fetch failed')).title).toBe('The server cannot be reached');
    expect(describe(new Error('boom'))).toEqual({ title: 'Something went wrong in the page', detail: 'boom' });
  });

  it('calls a 4xx it does not list a refused request, never a server error to retry', () => {
    for (const status of [405, 408, 409, 422, 431]) {
      const { title } = describe(new ApiProblem(status, `http_${status}`, 'request headers too large'));
      expect(title, String(status)).toBe(`The request was refused (HTTP ${status})`);
      expect(title, String(status)).not.toMatch(/retry|server error/i);
    }
    expect(describe(new ApiProblem(502, 'http_502', 'Bad Gateway')).title).toBe('Server error 502: retry with backoff');
  });
});

group('Copy as', () => {
  it('curl: the body survives the shell byte for byte, and the key is read from the environment', () => {
    const curl = asCurl('http://127.0.0.1:8080', REQUEST);
    expect(curl).toContain('-H "Authorization: Bearer $DECIDE_API_KEY"');
    const word = /-d ('[\s\S]*')$/.exec(curl)![1]!;
    expect(word).toBe(shellQuote(JSON.stringify(REQUEST)));
    expect(execFileSync('bash', ['-c', `printf %s ${word}`], { encoding: 'utf8' })).toBe(JSON.stringify(REQUEST));
  });

  it('/v1/systemone: noul criteria as {true, false}, score levels 0..n-1 as the list of their texts, choice as is', () => {
    const body = JSON.parse(asSystemOne(EXPRESSIBLE));
    expect(body.questions.refund.criteria).toEqual({ true: 'wants money back', false: 'keeps it' });
    expect(body.questions.urgency.criteria).toEqual(['not', '1', 'very']);
    expect(body.questions.topic.criteria).toEqual({ billing: 'Charges', shipping: '' });
    expect(body.state).toBe(EXPRESSIBLE.state);
  });

  it('openai SDK: predicate / choice with choices / score with levels labelled by their text, in question order', () => {
    const plain = { ...EXPRESSIBLE, questions: { ...EXPRESSIBLE.questions, refund: { type: 'noul' as const, instructions: 'Refund?' } } };
    const script = asOpenAi('http://127.0.0.1:8080', plain);
    expect(script).toContain("baseURL: \"http://127.0.0.1:8080/v1\", apiKey: process.env.DECIDE_API_KEY");
    const params = JSON.parse(/client\.decisions\.create\(([\s\S]*)\);\nconsole/.exec(script)![1]!);
    expect(params.questions).toEqual([
      { type: 'predicate', name: 'refund', instructions: 'Refund?' },
      { type: 'choice', name: 'topic', instructions: 'Topic?', choices: [{ value: 'billing', description: 'Charges' }, { value: 'shipping' }] },
      { type: 'score', name: 'urgency', instructions: 'Urgent?', levels: [{ label: 'not' }, { label: '1' }, { label: 'very' }] },
    ]);
    expect(params.input).toBe(plain.state);
  });

  it('each snippet asks the model what /v1/decide asks it (the server\'s own parsers read all three)', () => {
    const plain = { ...EXPRESSIBLE, questions: { ...EXPRESSIBLE.questions, refund: { type: 'noul' as const, instructions: 'Refund?' } } };
    for (const request of [EXPRESSIBLE, plain]) {
      const decide = validateDecideRequest(request).questions.map(asTheModelReadsIt);
      expect(copyAsProblem('systemone', request)).toBeUndefined();
      const systemOne = parseSystemOne(JSON.parse(asSystemOne(request)));
      if (!systemOne.ok) throw new Error(JSON.stringify(systemOne.error.body));
      expect(systemOne.call.request.questions.map(asTheModelReadsIt)).toEqual(decide);
    }
    expect(copyAsProblem('openai', plain)).toBeUndefined();
    const params = JSON.parse(/client\.decisions\.create\(([\s\S]*)\);\nconsole/.exec(asOpenAi('http://x', plain))![1]!);
    const decisions = parseDecisions(params);
    if (!decisions.ok) throw new Error(JSON.stringify(decisions.error.body));
    expect(decisions.call.request.questions.map(asTheModelReadsIt)).toEqual(validateDecideRequest(plain).questions.map(asTheModelReadsIt));
  });

  it('a request a dialect cannot ask as it is offers no snippet there, and says why', () => {
    expect(copyAsProblem('systemone', REQUEST)).toMatch(/question "urgency" with levels 0, 2, 10 .* use levels 0, 1, 2/);
    expect(copyAsProblem('openai', { ...REQUEST, questions: { urgency: REQUEST.questions.urgency! } })).toMatch(/question "urgency" with levels 0, 2, 10/);
    expect(copyAsProblem('openai', EXPRESSIBLE)).toMatch(/predicate questions take no descriptions .* "refund"/);
    const long = { ...EXPRESSIBLE, questions: { urgency: { type: 'score' as const, instructions: 'Urgent?', criteria: { '0': 'x'.repeat(129), '1': 'y' } } } };
    expect(copyAsProblem('openai', long)).toMatch(/at most 128 characters/);
    expect(copyAsProblem('systemone', long)).toBeUndefined();
  });
});

group('/metrics text', () => {
  it('reads samples with escaped label values and sums the health figures', () => {
    const samples = parseMetrics(
      [
        '# HELP decide_http_requests_total x',
        'decide_http_requests_total{method="POST",route="/v1/decide",status="200"} 5',
        'decide_http_requests_total{method="POST",route="/v1/systemone",status="200"} 2',
        'decide_http_requests_total{method="POST",route="/v1/decide",status="400"} 9',
        'decide_engine_cached_tokens_total{model="a \\"quoted\\" id"} 30',
        'decide_engine_prefix_tokens_computed_total{model="a \\"quoted\\" id"} 10',
        'decide_engine_queue_depth{model="m",queue="live"} 1',
        'decide_engine_queue_depth{model="m",queue="batch"} 4',
        'decide_models_loaded 1',
      ].join('\n'),
    );
    expect(samples.find((s) => s.name === 'decide_engine_cached_tokens_total')!.labels.model).toBe('a "quoted" id');
    const f = healthFigures(samples);
    expect(f.decisionsAnswered).toBe(7);
    expect(f.prefixHitRate).toBe(0.75);
    expect([f.queueLive, f.queueBatch, f.modelsLoaded]).toEqual([1, 4, 1]);
    expect(healthFigures(parseMetrics('')).prefixHitRate).toBeNull();
  });

  it('a rate between two readings is never negative: a counter that went down was reset by a restart', () => {
    expect(perSecond({ at: 0, value: 30 }, { at: 2000, value: 40 })).toBe(5);
    // 30 decisions, then the server restarted and answered 4: 4 in those 2 s, not -26.
    expect(perSecond({ at: 0, value: 30 }, { at: 2000, value: 4 })).toBe(2);
    expect(perSecond({ at: 0, value: 30 }, { at: 2000, value: 0 })).toBe(0);
    expect(perSecond({ at: 1000, value: 3 }, { at: 1000, value: 5 })).toBeNull();
  });
});

group("a job's failed rows, in either dialect", () => {
  const rawLine = (value: unknown): RawLine => {
    const bytes = Buffer.from(JSON.stringify(value));
    return { start: 0, end: bytes.length + 1, lineNo: 1, bytes, length: bytes.length, blank: false };
  };
  /** The result row the batch runner writes for one OpenAI-dialect line (lines.ts), parsed. */
  const openAiRow = (value: unknown, endpoint: string) => {
    const parsed = parseEndpointLine(rawLine(value), { model: 'm', seen: new Map(), endpoint });
    return JSON.parse(parsed.format({ ok: false, error: parsed.error ?? new ApiError('server_error', 'x') })) as unknown;
  };

  it("reads a refused request's status and its endpoint's error body, for each endpoint", () => {
    const bad: Record<string, unknown> = {
      '/v1/decide': { model: 'm', state: 'x', questions: { q: { type: 'bogus', instructions: '?' } } },
      '/v1/systemone': { model: 'm', state: 'x', questions: { q: { type: 'bogus', instructions: '?' } } },
      '/v1/decisions': { model: 'm', input: 'x', questions: [{ type: 'bogus', instructions: '?' }] },
    };
    for (const [endpoint, body] of Object.entries(bad)) {
      const failure = rowFailure(openAiRow({ custom_id: 'c', method: 'POST', url: endpoint, body }, endpoint));
      expect(failure?.code, endpoint).toMatch(/^HTTP 400\b/);
      expect(failure?.message, endpoint).toMatch(/type/);
    }
    const shape = rowFailure(openAiRow({ custom_id: 'c', method: 'POST', url: '/v1/systemone', body: { model: 'm', state: 'x', questions: {} } }, '/v1/systemone'));
    expect(shape).toEqual({ code: 'HTTP 422 validation_error', message: expect.stringMatching(/body\.questions: /) });
  });

  it('reads a line that was no request, our failed rows, and passes answered rows', () => {
    const broken = rowFailure(openAiRow({ custom_id: 'c', method: 'GET', url: '/v1/decide', body: {} }, '/v1/decide'));
    expect(broken).toEqual({ code: 'invalid_question', message: expect.stringMatching(/method/) });
    expect(rowFailure(JSON.parse(resultRow('r1', { ok: false, error: new ApiError('invalid_question', 'line 5: not valid JSON') })))).toEqual({
      code: 'invalid_question',
      message: 'line 5: not valid JSON',
    });
    expect(rowFailure({ id: 'batch_req_1', custom_id: 'c', response: { status_code: 200, request_id: 'dec_1', body: {} }, error: null })).toBeUndefined();
    expect(rowFailure({ custom_id: 'c', id: 'dec_1', answers: {}, usage: {} })).toBeUndefined();
  });
});
