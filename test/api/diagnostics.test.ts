/**
 * Over HTTP (app.inject, real service on the tiny model): the opt-in label_mass per answer, the
 * calibration a version's decision.json carries applied at decide time (the old temperature-only
 * format and the temperature + label_bias format), and GET /v1/models[/{id}] reporting it.
 */
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { validateDecideRequest } from '../../src/api/validate.js';
import { answerFromLogits } from '../../src/runtime/calibrate.js';
import { labelMass } from '../../src/runtime/model-runtime.js';
import { writeModelVersion } from '../../src/models/model-version.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, tempModels, type TempDirs } from './fixtures.js';

const QUESTIONS = {
  topic: { type: 'choice', instructions: 'Topic?', criteria: { shipping: 'Delivery', billing: 'Charges', other: 'Else' } },
  refund: { type: 'noul', instructions: 'Refund wanted?' },
};
const STATE = 'My card was charged twice for order 1182.';

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  const baseDir = path.join(dirs.modelsDir, 'svc-alpha-2026-10');
  // The format every decision.json had before `decide calibrate`: temperatures only.
  await writeModelVersion({ modelsDir: dirs.modelsDir, baseDir, newId: 'svc-alpha-2026-11', decision: () => ({ calibration: { temperature: { choice: 2 } } }) });
  // What `decide calibrate` writes.
  await writeModelVersion({
    modelsDir: dirs.modelsDir,
    baseDir,
    newId: 'svc-alpha-2026-11-22',
    decision: () => ({
      calibration: {
        temperature: { noul: 1, choice: 0.7, score: 1 },
        label_bias: { choice: { A: 1.5, B: -0.5, C: -1 } },
        fit: { base_model: 'svc-alpha-2026-10', date: '2026-11-22T10:00:00.000Z', held_out: { choice: { ece: 0.021 }, noul: { ece: 0.04 } } },
      },
    }),
  });
  // A hand-written fit record with figures of the wrong type, and the nulls decide calibrate writes
  // for a type without held-out answers.
  await writeModelVersion({
    modelsDir: dirs.modelsDir,
    baseDir,
    newId: 'svc-alpha-2026-09',
    decision: () => ({
      calibration: {
        temperature: { choice: 1.2 },
        fit: {
          held_out: {
            choice: { ece: 'x', nll: null, observations: 'many', kept: 5, reliability: 'no', poor_fit: 'bad', ece_ci: [null, null], accuracy: 0.5, note: 'by hand' },
            score: 'str',
            noul: { brier: 0.2, nll_ci: [0.1, 0.2], reliability: { before: [{ confidence: 0.7, accuracy: 0.6, count: 20 }], after: [] } },
          },
        },
      },
    }),
  });
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, preload: [] });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false, logger: false });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

const decide = (body: Record<string, unknown>) => app.inject({ method: 'POST', url: '/v1/decide', headers: AUTH, payload: { state: STATE, questions: QUESTIONS, ...body } });

async function raw(model: string) {
  const [outcome] = await service.decideRecords(model, [validateDecideRequest({ model, state: STATE, questions: QUESTIONS })]);
  if (!outcome!.ok) throw new Error('scoring failed');
  return outcome!.raw!;
}

describe('label_mass', () => {
  it('is absent unless asked for, and is the label share of the next-token probability when asked', async () => {
    const plain = (await decide({ model: 'svc-alpha-2026-10' })).json();
    expect(plain.answers.topic).not.toHaveProperty('label_mass');

    const res = await decide({ model: 'svc-alpha-2026-10', label_mass: true });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const scores = await raw('svc-alpha-2026-10');
    for (const [i, id] of ['topic', 'refund'].entries()) {
      const mass = body.answers[id].label_mass;
      expect(mass).toBeGreaterThan(0);
      expect(mass).toBeLessThanOrEqual(1);
      expect(mass).toBeCloseTo(labelMass(scores[i]!.labelLogits, scores[i]!.logSumExp), 5);
      // The probabilities are the same with or without diagnostics.
      expect(body.answers[id].probs).toEqual(plain.answers[id].probs);
    }
    // A random-weight model spreads its mass over 151k tokens: far from 1.
    expect(body.answers.topic.label_mass).toBeLessThan(0.5);
  });

  it('rejects a non-boolean label_mass as invalid_question', async () => {
    const res = await decide({ model: 'svc-alpha', label_mass: 1 });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_question', message: expect.stringMatching(/^label_mass/) });
  });
});

describe('calibration applied at decide time', () => {
  it('an old temperature-only decision.json still works', async () => {
    const scores = await raw('svc-alpha-2026-10');
    const body = (await decide({ model: 'svc-alpha-2026-11' })).json();
    const q = validateDecideRequest({ model: 'x', state: STATE, questions: QUESTIONS }).questions;
    expect(body.answers.topic).toEqual(answerFromLogits(q[0]!, scores[0]!.labelLogits, 2));
    expect(body.answers.refund).toEqual(answerFromLogits(q[1]!, scores[1]!.labelLogits, 1));
  });

  it('temperature and label bias per type; the alias follows the newest date', async () => {
    const scores = await raw('svc-alpha-2026-10');
    const res = await decide({ model: 'svc-alpha' });
    const body = res.json();
    expect(body.model).toBe('svc-alpha-2026-11-22');
    const q = validateDecideRequest({ model: 'x', state: STATE, questions: QUESTIONS }).questions;
    expect(scores[0]!.labels).toEqual(['A', 'B', 'C']);
    expect(body.answers.topic).toEqual(answerFromLogits(q[0]!, scores[0]!.labelLogits, 0.7, [1.5, -0.5, -1]));
    expect(body.answers.refund).toEqual(answerFromLogits(q[1]!, scores[1]!.labelLogits, 1));
  });
});

describe('GET /v1/models and /v1/models/{id}', () => {
  it('lists whether each version is calibrated and its held-out ECE', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/models', headers: AUTH });
    expect(res.statusCode).toBe(200);
    const byId = Object.fromEntries(res.json().data.map((m: { id: string }) => [m.id, m]));
    expect(byId['svc-alpha-2026-10']).toMatchObject({ calibrated: false });
    expect(byId['svc-alpha-2026-10']).not.toHaveProperty('held_out_ece');
    expect(byId['svc-alpha-2026-11']).toMatchObject({ calibrated: true });
    expect(byId['svc-alpha-2026-11-22']).toMatchObject({
      alias: 'svc-alpha',
      calibrated: true,
      held_out_ece: { choice: 0.021, noul: 0.04 },
      calibrated_from: 'svc-alpha-2026-10',
      calibrated_at: '2026-11-22T10:00:00.000Z',
    });
    expect(res.json().aliases).toEqual({ 'svc-alpha': 'svc-alpha-2026-11-22' });
  });

  it('leaves out held-out figures that are null or of the wrong type instead of failing the listing or reading them as 0', async () => {
    const expected = {
      calibrated: true,
      held_out_ece: {},
      held_out: {
        choice: { accuracy: 0.5 },
        noul: { brier: 0.2, nll_ci: [0.1, 0.2], reliability: { before: [{ confidence: 0.7, accuracy: 0.6, count: 20 }], after: [] } },
      },
    };
    const list = await app.inject({ method: 'GET', url: '/v1/models', headers: AUTH });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.find((m: { id: string }) => m.id === 'svc-alpha-2026-09')).toMatchObject(expected);
    const one = await app.inject({ method: 'GET', url: '/v1/models/svc-alpha-2026-09', headers: AUTH });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject(expected);
    expect(one.json().held_out).toEqual(expected.held_out);
  });

  it('one model by id or alias; 404 not_found otherwise; 401 without a key', async () => {
    const one = await app.inject({ method: 'GET', url: '/v1/models/svc-alpha', headers: AUTH });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({ id: 'svc-alpha-2026-11-22', object: 'model', calibrated: true, held_out_ece: { choice: 0.021 } });
    const base = await app.inject({ method: 'GET', url: '/v1/models/svc-alpha-2026-10', headers: AUTH });
    expect(base.json()).toMatchObject({ id: 'svc-alpha-2026-10', calibrated: false });
    const missing = await app.inject({ method: 'GET', url: '/v1/models/svc-omega', headers: AUTH });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('not_found');
    expect((await app.inject({ method: 'GET', url: '/v1/models/svc-alpha' })).statusCode).toBe(401);
  });
});
