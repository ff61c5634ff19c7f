/**
 * The HTTP layer through app.inject(): routing, authentication, the error mapping of every failure
 * (fastify's own included), the decide rules as seen over HTTP, the OpenAPI document, metrics and
 * logs. One real DecisionService on the tiny model (installed as svc-alpha-2026-10 and -2026-11).
 */
import { Writable } from 'node:stream';

import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DIALECTS } from '../../src/api/dialects.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import {
  AUTH,
  OTHER_KEY,
  TEST_KEY,
  decideBody,
  expectErrorShape,
  expectValidAnswers,
  letters,
  longState,
  tempModels,
  type Questions,
  type TempDirs,
} from './fixtures.js';

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;
const logLines: string[] = [];

const SECRET_STATE = 'SECRET-STATE-CONTENT-8c1f';

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10', 'svc-alpha-2026-11']);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  const stream = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  app = await createServer({
    service,
    apiKeys: [TEST_KEY, OTHER_KEY],
    dataDir: dirs.dataDir,
    rateLimit: false,
    logger: { level: 'info', stream },
  });
});

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

function decide(body: unknown, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/v1/decide',
    headers: { ...AUTH, 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
}

function expectError(res: LightMyRequestResponse, status: number, code: string): string {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json();
  expectErrorShape(body, code, res.headers['x-request-id'] as string);
  return body.message as string;
}

describe('authentication', () => {
  const protectedRequests = [
    { method: 'POST' as const, url: '/v1/decide', payload: decideBody('x') },
    { method: 'GET' as const, url: '/v1/models' },
    { method: 'GET' as const, url: '/openapi.json' },
    { method: 'GET' as const, url: '/v1/no-such-route' },
    { method: 'DELETE' as const, url: '/v1/decide' },
  ];
  const badHeaders: Array<[string, Record<string, string>]> = [
    ['missing', {}],
    ['empty', { authorization: '' }],
    ['wrong scheme', { authorization: `Basic ${TEST_KEY}` }],
    ['no token', { authorization: 'Bearer' }],
    ['two tokens', { authorization: `Bearer ${TEST_KEY} ${TEST_KEY}` }],
    ['unknown key', { authorization: 'Bearer not-a-configured-key' }],
    ['key prefix', { authorization: `Bearer ${TEST_KEY.slice(0, -1)}` }],
  ];

  for (const req of protectedRequests) {
    for (const [what, headers] of badHeaders) {
      it(`${req.method} ${req.url} with ${what} Authorization: 401 invalid_key + WWW-Authenticate`, async () => {
        const res = await app.inject({ ...req, headers });
        expectError(res, 401, 'invalid_key');
        expect(res.headers['www-authenticate']).toBe('Bearer');
      });
    }
  }

  it('every documented operation, whoever added it, rejects a request without a key (except the probes), and documents that answer, 429 and 500', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json', headers: AUTH })).json();
    let open = 0;
    let closed = 0;
    for (const [route, ops] of Object.entries(doc.paths as Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        const url = route.replace(/\{[^}]+\}/g, 'batch_00000000000000000000000000');
        const res = await app.inject({ method: method.toUpperCase() as 'GET', url });
        if (Array.isArray(op.security) && op.security.length === 0) {
          expect(res.statusCode, `${method} ${route}`).toBe(200);
          open++;
        } else if (route === '/v1/systemone') {
          // System One's own split (docs/compatibility.md): no key is 403, in its {"detail": ...} shape.
          expect(res.statusCode, `${method} ${route}`).toBe(403);
          expect(res.json().detail.error_type).toBe('authentication_error');
          closed++;
        } else {
          expect(res.statusCode, `${method} ${route}`).toBe(401);
          expect(res.headers['www-authenticate']).toBe('Bearer');
          closed++;
        }
        if (!(Array.isArray(op.security) && op.security.length === 0)) {
          // A client generated from the document must know every status the route can answer.
          expect(Object.keys(op.responses), `${method} ${route}`).toEqual(expect.arrayContaining([String(res.statusCode), '429', '500']));
        }
      }
    }
    expect(open).toBe(2);
    expect(closed).toBeGreaterThanOrEqual(2);
  });

  it('accepts every configured key, case-insensitive scheme', async () => {
    for (const authorization of [`Bearer ${TEST_KEY}`, `bearer ${OTHER_KEY}`, `BEARER  ${TEST_KEY}`]) {
      const res = await app.inject({ method: 'GET', url: '/v1/models', headers: { authorization } });
      expect(res.statusCode).toBe(200);
    }
  });

  it('health, readiness and metrics need no key', async () => {
    for (const url of ['/healthz', '/readyz', '/metrics']) {
      const res = await app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['x-request-id']).toMatch(/^req_/);
    }
  });

  it('an unknown path with a valid key is 404 not_found', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/no-such-route', headers: AUTH });
    expect(expectError(res, 404, 'not_found')).toContain('/v1/no-such-route');
  });
});

describe('POST /v1/decide over HTTP', () => {
  it('answers every question (rules 1-4); id = x-request-id; alias -> newest dated id', async () => {
    const res = await decide(decideBody({ ticket: 'My parcel arrived broken', order: 1234 }));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.id).toMatch(/^dec_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(res.headers['x-request-id']).toBe(body.id);
    expect(body.model).toBe('svc-alpha-2026-11');
    expect(Number.isInteger(body.usage.input_tokens)).toBe(true);
    expect(body.usage.input_tokens).toBeGreaterThan(0);
    expectValidAnswers(body.answers, decideBody('').questions as Questions);
  });

  it('a dated id pins that version', async () => {
    const res = await decide(decideBody('Where is my order?', undefined, 'svc-alpha-2026-10'));
    expect(res.statusCode).toBe(200);
    expect(res.json().model).toBe('svc-alpha-2026-10');
  });

  it('each request gets its own id', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) ids.add((await decide(decideBody('same state'))).json().id);
    expect(ids.size).toBe(3);
  });

  it('probs keys in the JSON text: the presentation order, integer-like keys included (docs/api.md)', async () => {
    // Written as text: JSON.stringify of an object would already have put "7" and "10" first.
    const res = await decide(
      '{"model":"svc-alpha","state":"s","questions":{' +
        '"s":{"type":"score","instructions":"How?","criteria":{"10":"a","-1":"b","1":"c","0.5":"d"}},' +
        '"c":{"type":"choice","instructions":"Which?","criteria":{"b":"x","7":"y","a":"z"}}}}',
    );
    expect(res.statusCode).toBe(200);
    const keysInText = (question: string) => {
      const probs = new RegExp(`"${question}":\\{"type":"\\w+","probs":\\{([^}]*)\\}`).exec(res.payload)![1]!;
      return [...probs.matchAll(/"([^"]+)":/g)].map((m) => m[1]);
    };
    expect(keysInText('s')).toEqual(['-1', '0.5', '1', '10']); // ascending level
    expect(keysInText('c')).toEqual(['b', '7', 'a']); // criteria order as written
    expect(res.json().answers.c.top).toBe(['b', '7', 'a'].reduce((best, k) => (res.json().answers.c.probs[k] > res.json().answers.c.probs[best] ? k : best)));
  });

  it('noul without criteria has options no and yes', async () => {
    const q = { c: { type: 'noul', instructions: 'Is it raining?' } };
    const res = await decide(decideBody('It rains.', q));
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.json().answers.c.probs)).toEqual(['no', 'yes']);
    expectValidAnswers(res.json().answers, q);
  });

  it('2, 26, 27 and 255 options are accepted', async () => {
    for (const n of [2, 26, 27, 255]) {
      const q = { pick: { type: 'choice', instructions: 'Pick one.', criteria: letters(n) } };
      const res = await decide(decideBody('state', q));
      expect(res.statusCode, `${n} options`).toBe(200);
      expectValidAnswers(res.json().answers, q);
    }
  });

  const invalidQuestions: Array<[string, unknown]> = [
    ['1 option', { type: 'choice', instructions: 'Pick.', criteria: letters(1) }],
    ['256 options', { type: 'choice', instructions: 'Pick.', criteria: letters(256) }],
    ['0 options', { type: 'choice', instructions: 'Pick.', criteria: {} }],
    ['an unknown type', { type: 'boolean', instructions: 'Pick.' }],
    ['a missing type', { instructions: 'Pick.' }],
    ['choice without criteria', { type: 'choice', instructions: 'Pick.' }],
    ['score without criteria', { type: 'score', instructions: 'How much?' }],
    ['score with non-numeric levels', { type: 'score', instructions: 'How much?', criteria: { low: 'l', high: 'h' } }],
    ['noul with other keys', { type: 'noul', instructions: 'Really?', criteria: { false: 'f', true: 't' } }],
    ['empty instructions', { type: 'noul', instructions: '' }],
    ['no instructions', { type: 'noul' }],
    ['a question that is a string', 'is it?'],
    ['an unknown field', { type: 'noul', instructions: 'x', critera: {} }],
  ];
  for (const [what, question] of invalidQuestions) {
    it(`${what}: 400 invalid_question naming the question`, async () => {
      const res = await decide({ model: 'svc-alpha', state: 's', questions: { q_bad: question } });
      expect(expectError(res, 400, 'invalid_question')).toContain('q_bad');
    });
  }

  const wrongTypes: Array<[string, unknown, string]> = [
    ['model a number', { model: 5, state: 's', questions: { a: { type: 'noul', instructions: 'x' } } }, 'model'],
    ['model missing', { state: 's', questions: { a: { type: 'noul', instructions: 'x' } } }, 'model'],
    ['state a number', { model: 'svc-alpha', state: 5, questions: { a: { type: 'noul', instructions: 'x' } } }, 'state'],
    ['state an array', { model: 'svc-alpha', state: [1, 2], questions: { a: { type: 'noul', instructions: 'x' } } }, 'state'],
    ['state missing', { model: 'svc-alpha', questions: { a: { type: 'noul', instructions: 'x' } } }, 'state'],
    ['questions an array', { model: 'svc-alpha', state: 's', questions: [] }, 'questions'],
    ['questions empty', { model: 'svc-alpha', state: 's', questions: {} }, 'questions'],
    ['questions missing', { model: 'svc-alpha', state: 's' }, 'questions'],
    ['body an array', [1, 2, 3], 'request body'],
    ['body a string', 'hello', 'request body'],
    ['body null', null, 'request body'],
  ];
  for (const [what, body, field] of wrongTypes) {
    it(`${what}: 400 invalid_question naming ${field}`, async () => {
      const res = await decide(JSON.stringify(body));
      expect(expectError(res, 400, 'invalid_question')).toContain(field);
    });
  }

  it('65 questions: 400; 64 questions: 200', async () => {
    const make = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`q${i}`, { type: 'noul', instructions: `Question ${i}?` }]));
    expect(expectError(await decide(decideBody('s', make(65))), 400, 'invalid_question')).toContain('64');
    const ok = await decide(decideBody('s', make(64)));
    expect(ok.statusCode).toBe(200);
    expect(Object.keys(ok.json().answers)).toHaveLength(64);
  });

  it('a 100-deep state or question: 400', async () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100; i++) deep = { d: deep };
    expect(expectError(await decide(decideBody(deep)), 400, 'invalid_question')).toContain('deeper');
    const res = await decide({ model: 'svc-alpha', state: 's', questions: { q: deep } });
    expectError(res, 400, 'invalid_question');
  });

  it('a 300,000-deep JSON array: 400, and the server still answers', async () => {
    const body = `{"model":"svc-alpha","state":{"x":${'['.repeat(300_000)}${']'.repeat(300_000)}},"questions":{"a":{"type":"noul","instructions":"x"}}}`;
    expectError(await decide(body), 400, 'invalid_question');
    expect((await decide(decideBody('still alive'))).statusCode).toBe(200);
  });

  it('huge numbers: a state reads them as written, past a double too; elsewhere the field rule applies', async () => {
    const big = '9'.repeat(400);
    const overflow = `{"model":"svc-alpha","state":{"n":${big}},"questions":{"a":{"type":"noul","instructions":"x"}}}`;
    const asText = `{"model":"svc-alpha","state":${JSON.stringify(`{"n":${big}}`)},"questions":{"a":{"type":"noul","instructions":"x"}}}`;
    const [written, text] = [await decide(overflow), await decide(asText)];
    expect(written.statusCode).toBe(200);
    expect(written.json().answers).toEqual(text.json().answers);
    expect(written.json().usage.input_tokens).toBe(text.json().usage.input_tokens);
    expect(expectError(await decide(`{"model":1e999,"state":"s","questions":{}}`), 400, 'invalid_question')).toContain('model');
    const finite = await decide(`{"model":"svc-alpha","state":{"n":1e308,"m":-1e-320},"questions":{"a":{"type":"noul","instructions":"x"}}}`);
    expect(finite.statusCode).toBe(200);
  });

  it('bad JSON: 400 invalid_question saying so', async () => {
    for (const text of ['{"model": "svc-alpha",', '{model: 1}', '{"a": tru}', 'nul', '{"a":1}}']) {
      expect(expectError(await decide(text), 400, 'invalid_question')).toMatch(/not valid JSON/);
    }
  });

  it('bad JSON messages do not echo the body', async () => {
    const msg = expectError(await decide(`{"state": "${SECRET_STATE}" x}`), 400, 'invalid_question');
    expect(msg).not.toContain(SECRET_STATE);
  });

  it('invalid UTF-8: 400 invalid_question', async () => {
    const good = Buffer.from(JSON.stringify(decideBody('caf\u00e9')));
    const bad = Buffer.concat([Buffer.from('{"model":"svc-alpha","state":"caf'), Buffer.from([0xc3, 0x28]), Buffer.from('","questions":{"a":{"type":"noul","instructions":"x"}}}')]);
    expect((await decide(good)).statusCode).toBe(200);
    expect(expectError(await decide(bad), 400, 'invalid_question')).toContain('UTF-8');
    const lone = Buffer.from([0x7b, 0xff, 0x7d]);
    expect(expectError(await decide(lone), 400, 'invalid_question')).toContain('UTF-8');
  });

  it('an empty body: 400', async () => {
    expect(expectError(await decide(''), 400, 'invalid_question')).toContain('empty');
  });

  it('unsupported or missing Content-Type: 400 invalid_question', async () => {
    const payload = JSON.stringify(decideBody('s'));
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await decide(payload, { 'content-type': type });
      expect(expectError(res, 400, 'invalid_question')).toContain('Content-Type');
    }
    const res = await app.inject({ method: 'POST', url: '/v1/decide', headers: { ...AUTH }, payload: Buffer.from(payload) });
    expectError(res, 400, 'invalid_question');
  });

  it('application/json with a charset parameter is accepted', async () => {
    expect((await decide(decideBody('s'), { 'content-type': 'application/json; charset=utf-8' })).statusCode).toBe(200);
  });

  it('a body over 1 MiB: 413 state_too_long', async () => {
    const body = JSON.stringify(decideBody('x'.repeat(1024 * 1024)));
    expect(expectError(await decide(body), 413, 'state_too_long')).toContain('1048576');
  });

  it('a state over the token limit: 413 state_too_long giving both numbers', async () => {
    const msg = expectError(await decide(decideBody(longState(5000))), 413, 'state_too_long');
    expect(msg).toMatch(/state is \d+ tokens; the limit for this request is \d+ tokens/);
  });

  it('a state far over the token limit (near 1 MiB): 413 from a count that stops early, not a tokenization of it all', async () => {
    const msg = expectError(await decide(decideBody('word '.repeat(190_000))), 413, 'state_too_long');
    expect(msg).toMatch(/^state is more than \d+ tokens; the limit for a request is at most \d+ tokens/);
    // Long text (counted in slices first) over the limit by less than the margin: the exact count as before.
    const near = 'internationalization '.repeat(2_200);
    expect(near.length).toBeGreaterThan(8_192);
    expect(expectError(await decide(decideBody(near)), 413, 'state_too_long')).toMatch(/^state is \d+ tokens; the limit for this request is \d+ tokens/);
  });

  it('GET /v1/models/{id}: an unknown id of any length up to a valid id\'s 128 characters and past it is 404, not a bare 400', async () => {
    for (const id of ['m'.repeat(100), 'm'.repeat(128), 'm'.repeat(2000)]) {
      const res = await app.inject({ method: 'GET', url: `/v1/models/${id}`, headers: AUTH });
      expectError(res, 404, 'not_found');
    }
  });

  it('an unknown model: 404 not_found listing the installed ids', async () => {
    const msg = expectError(await decide(decideBody('s', undefined, 'svc-beta')), 404, 'not_found');
    expect(msg).toContain('svc-beta');
    expect(msg).toContain('svc-alpha-2026-10');
    expect(msg).toContain('svc-alpha-2026-11');
  });
});

describe('other routes', () => {
  it('GET /v1/models lists the installed ids and the alias', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/models', headers: AUTH });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.object).toBe('list');
    expect(body.data.map((m: { id: string }) => m.id)).toEqual(['svc-alpha-2026-10', 'svc-alpha-2026-11']);
    expect(body.aliases).toEqual({ 'svc-alpha': 'svc-alpha-2026-11' });
    // The same list in System One's form (its GET /v1/models), with its request-id header: the
    // same id as x-request-id, its ULID written in hex.
    expect(body.models).toEqual([
      { name: 'svc-alpha', description: 'the newest installed version of svc-alpha: svc-alpha-2026-11', release_date: '2026-11-01' },
      { name: 'svc-alpha-2026-10', description: 'version 2026-10 of svc-alpha', release_date: '2026-10-01' },
      { name: 'svc-alpha-2026-11', description: 'version 2026-11 of svc-alpha', release_date: '2026-11-01' },
    ]);
    const typesafeId = String(res.headers['x-typesafe-request-id']);
    expect(typesafeId).toMatch(/^req_[0-9a-f]{32}$/);
    const ulid = String(res.headers['x-request-id']).slice(4);
    const fromUlid = [...ulid].reduce((n, c) => n * 32n + BigInt('0123456789ABCDEFGHJKMNPQRSTVWXYZ'.indexOf(c)), 0n);
    expect(typesafeId).toBe(`req_${fromUlid.toString(16).padStart(32, '0')}`);
    // A trailing slash names no model: the unknown route, not a model ''.
    const slash = await app.inject({ method: 'GET', url: '/v1/models/', headers: AUTH });
    expect(slash.statusCode).toBe(404);
    expect(slash.json().message).toBe('no route GET /v1/models/: GET /v1/models lists the models, GET /v1/models/{id} names one');
    // Its errors are named the same way (the body stays ours).
    const refused = await app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Basic x' } });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().code).toBe('invalid_key');
    expect(String(refused.headers['x-typesafe-request-id'])).toMatch(/^req_[0-9a-f]{32}$/);
  });

  it('/openapi.json documents the routes from their schemas', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json', headers: AUTH });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.version).toBe('2026-10');
    expect(doc.components.securitySchemes.bearerAuth).toEqual({ type: 'http', scheme: 'bearer' });
    // The wire types are named schemas; the operations point at them.
    const named = doc.components.schemas;
    expect(Object.keys(named).sort()).toEqual(['Batch', 'BatchList', 'BatchValidation', 'DecideRequest', 'DecideResponse', 'Error', 'Model', 'ModelListing', 'OpenAiBatch']);
    const schemaOf = (content: { 'application/json': { schema: { $ref: string } } }) => {
      const { $ref } = content['application/json'].schema;
      expect($ref).toMatch(/^#\/components\/schemas\//);
      return named[$ref.split('/').pop()!];
    };
    const decideOp = doc.paths['/v1/decide'].post;
    expect(schemaOf(decideOp.requestBody.content).required).toEqual(['model', 'state', 'questions']);
    expect(schemaOf(decideOp.responses['200'].content).required).toEqual(['id', 'model', 'answers', 'usage']);
    expect(Object.keys(decideOp.responses).sort()).toEqual(['200', '400', '401', '404', '413', '415', '429', '500']);
    // Every route that reads a body lists the 415 of a compressed one.
    for (const route of ['/v1/decide', '/v1/systemone', '/v1/decisions', '/v1/batches', '/v1/batches/validate', '/v1/files']) {
      expect(Object.keys(doc.paths[route].post.responses), route).toContain('415');
    }
    expect(decideOp.responses['400'].description).toMatch(/^invalid_question/);
    expect(schemaOf(decideOp.responses['400'].content).required).toEqual(['code', 'message', 'request_id']);
    expect(schemaOf(doc.paths['/v1/models'].get.responses['200'].content).properties.aliases).toBeDefined();
    // A job is answered in the dialect it was created in: our Batch or OpenAI's (test/batches/api.test.ts validates both).
    for (const [route, method] of [['/v1/batches/{id}', 'get'], ['/v1/batches/{id}/cancel', 'post']] as const) {
      const { anyOf } = doc.paths[route][method].responses['200'].content['application/json'].schema;
      expect(anyOf.map((s: { $ref: string }) => s.$ref), route).toEqual(['#/components/schemas/Batch', '#/components/schemas/OpenAiBatch']);
    }
    expect(named.Batch.properties.status.anyOf).toHaveLength(7);
    expect(schemaOf(doc.paths['/v1/batches'].get.responses['200'].content).properties.has_more).toBeDefined();
    expect(doc.paths['/v1/models'].get).toBeDefined();
    expect(doc.paths['/healthz'].get.security).toEqual([]);
    expect(doc.paths['/openapi.json']).toBeUndefined();
    expect(doc.paths['/metrics']).toBeUndefined();
    expect(schemaOf(doc.paths['/v1/batches/validate'].post.responses['200'].content).properties.errors).toBeDefined();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/console'))).toEqual([]);
    // Downloads: their own type on the 200 only; their errors are JSON like every other.
    for (const [route, type] of [['/v1/batches/{id}/results', 'application/x-ndjson'], ['/v1/files/{id}/content', 'application/octet-stream']] as const) {
      const { responses } = doc.paths[route].get;
      expect(Object.keys(responses['200'].content), route).toEqual([type]);
      for (const status of ['401', '404', '429', '500']) expect(Object.keys(responses[status].content), `${route} ${status}`).toEqual(['application/json']);
    }
    // POST /v1/batches takes our form or OpenAI's JSON body, and answers errors in the shape of each.
    const create = doc.paths['/v1/batches'].post;
    expect(Object.keys(create.requestBody.content).sort()).toEqual(['application/json', 'multipart/form-data']);
    expect(create.requestBody.content['application/json'].schema.required).toEqual(['input_file_id', 'endpoint', 'completion_window']);
    expect(create.responses['400'].content['application/json'].schema.anyOf).toHaveLength(2);
    // Every batch and file operation lists the 503 of a store that cannot serve (Postgres down, the
    // disk refusing writes) with its Retry-After, in the route's error shape (test/e2e/full-disk.test.ts
    // validates real ones against it).
    const storeOps = Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, any> }>>)
      .filter(([route]) => /^\/v1\/(batches|files)\b/.test(route))
      .flatMap(([route, ops]) => Object.entries(ops).map(([method, op]) => [`${method} ${route}`, op.responses] as const));
    expect(storeOps.length).toBe(11);
    for (const [op, responses] of storeOps) {
      expect(responses['503']?.description, op).toMatch(/^server_error: the batch store cannot serve/);
      expect(responses['503'].headers['retry-after'].schema, op).toEqual({ type: 'integer' });
    }
    const errorShape = (op: { responses: Record<string, any> }) => op.responses['503'].content['application/json'].schema;
    // The routes both dialects share: ours with OpenAI's `error` beside it.
    expect(errorShape(doc.paths['/v1/batches/{id}'].get).allOf[0]).toEqual({ $ref: '#/components/schemas/Error' });
    expect(errorShape(doc.paths['/v1/batches/{id}'].get).allOf[1].required).toEqual(['error']);
    expect(errorShape(doc.paths['/v1/batches/{id}/results'].get)).toEqual({ $ref: '#/components/schemas/Error' });
    expect(errorShape(doc.paths['/v1/files'].post).required).toEqual(['error']);
    expect(errorShape(create).anyOf).toHaveLength(2);
  });

  it('every dialect of the registry is served at its path by the one route function, documented as it says', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json', headers: AUTH })).json();
    for (const dialect of DIALECTS) {
      expect(doc.paths[dialect.path]?.post?.operationId, dialect.path).toBe(dialect.route.openapi.operationId);
      // An empty object is a request every dialect refuses, each in its own shape and status.
      const res = await app.inject({ method: 'POST', url: dialect.path, headers: { ...AUTH, 'content-type': 'application/json' }, payload: '{}' });
      const expected = dialect.parse({}, { requestId: res.headers['x-request-id'] as string });
      if (expected.ok) throw new Error(`${dialect.path} accepted {}`);
      expect(res.statusCode, dialect.path).toBe(expected.error.status);
      expect(res.json(), dialect.path).toEqual(expected.error.body);
    }
  });

  it('/readyz names the loaded models', async () => {
    const res = await app.inject({ method: 'GET', url: '/readyz' });
    expect(res.json().status).toBe('ready');
    expect(res.json().models).toContain('svc-alpha-2026-11');
  });

  it('/metrics is Prometheus text with HTTP and engine series', async () => {
    await decide(decideBody('metrics state'));
    // Answered before routing (no route's hooks run): counted all the same.
    expect((await app.inject({ method: 'GET', url: '/v1/models/%ZZ', headers: AUTH })).statusCode).toBe(400);
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.payload;
    const lines = text.trimEnd().split('\n');
    const types = new Map<string, string>();
    for (const line of lines) {
      if (line.startsWith('# TYPE ')) {
        const [, , name, type] = line.split(' ');
        types.set(name!, type!);
        continue;
      }
      if (line.startsWith('# HELP ')) continue;
      expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (-?[0-9.e+-]+|\+Inf|NaN)$/);
      const name = line.split(/[{ ]/)[0]!;
      const family = name.replace(/_(bucket|sum|count)$/, '');
      expect(types.has(name) || types.get(family) === 'histogram', name).toBe(true);
    }
    expect(text).toMatch(/^decide_http_requests_total\{method="POST",route="\/v1\/decide",status="200"\} [1-9]\d*$/m);
    expect(text).toMatch(/^decide_http_requests_total\{method="GET",route="unmatched",status="404"\} [1-9]\d*$/m);
    expect(text).toMatch(/^decide_http_requests_total\{method="GET",route="unmatched",status="400"\} [1-9]\d*$/m);
    for (const name of [
      'decide_engine_forward_passes_total',
      'decide_engine_prefix_tokens_computed_total',
      'decide_engine_cached_tokens_total',
      'decide_engine_suffix_tokens_total',
    ]) {
      expect(types.get(name)).toBe('counter');
      expect(text).toMatch(new RegExp(`^${name}\\{model="svc-alpha-2026-11"\\} [1-9]\\d*$`, 'm'));
    }
    expect(text).toMatch(/^decide_engine_queue_depth\{model="svc-alpha-2026-11",queue="live"\} 0$/m);
    // Histogram buckets are cumulative and end with +Inf = count.
    const buckets = [...text.matchAll(/^decide_http_request_duration_seconds_bucket\{method="POST",route="\/v1\/decide",le="([^"]+)"\} (\d+)$/gm)];
    const counts = buckets.map((m) => Number(m[2]));
    expect(counts).toEqual([...counts].sort((a, b) => a - b));
    expect(buckets.at(-1)![1]).toBe('+Inf');
    const count = /^decide_http_request_duration_seconds_count\{method="POST",route="\/v1\/decide"\} (\d+)$/m.exec(text)![1];
    expect(counts.at(-1)).toBe(Number(count));
  });

  it('every response carries x-request-id; errors repeat it as request_id', async () => {
    const responses = await Promise.all([
      app.inject({ method: 'GET', url: '/healthz' }),
      app.inject({ method: 'GET', url: '/metrics' }),
      app.inject({ method: 'GET', url: '/v1/models', headers: AUTH }),
      app.inject({ method: 'GET', url: '/nothing', headers: AUTH }),
      app.inject({ method: 'GET', url: '/v1/models' }),
      decide(decideBody('s')),
      decide('{'),
    ]);
    for (const res of responses) {
      expect(res.headers['x-request-id']).toMatch(/^(dec|req)_[0-9A-HJKMNP-TV-Z]{26}$/);
      if (res.statusCode >= 400) expect(res.json().request_id).toBe(res.headers['x-request-id']);
    }
  });

  it('a client-sent x-request-id is not adopted', async () => {
    const res = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'mine' } });
    expect(res.headers['x-request-id']).not.toBe('mine');
  });
});

describe('logs', () => {
  it('are JSON lines with the request id, without keys, the Authorization header or state', async () => {
    await decide(decideBody({ secret: SECRET_STATE }));
    await decide(`{"model":"svc-alpha","state":"${SECRET_STATE}",`);
    await app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: `Bearer ${SECRET_STATE}` } });
    expect(logLines.length).toBeGreaterThan(0);
    const all = logLines.join('\n');
    for (const secret of [TEST_KEY, OTHER_KEY, SECRET_STATE, 'Bearer']) expect(all).not.toContain(secret);
    const parsed = logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const completed = parsed.filter((l) => l.msg === 'request completed');
    expect(completed.length).toBeGreaterThan(0);
    for (const l of completed) expect(l.request_id).toMatch(/^(dec|req)_/);
  });
});
