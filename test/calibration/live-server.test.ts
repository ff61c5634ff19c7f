/**
 * A new version installed next to a running server is one answer everywhere as soon as it is
 * complete: after `decide calibrate` (its library function, with its own service, as the CLI runs
 * beside a server), /v1/decide and GET /v1/models/{alias} on the running server (app.inject, real
 * service, tiny model) answer with the new version at once, without anyone listing /v1/models
 * first. Also a version copied in file by file: invisible while incomplete, the alias moves on
 * the first resolve after its last file is whole.
 *
 * The models directory's mtime is set to the past after each setup step, so the registry's scan is
 * not "racy" (within the timestamp granularity of a change) and what is tested is that it notices
 * the change itself.
 */
import { copyFileSync, cpSync, mkdirSync, readdirSync, utimesSync } from 'node:fs';
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { calibrateModel } from '../../src/calibration/run.js';
import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { AUTH, TEST_KEY, tempModels, type TempDirs } from '../api/fixtures.js';
import { tinyModelDir } from '../helpers/tiny-model.js';
import { QUESTIONS, rawLogits, states, writeSharpenedData } from './helpers.js';

const BASE = 'svc-alpha-2026-10';
let dirs: TempDirs;
let service: DecisionService;
let app: FastifyInstance;

/** Sets the directory's mtime an hour back: the next change moves it. */
const age = (dir: string) => utimesSync(dir, new Date(Date.now() - 3600_000), new Date(Date.now() - 3600_000));

beforeAll(async () => {
  dirs = await tempModels([BASE]);
  age(dirs.modelsDir);
  service = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, preload: [] });
  app = await createServer({ service, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false, logger: false });
}, 120_000);

afterAll(async () => {
  await app?.close();
  await service?.close();
  dirs?.cleanup();
});

const describeAlias = async () => (await app.inject({ method: 'GET', url: '/v1/models/svc-alpha', headers: AUTH })).json() as { id: string };
const decideModel = async () => {
  const res = await app.inject({ method: 'POST', url: '/v1/decide', headers: AUTH, payload: { model: 'svc-alpha', state: 'the parcel never arrived', questions: QUESTIONS } });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { model: string }).model;
};

describe('a version installed beside a running server', () => {
  it('decide calibrate: /v1/decide and GET /v1/models/{alias} answer with the new version at once', async () => {
    expect((await describeAlias()).id).toBe(BASE);
    expect(await decideModel()).toBe(BASE);

    const texts = states(40, 3);
    const file = path.join(dirs.root, 'labelled.jsonl');
    await writeSharpenedData(file, texts, await rawLogits(service, BASE, texts), 0.5, 5);
    const report = await calibrateModel({ model: 'svc-alpha', data: file, modelsDir: dirs.modelsDir, as: 'svc-alpha-2026-11-22', acceptPoorFit: true, resamples: { figures: 50, parameters: 20 } });
    expect(report.alias).toEqual({ name: 'svc-alpha', resolves_to: 'svc-alpha-2026-11-22' });

    // No listing in between: the decide route and the model route see the new version first.
    expect(await decideModel()).toBe('svc-alpha-2026-11-22');
    expect((await describeAlias()).id).toBe('svc-alpha-2026-11-22');
    const listed = (await app.inject({ method: 'GET', url: '/v1/models', headers: AUTH })).json() as { aliases: Record<string, string> };
    expect(listed.aliases['svc-alpha']).toBe('svc-alpha-2026-11-22');
  }, 120_000);

  it('a version copied file by file: ignored while incomplete, the alias moves once its last file is whole', async () => {
    const tiny = await tinyModelDir();
    const target = path.join(dirs.modelsDir, 'svc-alpha-2026-12');
    mkdirSync(path.join(target, 'onnx'), { recursive: true });
    for (const name of readdirSync(tiny)) if (name !== 'onnx') cpSync(path.join(tiny, name), path.join(target, name), { recursive: true });
    age(dirs.modelsDir);
    expect(await decideModel()).toBe('svc-alpha-2026-11-22'); // the scan sees svc-alpha-2026-12 incomplete (no weights)

    // The weights arrive inside the version's own directory: the models directory's mtime does not move.
    for (const name of readdirSync(path.join(tiny, 'onnx'))) copyFileSync(path.join(tiny, 'onnx', name), path.join(target, 'onnx', name));
    expect(await decideModel()).toBe('svc-alpha-2026-12');
    expect((await describeAlias()).id).toBe('svc-alpha-2026-12');
  }, 120_000);
});
