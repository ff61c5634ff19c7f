/**
 * The real thing: `node bin/decide.js serve` on the tiny model (as svc-alpha-2026-10 and -2026-11),
 * real HTTP with fetch and raw sockets. One server process for the whole file.
 */
import net from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { DecisionService } from '../../src/service/decision-service.js';
import {
  MIXED_QUESTIONS,
  OTHER_KEY,
  TEST_KEY,
  decideBody,
  expectErrorShape,
  expectSameAnswers,
  expectValidAnswers,
  longState,
  tempModels,
  type TempDirs,
} from '../api/fixtures.js';
import { metricValue, postDecide, startServe, type ServeProcess } from './serve-process.js';

let dirs: TempDirs;
let server: ServeProcess;
let url: string;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10', 'svc-alpha-2026-11']);
  server = await startServe({
    args: ['--models-dir', dirs.modelsDir, '--data-dir', dirs.dataDir, '--threads', '1', '--log-level', 'warn'],
    env: { DECIDE_API_KEYS: `${TEST_KEY},${OTHER_KEY}`, DECIDE_RATE_LIMIT_RPS: '100000', DECIDE_RATE_LIMIT_BURST: '100000', PORT: undefined },
  });
  url = server.url;
});

afterAll(async () => {
  if (server) expect(await server.stop()).toBe(0);
  dirs?.cleanup();
});

async function metrics(): Promise<string> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** Distinct states, so that no prefix is in the cache before the test that uses them. */
function states(tag: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `Ticket ${tag}-${i}: customer ${i * 7} writes that order #${1000 + i} is ${i % 2 ? 'late' : 'damaged'}.`);
}

describe('decide serve', () => {
  it('prints the listening line with the bound address, and no key when keys are configured', () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.stdout()).not.toContain('API key');
    expect(server.stdout()).not.toContain(TEST_KEY);
  });

  it('answers POST /v1/decide by the spec rules', async () => {
    const res = await postDecide(url, TEST_KEY, decideBody({ ticket: 'The parcel arrived broken', order: 77 }));
    expect(res.status).toBe(200);
    expect(res.body.id).toMatch(/^dec_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(res.headers.get('x-request-id')).toBe(res.body.id);
    expect(res.body.model).toBe('svc-alpha-2026-11');
    expectValidAnswers(res.body.answers, MIXED_QUESTIONS);
  });

  it('resolves the alias to the newest installed dated id; a dated id pins', async () => {
    const alias = await postDecide(url, TEST_KEY, decideBody('Refund please.', undefined, 'svc-alpha'));
    const pinned = await postDecide(url, TEST_KEY, decideBody('Refund please.', undefined, 'svc-alpha-2026-10'));
    expect(alias.body.model).toBe('svc-alpha-2026-11');
    expect(pinned.body.model).toBe('svc-alpha-2026-10');
    const models = (await (await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).json()) as { aliases: unknown };
    expect(models.aliases).toEqual({ 'svc-alpha': 'svc-alpha-2026-11' });
  });

  it('authenticates every endpoint but the probes and metrics', async () => {
    const cases: Array<[string, string]> = [
      ['POST', '/v1/decide'],
      ['GET', '/v1/models'],
      ['GET', '/openapi.json'],
      ['GET', '/v1/unknown'],
    ];
    for (const [method, path] of cases) {
      for (const headers of [{}, { authorization: 'Bearer wrong-key' }, { authorization: `Token ${TEST_KEY}` }] as Record<string, string>[]) {
        const res = await fetch(`${url}${path}`, { method, headers: { ...headers, 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        expectErrorShape(await res.json(), 'invalid_key', res.headers.get('x-request-id')!);
      }
    }
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect((await fetch(`${url}${path}`)).status, path).toBe(200);
    }
    const doc = await fetch(`${url}/openapi.json`, { headers: { authorization: `Bearer ${OTHER_KEY}` } });
    expect(doc.status).toBe(200);
    const openapi = (await doc.json()) as { paths: Record<string, { post: { operationId: string } }> };
    expect(openapi.paths['/v1/decide']!.post.operationId).toBe('decide');
  });

  it('gives every error code its status over HTTP', async () => {
    const bad = await postDecide(url, TEST_KEY, decideBody('s', { q: { type: 'choice', instructions: 'x', criteria: { a: 'only one' } } }));
    expect(bad.status).toBe(400);
    expectErrorShape(bad.body, 'invalid_question', bad.headers.get('x-request-id')!);

    const unknown = await postDecide(url, TEST_KEY, decideBody('s', undefined, 'svc-omega'));
    expect(unknown.status).toBe(404);
    expectErrorShape(unknown.body, 'not_found', unknown.headers.get('x-request-id')!);
    expect(unknown.body.message).toContain('svc-alpha-2026-10');
    expect(unknown.body.message).toContain('svc-alpha-2026-11');

    const tooManyTokens = await postDecide(url, TEST_KEY, decideBody(longState(5000)));
    expect(tooManyTokens.status).toBe(413);
    expectErrorShape(tooManyTokens.body, 'state_too_long', tooManyTokens.headers.get('x-request-id')!);
    expect(tooManyTokens.body.message).toMatch(/state is \d+ tokens; the limit for this request is \d+ tokens/);

    const tooManyBytes = await postDecide(url, TEST_KEY, decideBody('word '.repeat(300_000)));
    expect(tooManyBytes.status).toBe(413);
    expectErrorShape(tooManyBytes.body, 'state_too_long', tooManyBytes.headers.get('x-request-id')!);

    const noKey = await postDecide(url, 'nope', decideBody('s'));
    expect(noKey.status).toBe(401);
    expectErrorShape(noKey.body, 'invalid_key', noKey.headers.get('x-request-id')!);
  });

  it('survives malformed bodies: each is a 4xx in the error shape, and the server keeps answering', async () => {
    let deep = '"leaf"';
    for (let i = 0; i < 100; i++) deep = `{"d":${deep}}`;
    const manyQuestions = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`q${i}`, { type: 'noul', instructions: 'x' }]));
    const bodies: Array<[string, string | Uint8Array, number]> = [
      ['bad JSON', '{"model":"svc-alpha","state":', 400],
      ['not JSON at all', 'model=svc-alpha', 400],
      ['wrong types', '{"model":["svc-alpha"],"state":true,"questions":"all"}', 400],
      ['65 questions', JSON.stringify(decideBody('s', manyQuestions)), 400],
      ['100-deep state', `{"model":"svc-alpha","state":${deep},"questions":{"a":{"type":"noul","instructions":"x"}}}`, 400],
      ['100-deep questions', `{"model":"svc-alpha","state":"s","questions":${deep}}`, 400],
      ['invalid UTF-8', Buffer.concat([Buffer.from('{"model":"svc-alpha","state":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), 400],
      ['lone surrogate escape', '{"model":"svc-alpha","state":"s","questions":{"q\\ud800":{"type":"noul","instructions":"x"}}}', 400],
      ['2 MiB', JSON.stringify(decideBody('x'.repeat(2 * 1024 * 1024))), 413],
      ['empty', '', 400],
    ];
    for (const [what, body, status] of bodies) {
      const res = await postDecide(url, TEST_KEY, body);
      expect(res.status, what).toBe(status);
      expectErrorShape(res.body, status === 413 ? 'state_too_long' : 'invalid_question', res.headers.get('x-request-id')!);
    }
    // Garbage that is not HTTP: a 400 in the error shape on that connection only.
    const reply = await new Promise<string>((resolve, reject) => {
      const { port } = new URL(url);
      const sock = net.connect(Number(port), '127.0.0.1', () => sock.write('BLAH /v1/decide HTTP/9.9\r\n\0\0\r\n\r\n'));
      let data = '';
      sock.setEncoding('utf8').on('data', (d: string) => (data += d));
      sock.on('close', () => resolve(data));
      sock.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expectErrorShape(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)), 'invalid_question', /x-request-id: (\S+)/.exec(reply)![1]);

    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const after = await postDecide(url, TEST_KEY, decideBody('Still serving?'));
    expect(after.status).toBe(200);
  });

  it('50 concurrent requests share forward passes, and each answer equals the request sent alone', async () => {
    const concurrent = states('conc', 50).map((s) => decideBody(s));
    const before = await metrics();
    const together = await Promise.all(concurrent.map((b) => postDecide(url, TEST_KEY, b)));
    const mid = await metrics();
    for (const r of together) expect(r.status).toBe(200);

    const sequential = states('seq', 50).map((s) => decideBody(s));
    for (const b of sequential) expect((await postDecide(url, TEST_KEY, b)).status).toBe(200);
    const after = await metrics();

    const passes = (t: string) => metricValue(t, 'decide_engine_forward_passes_total');
    const concurrentPasses = passes(mid) - passes(before);
    const sequentialPasses = passes(after) - passes(mid);
    console.log(`forward passes: 50 concurrent requests ${concurrentPasses}, 50 sequential requests ${sequentialPasses}`);
    expect(concurrentPasses).toBeGreaterThan(0);
    expect(sequentialPasses).toBeGreaterThanOrEqual(50);
    // A call of one request takes several passes on the CPU (its prefix, then its questions): shared
    // calls show as fewer passes than the same requests one after another, however fast each call.
    expect(concurrentPasses).toBeLessThan(sequentialPasses);

    // Each request again, alone.
    for (let i = 0; i < concurrent.length; i++) {
      const alone = await postDecide(url, TEST_KEY, concurrent[i]);
      expect(alone.status).toBe(200);
      expectSameAnswers(together[i]!.body.answers, alone.body.answers, 1e-6);
    }
  });

  it('the library (DecisionService on the same models dir) gives the same answers as HTTP', async () => {
    const svc = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, threads: 1 });
    try {
      for (const [i, state] of [['lib-1', 'Library parity: the invoice was charged twice.'], ['lib-2', { ticket: 'Library parity', n: [1, 2, 3] }]] as const) {
        const body = decideBody(state);
        const http = await postDecide(url, TEST_KEY, body);
        const lib = await svc.decide(body);
        expect(http.status, i).toBe(200);
        expect(lib.model).toBe(http.body.model);
        expect(lib.usage.input_tokens).toBe(http.body.usage.input_tokens);
        expectSameAnswers(lib.answers, http.body.answers, 1e-6);
      }
    } finally {
      await svc.close();
    }
  });

  it('/readyz and /metrics over HTTP', async () => {
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { models: string[] }).models).toContain('svc-alpha-2026-11');
    const text = await metrics();
    expect(text).toContain('# TYPE decide_engine_forward_passes_total counter');
    expect(metricValue(text, 'decide_http_requests_total', 'route="/v1/decide",status="200"')).toBeGreaterThan(100);
    expect(metricValue(text, 'decide_engine_cached_tokens_total')).toBeGreaterThan(0);
  });
});
