/**
 * The compatibility routes against a hostile client (app.inject on one server, the tiny model):
 * what a user of /v1/systemone, /v1/decisions and /v1/files sends by mistake gets the dialect's own
 * documented shape and status (docs/compatibility.md), never ours and never a 500.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, tempModels, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;

const TYPESAFE_ID = /^req_[0-9a-f]{32}$/;
const JSON_TYPE = { 'content-type': 'application/json' };

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false });
});

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

describe('/v1/decisions: another method or a path below it, in OpenAI\'s error shape', () => {
  const expectOpenAiError = (res: { statusCode: number; json(): any }, status: number, what: string) => {
    expect(res.statusCode, what).toBe(status);
    const body = res.json();
    expect(Object.keys(body), what).toEqual(['error']);
    expect(body.error).toMatchObject({ type: 'invalid_request_error', param: null, code: null });
    expect(body.error.message, what).toMatch(/^Invalid URL \((GET|PUT|PATCH|DELETE|OPTIONS|POST) \/v1\/decisions/);
  };

  it('another method is 405 with Allow: POST', async () => {
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
      const res = await app.inject({ method, url: '/v1/decisions', headers: AUTH });
      expectOpenAiError(res, 405, method);
      expect(res.headers.allow).toBe('POST');
    }
  });

  it('a path below it is 404, the trailing slash included; the query string is never repeated', async () => {
    for (const [method, url] of [
      ['POST', '/v1/decisions/'],
      ['POST', '/v1/decisions/x?key=secret'],
      ['GET', '/v1/decisions/dec_1'],
    ] as const) {
      const res = await app.inject({ method, url, headers: { ...AUTH, ...JSON_TYPE }, payload: method === 'POST' ? '{}' : undefined });
      expectOpenAiError(res, 404, url);
      expect(res.body).not.toContain('secret');
    }
  });

  it('without a valid key, or with a body that does not parse, it is still OpenAI\'s shape', async () => {
    const noKey = await app.inject({ method: 'GET', url: '/v1/decisions' });
    expect(noKey.statusCode).toBe(401);
    expect(noKey.json().error).toMatchObject({ code: 'invalid_api_key' });
    const badBody = await app.inject({ method: 'POST', url: '/v1/decisions/', headers: { ...AUTH, ...JSON_TYPE }, payload: '{bad' });
    expect(badBody.statusCode).toBe(400);
    expect(badBody.json().error).toMatchObject({ type: 'invalid_request_error' });
  });
});

describe('/v1/systemone: what the vendor router answers before the key and the body', () => {
  it('another method is 405 Method Not Allowed with or without a key, and whatever the body', async () => {
    const cases = [
      { method: 'PUT' as const, headers: {} },
      { method: 'GET' as const, headers: { authorization: 'Basic eA==' } },
      // A JSON Content-Type with an empty body: the body is never read.
      { method: 'DELETE' as const, headers: { ...AUTH, ...JSON_TYPE } },
      { method: 'PATCH' as const, headers: { authorization: 'Bearer not-a-key', ...JSON_TYPE }, payload: '{not json' },
      { method: 'OPTIONS' as const, headers: {} },
    ];
    for (const c of cases) {
      const res = await app.inject({ method: c.method, url: '/v1/systemone', headers: c.headers, payload: c.payload });
      expect(res.statusCode, c.method).toBe(405);
      expect(res.json()).toEqual({ detail: 'Method Not Allowed' });
      expect(res.headers.allow).toBe('POST');
      expect(res.headers['x-typesafe-request-id'], c.method).toMatch(TYPESAFE_ID);
    }
  });

  it('a path below /v1/systemone is 404 {"detail":"Not Found"} with the TypeSafe request id, key or not', async () => {
    for (const [method, url, headers] of [
      ['POST', '/v1/systemone/', {}],
      ['POST', '/v1/systemone/x?y=1', { ...AUTH, ...JSON_TYPE }],
      ['GET', '/v1/systemone/models', { authorization: 'Bearer not-a-key' }],
      ['OPTIONS', '/v1/systemone/x', {}],
    ] as const) {
      const res = await app.inject({ method, url, headers, payload: method === 'POST' ? '{}' : undefined });
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toEqual({ detail: 'Not Found' });
      expect(res.headers['x-typesafe-request-id'], url).toMatch(TYPESAFE_ID);
    }
  });

  it('POST still checks the key before the body: 403 without one, 401 for a bad one, 422 for a bad body', async () => {
    const noKey = await app.inject({ method: 'POST', url: '/v1/systemone', headers: JSON_TYPE, payload: '{bad' });
    expect(noKey.statusCode).toBe(403);
    expect(noKey.json().detail.error_type).toBe('authentication_error');
    const badKey = await app.inject({ method: 'POST', url: '/v1/systemone', headers: { authorization: 'Bearer nope', ...JSON_TYPE }, payload: '{bad' });
    expect(badKey.statusCode).toBe(401);
    const badBody = await app.inject({ method: 'POST', url: '/v1/systemone', headers: { ...AUTH, ...JSON_TYPE }, payload: '{bad' });
    expect(badBody.statusCode).toBe(422);
    expect(badBody.json().detail[0]).toMatchObject({ type: 'json_invalid', loc: ['body'] });
    for (const res of [noKey, badKey, badBody]) expect(res.headers['x-typesafe-request-id']).toMatch(TYPESAFE_ID);
  });
});

describe('/v1/decisions: messages that say what is wrong', () => {
  it('an empty model is named as such', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/decisions',
      headers: { ...AUTH, ...JSON_TYPE },
      payload: { model: '', input: 'x', questions: [{ type: 'predicate', instructions: 'x' }] },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: 'model', message: 'model: required, a non-empty string, got an empty string' });
  });

  it('prompt_cache_breakpoint is ignored on a content part and unknown at the top level', async () => {
    const questions = [{ type: 'predicate', instructions: 'Is it late?' }];
    const onPart = await app.inject({
      method: 'POST',
      url: '/v1/decisions',
      headers: { ...AUTH, ...JSON_TYPE },
      payload: { model: 'svc-alpha', input: [{ role: 'user', content: [{ type: 'input_text', text: 'late', prompt_cache_breakpoint: { mode: 'explicit' } }] }], questions },
    });
    expect(onPart.statusCode).toBe(200);
    const plain = await app.inject({ method: 'POST', url: '/v1/decisions', headers: { ...AUTH, ...JSON_TYPE }, payload: { model: 'svc-alpha', input: 'late', questions } });
    expect(onPart.json().answers[0].probability).toBeCloseTo(plain.json().answers[0].probability, 6);
    const topLevel = await app.inject({
      method: 'POST',
      url: '/v1/decisions',
      headers: { ...AUTH, ...JSON_TYPE },
      payload: { model: 'svc-alpha', input: 'late', questions, prompt_cache_breakpoint: { mode: 'explicit' } },
    });
    expect(topLevel.statusCode).toBe(400);
    expect(topLevel.json().error.param).toBe('prompt_cache_breakpoint');
  });

  it('an unknown field on a content part is a 400 naming it (a typo is never ignored)', async () => {
    const questions = [{ type: 'predicate', instructions: 'Is it late?' }];
    for (const [part, field] of [
      [{ type: 'input_text', text: 'late', prompt_cache_breakpont: { mode: 'explicit' } }, 'prompt_cache_breakpont'],
      [{ type: 'input_json', data: { a: 1 }, text: 'x' }, 'text'],
    ] as const) {
      const res = await app.inject({ method: 'POST', url: '/v1/decisions', headers: { ...AUTH, ...JSON_TYPE }, payload: { model: 'svc-alpha', input: [{ role: 'user', content: [part] }], questions } });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ type: 'invalid_request_error', param: `input[0].content[0].${field}`, message: expect.stringContaining('unknown field') });
    }
    // Instructions given as parts are read by the same rule.
    const inInstructions = await app.inject({
      method: 'POST',
      url: '/v1/decisions',
      headers: { ...AUTH, ...JSON_TYPE },
      payload: { model: 'svc-alpha', input: 'late', questions: [{ type: 'predicate', instructions: [{ type: 'input_text', text: 'Late?', colour: 'red' }] }] },
    });
    expect(inInstructions.statusCode).toBe(400);
    expect(inInstructions.json().error.param).toBe('questions[0].instructions[0].colour');
  });
});

describe('/v1/files: another method, a path below, no key or a malformed URL, in OpenAI\'s error shape', () => {
  const expectOpenAiError = (res: { statusCode: number; json(): any }, status: number, what: string) => {
    expect(res.statusCode, what).toBe(status);
    const body = res.json();
    expect(Object.keys(body), what).toEqual(['error']);
    expect(typeof body.error.message, what).toBe('string');
    expect(body.error.type, what).toBe('invalid_request_error');
    return body.error as { message: string; code: string | null };
  };

  it('another method is 405 naming the methods in Allow; a deeper path is 404; the query string is never repeated', async () => {
    for (const [method, url, allow] of [
      ['PUT', '/v1/files', 'GET, POST'],
      ['DELETE', '/v1/files?secret=1', 'GET, POST'],
      ['POST', '/v1/files/file_abc', 'GET, DELETE'],
      ['PATCH', '/v1/files/file_abc', 'GET, DELETE'],
      ['DELETE', '/v1/files/file_abc/content', 'GET'],
    ] as const) {
      const res = await app.inject({ method, url, headers: AUTH });
      const error = expectOpenAiError(res, 405, `${method} ${url}`);
      expect(error.message).toMatch(/^Invalid URL \(/);
      expect(res.headers.allow, url).toBe(allow);
      expect(res.body).not.toContain('secret');
    }
    for (const [method, url] of [['GET', '/v1/files/file_abc/other'], ['POST', '/v1/files/a/b/c']] as const) {
      const error = expectOpenAiError(await app.inject({ method, url, headers: AUTH }), 404, url);
      expect(error.message).toMatch(/^Invalid URL \(/);
    }
  });

  it('without a key, and with a malformed URL, it is still OpenAI\'s shape', async () => {
    const noKey = await app.inject({ method: 'PUT', url: '/v1/files' });
    expect(expectOpenAiError(noKey, 401, 'no key').code).toBe('invalid_api_key');
    const badUrl = await app.inject({ method: 'GET', url: '/v1/files/%E0%A4%A', headers: AUTH });
    expect(expectOpenAiError(badUrl, 400, 'malformed').message).toBe('malformed URL');
    expect(badUrl.headers['x-request-id']).toMatch(/^req_/);
    // Elsewhere the API's own shape, as before.
    const ours = await app.inject({ method: 'GET', url: '/v1/models/%E0%A4%A', headers: AUTH });
    expect(ours.statusCode).toBe(400);
    expect(ours.json()).toMatchObject({ code: 'invalid_question', message: 'malformed URL' });
  });
});

describe('/v1/files: a form with too many parts', () => {
  it("names the Files form's fields (file and purpose), not the batch form's", async () => {
    const boundary = 'hostile-boundary';
    const part = (name: string, value: string, filename?: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}\r\n\r\n${value}\r\n`;
    const line = JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/decisions', body: { model: 'svc-alpha', input: 'x', questions: [] } });
    const payload = part('purpose', 'batch') + part('file', line, 'a.jsonl') + part('file', line, 'b.jsonl') + `--${boundary}--\r\n`;
    const res = await app.inject({
      method: 'POST',
      url: '/v1/files',
      headers: { ...AUTH, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.type).toBe('invalid_request_error');
    expect(res.json().error.message).toBe('request body: too many form parts; send the fields file and purpose, once each');
  });
});

describe('/v1/files: a form part without a name, a repeated field, a file sent as a text field', () => {
  const boundary = 'hostile-boundary';
  const part = (name: string | undefined, value: string, filename?: string) =>
    `--${boundary}\r\nContent-Disposition: form-data${name === undefined ? '' : `; name="${name}"`}${filename ? `; filename="${filename}"` : ''}\r\n\r\n${value}\r\n`;
  const line = JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/decisions', body: { model: 'svc-alpha', input: 'x', questions: [] } });
  const upload = (...parts: string[]) =>
    app.inject({
      method: 'POST',
      url: '/v1/files',
      headers: { ...AUTH, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: `${parts.join('')}--${boundary}--\r\n`,
    });
  const expectOpenAi400 = (res: Awaited<ReturnType<typeof upload>>, param: string | null, message: string | RegExp) => {
    expect(res.statusCode).toBe(400);
    const { error } = res.json();
    expect(error).toMatchObject({ type: 'invalid_request_error', param, code: null });
    if (typeof message === 'string') expect(error.message).toBe(message);
    else expect(error.message).toMatch(message);
  };

  it('a part without a name, a text field or a file part: 400 saying so, never a 500', async () => {
    for (const nameless of [part(undefined, 'batch'), part(undefined, line, 'a.jsonl')]) {
      expectOpenAi400(
        await upload(part('purpose', 'batch'), nameless, part('file', line, 'a.jsonl')),
        null,
        'request body: a form part has no name (Content-Disposition: form-data without name="..."); send the fields file and purpose, each named',
      );
    }
  });

  it('purpose or expires_after[*] given twice: 400 naming the field, whichever value comes last', async () => {
    const cases: Array<[string, string, string]> = [
      ['purpose', 'fine-tune', 'batch'],
      ['purpose', 'batch', 'fine-tune'],
      ['purpose', 'batch', 'batch'],
      ['expires_after[anchor]', 'created_at', 'created_at'],
      ['expires_after[seconds]', '3600', '86400'],
    ];
    for (const [field, first, second] of cases) {
      const others = field === 'purpose' ? [] : [part('purpose', 'batch')];
      const res = await upload(...others, part(field, first), part(field, second), part('file', line, 'a.jsonl'));
      expectOpenAi400(res, field, `form field '${field}': given more than once; send it once`);
    }
    // Each once: the upload is made.
    const once = await upload(part('purpose', 'batch'), part('expires_after[anchor]', 'created_at'), part('expires_after[seconds]', '3600'), part('file', line, 'a.jsonl'));
    expect(once.statusCode).toBe(200);
  });

  it('the file as a text field (no filename): 400 on param file saying to send a file part with a filename', async () => {
    expectOpenAi400(
      await upload(part('purpose', 'batch'), part('file', line)),
      'file',
      "form field 'file': must be a file part with a filename (the JSONL file, as curl -F file=@input.jsonl sends it), got a text field",
    );
  });
});

describe('a JSON POST /v1/batches over the body limit', () => {
  it('is a 413 in OpenAI shape that points at file uploads, not at a state to trim or a file param', async () => {
    const payload = JSON.stringify({ input_file_id: 'file-x', endpoint: '/v1/decisions', completion_window: '24h', metadata: { note: 'x'.repeat(2 * 1024 * 1024) } });
    const res = await app.inject({ method: 'POST', url: '/v1/batches', headers: { ...AUTH, ...JSON_TYPE }, payload });
    expect(res.statusCode).toBe(413);
    const { error } = res.json();
    expect(error).toMatchObject({ type: 'invalid_request_error', param: null, code: null });
    expect(error.message).toMatch(/^request body is larger than \d+ bytes: .*POST \/v1\/files$/);
    expect(error.message).not.toMatch(/state/);
  });
});

describe('structured text nested deeper than a state may be', () => {
  // Deep enough that JSON.stringify would overflow the stack (it was a 500 on /v1/systemone).
  const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
  const post = (url: string, payload: string) => app.inject({ method: 'POST', url, headers: { ...AUTH, ...JSON_TYPE }, payload });

  it('System One: instructions, criteria and levels are 400 api_usage_error naming where, not a 500', async () => {
    const cases: Array<[string, string]> = [
      [`{"type":"noul","instructions":${deep}}`, 'questions["a"].instructions[0]'],
      [`{"type":"noul","instructions":"x","criteria":{"true":${deep},"false":"n"}}`, 'questions["a"].criteria.true[0]'],
      [`{"type":"choice","instructions":"x","criteria":{"p":${deep},"q":null}}`, 'questions["a"].criteria["p"][0]'],
      [`{"type":"score","instructions":"x","criteria":["low",${deep}]}`, 'questions["a"].criteria[1][0]'],
    ];
    for (const [question, where] of cases) {
      const res = await post('/v1/systemone', `{"model":"svc-alpha","state":"x","questions":{"a":${question}}}`);
      expect(res.statusCode, where).toBe(400);
      const { detail } = res.json();
      expect(detail.error_type).toBe('api_usage_error');
      expect(detail.message.startsWith(where), detail.message.slice(0, 80)).toBe(true);
      expect(detail.message).toMatch(/: nested deeper than 64 levels$/);
      expect(res.headers['x-typesafe-request-id']).toMatch(TYPESAFE_ID);
    }
  });

  it('an array state and an input_json part are named by their own paths', async () => {
    const state = await post('/v1/systemone', `{"model":"svc-alpha","state":${deep},"questions":{"a":{"type":"noul","instructions":"x"}}}`);
    expect(state.statusCode).toBe(400);
    expect(state.json().detail.message).toMatch(/^state(\[0\]){64}: state is nested deeper than 64 levels$/);
    const part = await post('/v1/decisions', `{"model":"svc-alpha","input":[{"role":"user","content":[{"type":"input_json","data":${deep}}]}],"questions":[{"type":"predicate","instructions":"x"}]}`);
    expect(part.statusCode).toBe(400);
    expect(part.json().error.message).toMatch(/^input\[0\]\.content\[0\]\.data(\[0\]){64}: nested deeper than 64 levels$/);
    const instructions = await post('/v1/decisions', `{"model":"svc-alpha","input":"x","questions":[{"type":"predicate","instructions":[{"type":"input_json","data":${deep}}]}]}`);
    expect(instructions.statusCode).toBe(400);
    expect(instructions.json().error.message).toMatch(/^questions\[0\]\.instructions\[0\]\.data(\[0\]){64}: nested deeper/);
  });

  it('structured text within the limits still reads as compact JSON', async () => {
    const nested = JSON.stringify({ a: [{ b: [1, 2] }] });
    const res = await post('/v1/systemone', `{"model":"svc-alpha","state":[1,[2]],"questions":{"a":{"type":"score","instructions":${nested},"criteria":[{"d":"low"},["hi"]]}}}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().answers.a.legend).toEqual({ 0: { d: 'low' }, 1: ['hi'] });
  });
});

describe('a batch line with structured text nested too deep', () => {
  it('is that line\'s 400 in the error file; the batch completes and the other line is answered', async () => {
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    const body = (instructions: string) => `{"model":"svc-alpha","state":"x","questions":{"a":{"type":"noul","instructions":${instructions}}}}`;
    const jsonl = [
      `{"custom_id":"ok","method":"POST","url":"/v1/systemone","body":${body('"Is it late?"')}}`,
      `{"custom_id":"deep","method":"POST","url":"/v1/systemone","body":${body(deep)}}`,
    ].join('\n');
    const boundary = 'deep-boundary';
    const form =
      `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="deep.jsonl"\r\n\r\n${jsonl}\r\n--${boundary}--\r\n`;
    const file = await app.inject({ method: 'POST', url: '/v1/files', headers: { ...AUTH, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload: form });
    expect(file.statusCode).toBe(200);
    const created = await app.inject({
      method: 'POST',
      url: '/v1/batches',
      headers: { ...AUTH, ...JSON_TYPE },
      payload: { input_file_id: file.json().id, endpoint: '/v1/systemone', completion_window: '24h' },
    });
    expect(created.statusCode).toBe(200);
    let batch = created.json();
    while (!['completed', 'failed', 'cancelled'].includes(batch.status)) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      batch = (await app.inject({ method: 'GET', url: `/v1/batches/${batch.id}`, headers: AUTH })).json();
    }
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
    const output = (await app.inject({ method: 'GET', url: `/v1/files/${batch.output_file_id}/content`, headers: AUTH })).body.trim().split('\n');
    expect(output.map((l) => JSON.parse(l).custom_id)).toEqual(['ok']);
    const [errorLine] = (await app.inject({ method: 'GET', url: `/v1/files/${batch.error_file_id}/content`, headers: AUTH })).body.trim().split('\n');
    const failed = JSON.parse(errorLine!);
    expect(failed.custom_id).toBe('deep');
    expect(failed.response.status_code).toBe(400);
    expect(failed.response.body.detail.error_type).toBe('api_usage_error');
    expect(failed.response.body.detail.message).toMatch(/^questions\["a"\]\.instructions(\[0\]){64}: nested deeper than 64 levels$/);
  });
});
