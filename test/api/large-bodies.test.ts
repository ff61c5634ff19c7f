/**
 * Decision bodies of OFF_THREAD_BODY_BYTES or more are read in the body reader thread
 * (src/server/body-thread.ts), smaller ones on the main thread. Over real HTTP on the tiny model:
 * - the same request read either way gets the same answers, through each door, with what a copy
 *   made by a worker thread would lose: keys written out of JavaScript's order (criteria "10", "2"),
 *   numbers as written (1.0, a 20-digit id), System One's score legends given as objects;
 * - the same bad body (not JSON, a repeated key, not UTF-8, a door's own validation error) gets the
 *   same error either way, in the door's shape;
 * - while large bodies are being read, /healthz answers. Proven by ordering, not by a clock:
 *   `decide_request_bodies_off_thread_in_progress` counts bodies held by the thread, so two /metrics
 *   bodies that both show one held, with the same count of bodies read, bracket a /healthz that was
 *   answered while that body was still being read.
 */
import type { AddressInfo } from 'node:net';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { OFF_THREAD_BODY_BYTES } from '../../src/api/body-limit.js';
import { parseJsonText } from '../../src/api/json-text.js';
import { jsonInOrder } from '../../src/domain/key-order.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, tempModels, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

/** The same JSON text made large with trailing whitespace (positions of any error unchanged). */
const padded = (text: string | Buffer) => Buffer.concat([Buffer.from(text), Buffer.from(' '.repeat(OFF_THREAD_BODY_BYTES + 10))]);

async function post(path: string, body: string | Buffer): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

async function bodiesReadOffThread(): Promise<{ total: number; inProgress: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (name: string) => Number(/^(\S+) (\S+)$/m.exec(text.split('\n').find((l) => l.startsWith(`${name} `)) ?? '')?.[2]);
  return { total: value('decide_request_bodies_off_thread_total'), inProgress: value('decide_request_bodies_off_thread_in_progress') };
}

/** A response's answers as written (key order kept), for comparing two responses. */
function answersText(text: string): string {
  const parsed = parseJsonText(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return jsonInOrder((parsed.value as { answers: unknown }).answers);
}

/** An error response without its request ids, which differ from request to request. */
const withoutIds = (text: string) => text.replace(/"(dec|req|ts)_[0-9A-Za-z]+"/g, '"<id>"');

const STATE = '{"order": 12345678901234567890, "amount": 1.0, "lines": {"10": "cable", "2": "charger"}}';
const REQUESTS: Array<[path: string, body: string]> = [
  [
    '/v1/decide',
    `{"model": "svc-alpha", "state": ${STATE}, "questions": {
      "10": {"type": "choice", "instructions": "Which line is broken?", "criteria": {"10": "the cable", "2": "the charger", "1": "neither"}},
      "2": {"type": "score", "instructions": "How angry?", "criteria": {"2": "very", "0": "calm", "1": "a bit"}}}}`,
  ],
  [
    '/v1/systemone',
    `{"model": "svc-alpha", "state": ${STATE}, "questions": {
      "pick": {"type": "choice", "instructions": "Which line is broken?", "criteria": {"10": "the cable", "2": "the charger"}},
      "level": {"type": "score", "instructions": "How angry?", "criteria": [{"2": "b", "1": "a"}, {"n": 1.0}, "very"]}}}`,
  ],
  [
    '/v1/decisions',
    `{"model": "svc-alpha", "input": [{"role": "user", "content": [{"type": "input_json", "data": ${STATE}}]}],
      "questions": [{"type": "choice", "instructions": "Which?", "choices": [{"value": "true"}, {"value": true}, {"value": "10"}, {"value": "2"}]}]}`,
  ],
];

describe('a large body is read as a small one', () => {
  it.each(REQUESTS)('%s: the same answers, keys in the written order, numbers as written', async (path, body) => {
    const before = await bodiesReadOffThread();
    const small = await post(path, body);
    const large = await post(path, padded(body));
    const after = await bodiesReadOffThread();
    expect(small.status, small.text).toBe(200);
    expect(large.status, large.text).toBe(200);
    // Only the large one went through the thread.
    expect(after.total - before.total).toBe(1);
    expect(answersText(large.text)).toBe(answersText(small.text));
    expect(answersText(small.text)).toMatch(/"10".*"2"/s);
  });

  const BAD: Array<[what: string, path: string, body: string | Buffer]> = [
    ['not JSON', '/v1/decide', '{"model": "svc-alpha", "state": }'],
    ['not JSON', '/v1/systemone', '{"model": "svc-alpha", "state": }'],
    ['not JSON', '/v1/decisions', '{"model": "svc-alpha", "input": }'],
    ['a repeated key', '/v1/decide', '{"model": "svc-alpha", "model": "x"}'],
    ['not UTF-8', '/v1/systemone', Buffer.concat([Buffer.from('{"model": "svc-alpha", "state": "'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])],
    ['an unknown field', '/v1/decide', '{"model": "svc-alpha", "state": "x", "questions": {"q": {"type": "noul", "instructions": "x?"}}, "colour": 1}'],
    ['an unknown field', '/v1/systemone', '{"model": "svc-alpha", "state": "x", "questions": {"q": {"type": "noul", "instructions": "x?", "colour": 1}}}'],
    ['an unknown field', '/v1/decisions', '{"model": "svc-alpha", "input": "x", "questions": [{"type": "predicate", "instructions": "x?", "colour": 1}]}'],
  ];
  it.each(BAD)('%s to %s: the same error', async (_what, path, body) => {
    const small = await post(path, body);
    const large = await post(path, padded(body));
    expect(small.status).toBeGreaterThanOrEqual(400);
    expect(small.status).toBeLessThan(500);
    expect(large.status).toBe(small.status);
    expect(withoutIds(large.text)).toBe(withoutIds(small.text));
  });
});

it('/healthz answers while large bodies are being read', async () => {
  const state: Record<string, number | string> = {};
  for (let i = 0; i < 40_000; i++) state[`k${i}`] = i % 2 ? i + 0.5 : `v${i}`;
  const body = JSON.stringify({ model: 'svc-alpha', state, questions: { q: { type: 'noul', instructions: 'x?' } } });
  let settled = false;
  const posts = Promise.all(Array.from({ length: 4 }, () => post('/v1/decide', body))).finally(() => (settled = true));

  let answeredWhileReading = 0;
  while (!settled && answeredWhileReading === 0) {
    const first = await bodiesReadOffThread();
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    await health.text();
    const second = await bodiesReadOffThread();
    if (first.inProgress > 0 && second.inProgress > 0 && first.total === second.total) answeredWhileReading += 1;
  }
  const answers = await posts;
  expect(answeredWhileReading).toBe(1);
  // Read and judged there: a state far beyond the tiny model's context.
  for (const res of answers) expect(res.status, res.text).toBe(413);
});
