/**
 * A model directory removed or written again under the same id while the service runs (the
 * README's way to change a pinned version: remove its directory, install again): the next call
 * answers with what is there now, never with the engine of a model that is gone, and a removed id
 * leaves the readiness and metrics listings. Calls that took the old one are answered by it.
 */
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { decideResponse } from '../../src/api/decide/index.js';
import { validateDecideRequest } from '../../src/api/validate.js';
import { makeModel } from '../../src/models/builder/make-model.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { tinyModelDir } from '../helpers/tiny-model.js';
import { decideBody, TEST_KEY } from './fixtures.js';

let root: string;
let modelsDir: string;
let tiny: string;
const ID = 'swap-2026-11';

beforeAll(async () => {
  tiny = await tinyModelDir();
  root = mkdtempSync(path.join(os.tmpdir(), 'decide-swap-'));
  modelsDir = path.join(root, 'models');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Installs the tiny model as ID, with a temperature when given (another answer from the same weights). */
/** The answers a service opened now, on the directory as it is, gives to `body` (the reference for a reloaded model). */
async function answersOfNewService(body: ReturnType<typeof decideBody>) {
  const fresh = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
  try {
    return (await fresh.decide(body)).answers;
  } finally {
    await fresh.close();
  }
}

function install(temperature?: number): void {
  const dir = path.join(modelsDir, ID);
  rmSync(dir, { recursive: true, force: true });
  cpSync(tiny, dir, { recursive: true, dereference: true });
  if (temperature !== undefined) {
    const file = path.join(dir, 'decision.json');
    const decision = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...decision, calibration: { temperature: { noul: temperature, choice: temperature, score: temperature } } }));
  }
}

it("a model's first load writes its derived graphs beside it: that is no change of model (it stays loaded, /readyz stays ready)", async () => {
  const id = 'fresh-2026-11';
  await makeModel({ preset: 'tiny', outDir: path.join(modelsDir, id), seed: 5 });
  const logged: string[] = [];
  const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [id], log: (l) => logged.push(l) });
  try {
    for (let i = 0; i < 3; i++) {
      expect((await service.metrics()).models.map((m) => m.id)).toEqual([id]);
      expect(service.isReady()).toBe(true);
    }
    await service.decide(decideBody('hello', undefined, id));
    expect(logged.filter((l) => l.includes('unloading'))).toEqual([]);
    expect(logged.filter((l) => l.startsWith(`loading model ${id}`))).toHaveLength(1);
  } finally {
    await service.close();
    rmSync(path.join(modelsDir, id), { recursive: true, force: true });
  }
});

it('answers with the directory as it is now: a model written again under its id, then removed', async () => {
  install();
  const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
  try {
    const body = decideBody('My card was charged twice.', undefined, ID);
    const first = await service.decide(body);
    expect((await service.metrics()).models.map((m) => m.id)).toEqual([ID]);

    install(4);
    const second = await service.decide(body);
    expect(second.answers).not.toEqual(first.answers);
    expect(await answersOfNewService(body)).toEqual(second.answers);

    rmSync(path.join(modelsDir, ID), { recursive: true, force: true });
    await expect(service.decide(body)).rejects.toMatchObject({ code: 'not_found' });
    expect((await service.metrics()).models).toEqual([]);
  } finally {
    await service.close();
  }
});

it("an export's graph at onnx/decoder_model_merged.onnx replaced in place (the rest as it was): the next call loads the new one", async () => {
  const id = 'merged-2026-11';
  const dir = path.join(modelsDir, id);
  const graph = path.join(dir, 'onnx', 'decoder_model_merged.onnx');
  mkdirSync(path.dirname(graph), { recursive: true });
  for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(path.join(tiny, f), path.join(dir, f));
  copyFileSync(path.join(tiny, 'onnx', 'model.onnx'), graph);
  // The same shape with other weights: the graph a re-export writes.
  const other = path.join(root, 'other-weights');
  await makeModel({ preset: 'tiny', outDir: other, seed: 9 });
  const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
  try {
    const body = decideBody('My card was charged twice.', undefined, id);
    const first = await service.decide(body);

    copyFileSync(path.join(other, 'onnx', 'model.onnx'), `${graph}.tmp`);
    renameSync(`${graph}.tmp`, graph);
    const second = await service.decide(body);
    expect(second.answers).not.toEqual(first.answers);
    expect(await answersOfNewService(body)).toEqual(second.answers);
  } finally {
    await service.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

it('calls that took the model before it was written again are answered by it, none cut off halfway; later calls get the new one', async () => {
  install();
  // The long states are over its 64-token limit: they are tokenized, then refused, never scored.
  const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [], maxStateTokens: 64 });
  try {
    const body = decideBody('My card was charged twice.', undefined, ID);
    const before = await service.decide(body);
    // Batch records whose long states keep the old version's tokenizer busy when the change is seen.
    const records = [validateDecideRequest(body), ...Array.from({ length: 300 }, (_, i) => validateDecideRequest(decideBody(`record ${i}: ${'the parcel came late and the box was open, '.repeat(180)}`, undefined, ID)))];
    const scoring = service.decideRecords(ID, records, 'batch');
    const queued = async () => (await service.metrics()).models.find((m) => m.id === ID)?.tokenizerQueue.batch ?? 0;
    for (let i = 0; i < 2000 && (await queued()) < 100; i++) await new Promise((r) => setTimeout(r, 2));
    expect(await queued()).toBeGreaterThanOrEqual(100);

    install(4);
    const after = await service.decide(body); // sees the change: the old version is retired
    expect(after.answers).not.toEqual(before.answers);
    const outcomes = await scoring;
    // Each long state was tokenized to the end by the old version (not 'the tokenizer is closed').
    expect(new Set(outcomes.slice(1).map((o) => (o.ok ? 'answered' : o.error.code)))).toEqual(new Set(['state_too_long']));
    // The records were answered by the version they took: the first one as before the change.
    expect(outcomes[0]!.ok && decideResponse(outcomes[0]!.result).answers).toEqual(before.answers);
  } finally {
    await service.close();
  }
}, 60_000);

it('a model removed while its first load runs is 404 not_found (what the directory says now), not a failed load', async () => {
  install();
  const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [] });
  try {
    const answer = service.decide(decideBody('My card was charged twice.', undefined, ID));
    // Loading is not loaded (the listing and /readyz agree).
    expect(service.listModels().data.find((m) => m.id === ID)?.loaded).toBe(false);
    rmSync(path.join(modelsDir, ID), { recursive: true, force: true });
    await expect(answer).rejects.toMatchObject({ code: 'not_found', message: expect.stringContaining(`'${ID}' is not installed`) });
    expect(service.listModels().data.map((m) => m.id)).not.toContain(ID);
  } finally {
    await service.close();
  }
});

it('/readyz over HTTP: the first probe after the only model was removed is 503 (it was 200 with an empty list)', async () => {
  install();
  const service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: [ID] });
  const app = await createServer({ service, apiKeys: [TEST_KEY], rateLimit: false, dataDir: path.join(root, 'data') });
  try {
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const readyz = async () => {
      const res = await fetch(`${url}/readyz`);
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', models: [ID] } });
    rmSync(path.join(modelsDir, ID), { recursive: true, force: true });
    const first = await readyz();
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ code: 'server_error', message: 'no model is loaded' });
  } finally {
    await app.close();
    await service.close();
  }
});
