/**
 * One large request does not hold the engine for everyone else, and an abandoned one stops taking
 * engine calls. A listening server (real HTTP) on the tiny model, its scheduler's call budget at
 * 2,048 tokens so that a request of 64 long choice questions (~25,000 tokens) is cut into a dozen
 * engine calls between its questions.
 *
 * Proven by ordering and by the scheduler's call counter, not by a clock: a small request sent
 * while the large one computes is answered before it; the large one's answers equal the same
 * questions asked alone; and once its client hangs up, at most the call running then (and one
 * already taken) is computed of the dozen it needed (the engine's token counter says so).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { createServer } from '../../src/server/app.js';
import { validateDecideRequest } from '../../src/api/validate.js';
import { DecisionService, type DecisionServiceOptions } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, decideBody, letters, tempModels, type Questions, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;
let base: string;

const CALL_TOKENS = 2048;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  service = await DecisionService.open({
    modelsDir: dirs.modelsDir,
    ensureDefaultModel: false,
    runtime: { scheduler: { maxCallTokens: CALL_TOKENS } },
  });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

const STATE = { ticket: 'My card was charged twice for order 1182 and the parcel never arrived.' };

/** 64 choice questions of 26 options with long descriptions: ~400 tokens each. */
function largeQuestions(tag: string): Questions {
  const criteria = Object.fromEntries(Object.keys(letters(26)).map((k, i) => [`o${i}`, `option ${k} of the ${tag} list, described at some length`]));
  const questions: Questions = {};
  for (let i = 0; i < 64; i++) questions[`q${i}`] = { type: 'choice', instructions: `Which ${tag} option fits point ${i}?`, criteria };
  return questions;
}

async function decide(body: unknown, signal?: AbortSignal): Promise<{ status: number; json: any; usage?: unknown }> {
  const res = await fetch(`${base}/v1/decide`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify(body), signal });
  return { status: res.status, json: await res.json() };
}

async function metric(name: string, labels = 'model="svc-alpha-2026-10"'): Promise<number> {
  const body = await (await fetch(`${base}/metrics`)).text();
  const line = body.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  if (!line) throw new Error(`${name}{${labels}} missing from /metrics`);
  return Number(line.split(' ').pop());
}

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('timed out waiting');
}

const idle = async () => (await metric('decide_engine_calls_in_progress')) === 0 && (await metric('decide_engine_queue_depth', 'model="svc-alpha-2026-10",queue="live"')) === 0;

it('a small request sent while a large one computes is answered first; the large one is cut between its questions and answers as if asked alone', async () => {
  const questions = largeQuestions('fair');
  const callsBefore = await metric('decide_scheduler_calls_total');
  const order: string[] = [];
  const large = decide(decideBody(STATE, questions)).then((r) => (order.push('large'), r));
  await waitFor(async () => (await metric('decide_scheduler_calls_total')) > callsBefore);
  const small = decide(decideBody(STATE, { refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' } })).then((r) => (order.push('small'), r));
  const [largeRes, smallRes] = await Promise.all([large, small]);
  expect(largeRes.status).toBe(200);
  expect(smallRes.status).toBe(200);
  expect(order).toEqual(['small', 'large']);
  const calls = (await metric('decide_scheduler_calls_total')) - callsBefore;
  expect(largeRes.json.usage.input_tokens).toBeGreaterThan(10 * CALL_TOKENS);
  expect(calls).toBeGreaterThanOrEqual(10);
  // Cutting changes no answer: three of its questions asked on their own give the same probabilities.
  for (const id of ['q0', 'q31', 'q63']) {
    const alone = await decide(decideBody(STATE, { [id]: questions[id]! }));
    expect(alone.status).toBe(200);
    for (const [key, p] of Object.entries(alone.json.answers[id].probs as Record<string, number>)) {
      expect(Math.abs(largeRes.json.answers[id].probs[key] - p)).toBeLessThanOrEqual(1e-6);
    }
  }
});

it('a large request whose client hangs up stops taking engine calls; the server goes on answering', async () => {
  const questions = largeQuestions('abandoned');
  await waitFor(idle);
  const callsBefore = await metric('decide_scheduler_calls_total');
  const tokensBefore = await metric('decide_engine_suffix_tokens_total');
  const controller = new AbortController();
  const large = decide(decideBody(STATE, questions), controller.signal).catch((err: unknown) => err);
  await waitFor(async () => (await metric('decide_scheduler_calls_total')) > callsBefore);
  controller.abort();
  expect(await large).toMatchObject({ name: 'AbortError' });
  await waitFor(idle);
  // It needed a dozen calls of ~2,048 tokens (the test above); the one running when the client
  // left and at most one more were computed.
  expect((await metric('decide_scheduler_calls_total')) - callsBefore).toBeLessThanOrEqual(2);
  expect((await metric('decide_engine_suffix_tokens_total')) - tokensBefore).toBeLessThanOrEqual(2 * CALL_TOKENS);
  const next = await decide(decideBody(STATE, { refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' } }));
  expect(next.status).toBe(200);
});

it('the library: DecisionService.decide with an aborted signal rejects with its reason and computes nothing', async () => {
  await waitFor(idle);
  const callsBefore = await metric('decide_scheduler_calls_total');
  const reason = new Error('no longer wanted');
  await expect(service.decide(decideBody(STATE, largeQuestions('library')), { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  expect(await metric('decide_scheduler_calls_total')).toBe(callsBefore);
});

it('a request that waits maxQueueWaitMs without starting gets 429 rate_limited with Retry-After; the one running is answered', async () => {
  // A second server whose requests may wait 100 ms, and whose calls hold the whole large request
  // (a second or more of compute): what arrives while that call computes is refused.
  const { service: busy, base: busyBase, post, close } = await openBusyServer({ runtime: { scheduler: { maxCallTokens: 65536, maxQueueWaitMs: 100 } } });
  try {
    expect((await post(decideBody(STATE, { refund: { type: 'noul', instructions: 'Refund?' } }))).status).toBe(200); // loads the model
    // The large one through the library's record path, whose wait is not bounded (a live request's
    // 100 ms would also cover tokenizing its 64 questions).
    const large = busy.decideRecords('svc-alpha', [validateDecideRequest(decideBody(STATE, largeQuestions('busy')))], 'live');
    await waitFor(async () => {
      const body = await (await fetch(`${busyBase}/metrics`)).text();
      return body.includes('decide_engine_calls_in_progress{model="svc-alpha-2026-10"} 1');
    });
    const refused = await post(decideBody(STATE, { refund: { type: 'noul', instructions: 'Refund?' } }));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ code: 'rate_limited', message: expect.stringContaining('without starting') });
    expect((await large)[0]!.ok).toBe(true);
  } finally {
    await close();
  }
});

it('the wait limit counts from arrival: a live request whose tokenizing waits past it behind other live work gets 429 without being scored', async () => {
  // Live records (the library's record path at live priority) queue their states in the model's
  // one tokenizer thread; the live request's tokens wait behind them for longer than its 300 ms.
  // The records' states are over a 16-token limit, so they fail once tokenized and the engine
  // scores none of them.
  const waitMs = 300;
  const { service: busy, post, close } = await openBusyServer({ maxStateTokens: 16, runtime: { scheduler: { maxQueueWaitMs: waitMs } } });
  const question = { refund: { type: 'noul', instructions: 'Refund?' } };
  try {
    expect((await post(decideBody('Late.', question))).status).toBe(200); // loads the model
    let othersDone = 0;
    const others = busy.decideRecords('svc-alpha', longStateRecords(400, question), 'live').then((outcomes) => ((othersDone = performance.now()), outcomes));
    const sent = performance.now();
    const refused = await post(decideBody('Late.', question));
    const answeredAt = performance.now();
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ code: 'rate_limited', message: expect.stringContaining('without starting') });
    // Refused while the others were still tokenizing, not once its own tokens came back.
    expect(othersDone).toBe(0);
    expect(answeredAt - sent).toBeGreaterThanOrEqual(waitMs - 1);
    expect((await others).every((o) => !o.ok && o.error.code === 'state_too_long')).toBe(true);
  } finally {
    await close();
  }
}, 60_000);

it('requests refused for their wait, or whose clients left, drop the texts they still had queued for the tokenizer: the next small request is answered', async () => {
  // Each request asks 64 questions of its own with long option descriptions: 64 texts to tokenize,
  // far more work than its 300 ms wait allows. Refused (429) or abandoned, what it had not yet sent
  // to the tokenizer thread is dropped; before, every text was still tokenized for nobody, and the
  // requests behind them were refused until the backlog drained.
  const waitMs = 300;
  const { base: busyBase, post, close } = await openBusyServer({ runtime: { scheduler: { maxQueueWaitMs: waitMs } } });
  const depth = async () => {
    const line = (await (await fetch(`${busyBase}/metrics`)).text()).split('\n').find((l) => l.startsWith('decide_tokenizer_queue_depth{model="svc-alpha-2026-10",queue="live"}'));
    return Number(line?.split(' ').pop());
  };
  const heavy = (n: number) => {
    const questions: Questions = {};
    for (let q = 0; q < 64; q++) {
      const criteria = Object.fromEntries([0, 1, 2, 3].map((o) => [`o${o}`, `request ${n} question ${q} option ${o}: ${'words that take a while to tokenize '.repeat(50)}`]));
      questions[`q${q}`] = { type: 'choice', instructions: `Which fits ${n}.${q}?`, criteria };
    }
    return decideBody(`state ${n}`, questions);
  };
  const small = decideBody('Late.', { refund: { type: 'noul', instructions: 'Refund?' } });
  try {
    expect((await post(small)).status).toBe(200); // loads the model
    const leaving = new AbortController();
    const refused = Array.from({ length: 8 }, (_, n) => post(heavy(n)).then((r) => r.status));
    const abandoned = Array.from({ length: 8 }, (_, n) => post(heavy(100 + n), leaving.signal).then((r) => r.status, (err: Error) => err.name));
    // The clients of the second half leave once their texts wait in the tokenizer's queue.
    for (let i = 0; i < 400 && (await depth()) < 200; i++) await new Promise((r) => setTimeout(r, 5));
    expect(await depth()).toBeGreaterThanOrEqual(200);
    leaving.abort();
    expect(await Promise.all(abandoned)).toEqual(Array(8).fill('AbortError'));
    const statuses = await Promise.all(refused);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(6);
    // Nothing is left queued for them (a text already in the thread runs; its answer is dropped).
    await new Promise((r) => setTimeout(r, 50));
    expect(await depth()).toBe(0);
    const next = await post(small);
    expect(next.status).toBe(200);
  } finally {
    await close();
  }
}, 120_000);

it('a question two requests share: the one that started tokenizing it gives up, the other is still answered', async () => {
  // The tokenizer is kept busy by a third request, so the shared question's text is still queued
  // (under the first request's signal) when that request is abandoned.
  const long = (tag: string) => {
    const questions: Questions = {};
    for (let q = 0; q < 32; q++) {
      questions[`q${q}`] = { type: 'choice', instructions: `${tag} ${q}?`, criteria: { a: `${tag} ${q} a ${'filler words here '.repeat(100)}`, b: 'b' } };
    }
    return questions;
  };
  const shared = { shared: { type: 'choice', instructions: `Shared question ${Date.now()}?`, criteria: { yes: 'Yes', no: 'No' } } };
  const leaving = new AbortController();
  const busy = service.decide(decideBody('busy', long(`busy ${Date.now()}`)));
  const first = service.decide(decideBody('first state', shared), { signal: leaving.signal }).catch((err: Error) => err.name);
  const second = service.decide(decideBody('second state', shared));
  await new Promise((r) => setTimeout(r, 20));
  leaving.abort();
  expect(await first).toBe('AbortError');
  const answered = await second;
  expect(Object.keys(answered.answers)).toEqual(['shared']);
  await busy;
});

it('batch records tokenize behind live requests: a live request sent while 400 records wait for the tokenizer is answered before they are tokenized', async () => {
  // The same records at batch priority: the tokenizer thread holds one of them at a time, and the
  // live request's texts go before the rest. /metrics shows the records still waiting when it is answered.
  const { service: busy, base: busyBase, post, close } = await openBusyServer({ maxStateTokens: 16 });
  const depth = async (queue: string) => {
    const line = (await (await fetch(`${busyBase}/metrics`)).text()).split('\n').find((l) => l.startsWith(`decide_tokenizer_queue_depth{model="svc-alpha-2026-10",queue="${queue}"}`));
    return Number(line?.split(' ').pop());
  };
  const question = { refund: { type: 'noul', instructions: 'Refund?' } };
  try {
    expect((await post(decideBody('Late.', question))).status).toBe(200); // loads the model
    let batchDone = false;
    const batch = busy.decideRecords('svc-alpha', longStateRecords(400, question), 'batch').then((outcomes) => ((batchDone = true), outcomes));
    // Sent once the records wait in the tokenizer's queue (not before them).
    for (let i = 0; i < 2000 && (await depth('batch')) < 300; i++) await new Promise((r) => setTimeout(r, 2));
    expect(await depth('batch')).toBeGreaterThanOrEqual(300);
    const live = await post(decideBody('Late.', { other: { type: 'noul', instructions: 'Was it late?' } }));
    expect(live.status).toBe(200);
    expect(batchDone).toBe(false);
    expect(await depth('batch')).toBeGreaterThan(100);
    expect(await depth('live')).toBe(0);
    expect((await batch).every((o) => !o.ok && o.error.code === 'state_too_long')).toBe(true);
    expect(await depth('batch')).toBe(0);
  } finally {
    await close();
  }
}, 60_000);

/**
 * A second server on the same models with its own service options (a short queue wait, a small
 * state limit), and its own data dir: one process owns a batch data dir.
 */
async function openBusyServer(options: Omit<DecisionServiceOptions, 'modelsDir' | 'ensureDefaultModel'>) {
  const service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, ...options });
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'busy-data-'));
  const server = await createServer({ service, apiKeys: [TEST_KEY], dataDir, rateLimit: false, logger: false });
  await server.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
  return {
    service,
    base,
    post: (body: unknown, signal?: AbortSignal) =>
      fetch(`${base}/v1/decide`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify(body), signal }),
    async close() {
      await server.close();
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** `n` records of distinct ~1,500-token states asking `question`. */
function longStateRecords(n: number, question: Questions) {
  return Array.from({ length: n }, (_, i) => validateDecideRequest(decideBody(`record ${i}: ${'the parcel came late and the box was open, '.repeat(180)}`, question)));
}
