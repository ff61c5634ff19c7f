/**
 * DecisionService.close() on the tiny model: calls made before it (still tokenizing, not yet in
 * a scheduler queue) are answered, calls made after it begins are refused as "shutting down", and
 * the tokenizer threads end with it (the process is left with nothing to wait for).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';

import { ApiError } from '../../src/api/errors.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { decideBody, expectValidAnswers, tempModels, MIXED_QUESTIONS, type TempDirs } from './fixtures.js';

let dirs: TempDirs;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
});
afterAll(() => dirs?.cleanup());

it('answers every call made before close() in the same tick, refuses the ones after', async () => {
  const service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false });
  const before = Array.from({ length: 10 }, (_, i) => service.decide(decideBody(`state ${i}`)));
  const batch = service.decideRecords('svc-alpha-2026-10', [
    { model: 'svc-alpha-2026-10', stateText: 'a record', questions: [{ id: 'q', type: 'noul', instructions: 'Is it?', options: [{ key: 'no', criteriaIndex: 0 }, { key: 'yes', criteriaIndex: 1 }] }] },
  ]);
  const closing = service.close();
  const after = service.decide(decideBody('too late')).then(
    () => undefined,
    (err: unknown) => err,
  );
  for (const res of await Promise.all(before)) expectValidAnswers(res.answers, MIXED_QUESTIONS);
  const [record] = await batch;
  expect(record!.ok).toBe(true);
  const refused = await after;
  expect(refused).toBeInstanceOf(ApiError);
  expect(refused).toMatchObject({ code: 'server_error', message: 'the service is shutting down' });
  await closing;
  expect(service.isReady()).toBe(false);
});
