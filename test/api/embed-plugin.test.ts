// decisionApp, the API as a fastify plugin, registered in a dependent's own fastify instance with
// nothing but what `decision-engine/server` and `decision-engine/service` export (src/entry/): the
// plugin's options type and ApiKeySet are exported, so its documented use compiles and serves.
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ApiKeySet, decisionApp, type DecisionAppOptions } from '../../src/entry/server.js';
import { DecisionService } from '../../src/entry/service.js';
import { AUTH, MIXED_QUESTIONS, TEST_KEY, decideBody, expectValidAnswers, tempModels, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let app: FastifyInstance;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  const service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  const options: DecisionAppOptions = {
    service,
    keys: new ApiKeySet().add(TEST_KEY),
    rateLimit: false,
    bodyLimitBytes: 1024 * 1024,
    dataDir: dirs.dataDir,
    ownsService: true,
  };
  app = Fastify();
  await app.register(decisionApp, options);
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  dirs?.cleanup();
});

describe('decisionApp in a dependent fastify instance', () => {
  it('answers /v1/decide with the configured key', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/decide', headers: AUTH, payload: decideBody('The parcel arrived broken.') });
    expect(res.statusCode).toBe(200);
    expect(res.json().model).toBe('svc-alpha-2026-10');
    expectValidAnswers(res.json().answers, MIXED_QUESTIONS);
  });

  it('refuses another key with 401 invalid_key', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/decide', headers: { authorization: 'Bearer not-this-one' }, payload: decideBody('x') });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('invalid_key');
  });
});
