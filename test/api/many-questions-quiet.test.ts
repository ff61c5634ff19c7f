/**
 * A request of many questions never asked before tokenizes them at once, each call listening on
 * the request's abort signal until it settles: Node's "possible EventTarget memory leak" warning
 * (past 10 listeners) must not reach stderr, where the server writes JSON log lines only.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';

import { DecisionService } from '../../src/service/decision-service.js';
import { tempModels, type TempDirs } from './fixtures.js';

let dirs: TempDirs;
let service: DecisionService;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
});

afterAll(async () => {
  await service?.close();
  dirs?.cleanup();
});

it('40 new questions in one request raise no MaxListenersExceededWarning', async () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on('warning', onWarning);
  try {
    const questions = Object.fromEntries(
      Array.from({ length: 40 }, (_, i) => [`q${i}`, { type: 'noul' as const, instructions: `Is point ${i} of ${Date.now()} raised?` }]),
    );
    const res = await service.decide({ model: 'svc-alpha', state: 'A state.', questions });
    expect(Object.keys(res.answers)).toHaveLength(40);
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('warning', onWarning);
  }
  expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
});
