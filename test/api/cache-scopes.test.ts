/**
 * The prefix cache is partitioned by API key (real service on the tiny model, real HTTP through
 * app.inject): a key never gets a hit on a state only another key sent, so `usage.cached_tokens`
 * (and the time a hit saves) tells nothing about other keys' states; one key's repeats still hit;
 * the answers are the same whoever asks. Batch records score in their owner's scope, and the
 * library's decide() checks its context argument.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { validateDecideRequest } from '../../src/api/validate.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { decideBody, expectSameAnswers, OTHER_KEY, TEST_KEY, tempModels, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  app = await createServer({ service, apiKeys: [TEST_KEY, OTHER_KEY], dataDir: dirs.dataDir, rateLimit: false, logger: false });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

const QUESTIONS = { refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' } };

async function decide(key: string, state: string) {
  const res = await app.inject({ method: 'POST', url: '/v1/decide', headers: { authorization: `Bearer ${key}` }, payload: decideBody(state, QUESTIONS) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { answers: Record<string, never>; usage: { input_tokens: number; cached_tokens: number } };
}

async function openAiDecision(key: string, state: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/decisions',
    headers: { authorization: `Bearer ${key}` },
    payload: { model: 'svc-alpha', input: state, questions: [{ name: 'refund', type: 'predicate', instructions: 'Does the customer ask for a refund?' }] },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { usage: { input_tokens_details: { cached_tokens: number } } };
}

describe('the prefix cache, per API key', () => {
  it("a key gets no hit on another key's state, on /v1/decide and /v1/decisions; its own repeats hit", async () => {
    const secret = 'Account 4471: the door PIN is 7319 and must stay private.';
    const first = await decide(TEST_KEY, secret);
    expect((await decide(TEST_KEY, secret)).usage.cached_tokens).toBeGreaterThan(0);

    // The other key's first request: nothing of it is cached for that key, not even the system text.
    const other = await decide(OTHER_KEY, secret);
    expect(other.usage.cached_tokens).toBe(0);
    expectSameAnswers(other.answers, first.answers);
    // A guess that shares all but the last digit: only what this key itself sent before is cached.
    const guess = await decide(OTHER_KEY, 'Account 4471: the door PIN is 7318 and must stay private.');
    const own = await decide(OTHER_KEY, secret);
    expect(own.usage.cached_tokens).toBeGreaterThan(guess.usage.cached_tokens);

    const fresh = 'Order 99120 arrived with a cracked screen; I want my money back.';
    await decide(TEST_KEY, fresh);
    const viaOpenAi = await openAiDecision(OTHER_KEY, fresh);
    const againOwn = await openAiDecision(TEST_KEY, fresh);
    expect(againOwn.usage.input_tokens_details.cached_tokens).toBeGreaterThan(viaOpenAi.usage.input_tokens_details.cached_tokens);
  });

  it('batch records score in the scope the caller names (the job owner), live and batch sharing it', async () => {
    const request = validateDecideRequest(decideBody('Parcel 5521 never arrived; please send it again.', QUESTIONS));
    const live = await service.decideNormalized(request, { cacheScope: 'owner-a' });
    const [same] = await service.decideRecords('svc-alpha', [request], 'batch', undefined, 'owner-a');
    const [other] = await service.decideRecords('svc-alpha', [request], 'batch', undefined, 'owner-b');
    expect(same!.ok && other!.ok).toBe(true);
    if (!same!.ok || !other!.ok) return;
    expect(live.cachedTokens).toBe(0);
    expect(same.result.cachedTokens).toBeGreaterThan(0);
    expect(other.result.cachedTokens).toBe(0);
    expectSameAnswers(other.result.answers as never, same.result.answers as never);
  });
});

describe("decide()'s context argument", () => {
  const body = decideBody('Where is my parcel?', QUESTIONS);
  it.each([
    [{ signal: 'x' }, /context\.signal: must be an AbortSignal/],
    [{ priority: 'urgent' }, /context\.priority: must be one of live, batch/],
    [{ requestId: { a: 1 } }, /context\.requestId: must be a non-empty string/],
    [{ cacheScope: 7 }, /context\.cacheScope: must be a string/],
    [{ bogus: 1 }, /context\.bogus: unknown field/],
    ['x', /context: must be an object/],
  ])('%j is refused with 400 invalid_question naming it', async (context, message) => {
    await expect(service.decide(body, context as never)).rejects.toMatchObject({ code: 'invalid_question', status: 400, message: expect.stringMatching(message) });
  });

  it('decideNormalized() refuses a body that validateDecideRequest() did not make', async () => {
    for (const raw of [body, null]) {
      await expect(service.decideNormalized(raw as never)).rejects.toMatchObject({ code: 'invalid_question', status: 400, message: expect.stringMatching(/validateDecideRequest/) });
    }
  });
});
