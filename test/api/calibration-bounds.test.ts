/**
 * Over real HTTP (a listening server on the tiny model): a hand-written decision.json whose
 * temperature or label bias is past the bounds the loader accepts (TEMPERATURE_BOUNDS,
 * MAX_ABS_LABEL_BIAS) makes its version broken, named in GET /v1/models and 500 when used; never a
 * 200 with null probabilities. Values at the bounds answer with finite probabilities summing to 1.
 */
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { writeModelVersion } from '../../src/models/model-version.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, tempModels, type TempDirs } from './fixtures.js';

const QUESTIONS = {
  topic: { type: 'choice', instructions: 'Topic?', criteria: { shipping: 'Delivery', billing: 'Charges', other: 'Else' } },
  refund: { type: 'noul', instructions: 'Refund wanted?' },
  urgency: { type: 'score', instructions: 'Urgent?', criteria: { '0': 'no', '1': 'a bit', '2': 'very' } },
};

/** Version id -> its calibration section. */
const VERSIONS: Record<string, Record<string, unknown>> = {
  'cold-2026-10': { temperature: { noul: 1e-320, choice: 1e-320, score: 1e-320 } },
  'prior-2026-10': { temperature: { choice: 0.5 }, label_bias: { choice: { A: -1.7e308, B: -1.7e308 } } },
  'hot-2026-10': { temperature: { score: 1e9 } },
  'edge-2026-10': { temperature: { noul: 1e-4, choice: 1e4, score: 1e-4 }, label_bias: { choice: { A: -1e4, B: 1e4 }, score: { '0': 1e4 } } },
};

let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  const baseDir = path.join(dirs.modelsDir, 'svc-alpha-2026-10');
  for (const [newId, calibration] of Object.entries(VERSIONS)) {
    await writeModelVersion({ modelsDir: dirs.modelsDir, baseDir, newId, decision: () => ({ calibration }) });
  }
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, preload: [] });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  url = `http://127.0.0.1:${address.port}`;
}, 120_000);

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

async function decide(model: string): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${url}/v1/decide`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: JSON.stringify({ model, state: 'My card was charged twice.', questions: QUESTIONS }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

it('a temperature or bias past the bounds: the version is broken, naming the field; using it is a 500, never nulls', async () => {
  const fields: Record<string, RegExp> = {
    'cold-2026-10': /cold-2026-10\/decision\.json: calibration\.temperature\.noul must be a number from 0\.0001 to 10000, got 1e-320/,
    'prior-2026-10': /calibration\.label_bias\.choice\.A must be a number from -10000 to 10000, got -1\.7e\+308/,
    'hot-2026-10': /calibration\.temperature\.score must be a number from 0\.0001 to 10000, got 1000000000/,
  };
  for (const [id, field] of Object.entries(fields)) {
    const used = await decide(id);
    expect(used.status, id).toBe(500);
    expect(used.body.code).toBe('server_error');
    const listed = await (await fetch(`${url}/v1/models/${id}`, { headers: AUTH })).json();
    expect(listed).toMatchObject({ id, status: 'broken', error: expect.stringMatching(field) });
  }
  const all = (await (await fetch(`${url}/v1/models`, { headers: AUTH })).json()) as { data: Array<{ id: string; status: string }> };
  const status = Object.fromEntries(all.data.map((m) => [m.id, m.status]));
  expect(status).toMatchObject({ 'cold-2026-10': 'broken', 'prior-2026-10': 'broken', 'hot-2026-10': 'broken' });
});

it('values at the bounds load and answer finite probabilities that sum to 1', async () => {
  const { status, body } = await decide('edge-2026-10');
  expect(status).toBe(200);
  for (const answer of Object.values(body.answers) as Array<{ probs: Record<string, number>; top: string; confidence: number }>) {
    const values = Object.values(answer.probs);
    expect(values.every((v) => typeof v === 'number' && v >= 0 && v <= 1)).toBe(true);
    expect(values.reduce((s, v) => s + Math.round(v * 1e6), 0)).toBe(1e6);
    expect(answer.confidence).toBe(answer.probs[answer.top]);
  }
  // A bias of -10000 on A (shipping) at T = 10000 still moves it to the top; +10000 rules out B.
  expect(body.answers.topic.top).toBe('shipping');
  expect(body.answers.urgency.probs['0']).toBe(0);
  const listed = await (await fetch(`${url}/v1/models/edge-2026-10`, { headers: AUTH })).json();
  expect(listed).toMatchObject({ status: 'ok' });
});
