/**
 * calibrateModel() from a JavaScript caller: every option it cannot take is CalibrationError
 * invalid_argument (exit 2) naming the option and the value, before any file is read or row
 * scored, as `decide calibrate` refuses a bad flag.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CalibrationError, calibrateModel } from '../../src/calibration/run.js';
import { MODEL_ID, tempWorkspace } from '../batches/helpers.js';
import { QUESTIONS } from './helpers.js';

let dir: string;
let modelsDir: string;
let data: string;

beforeAll(async () => {
  ({ dir, modelsDir } = await tempWorkspace('calibrate-options'));
  data = path.join(dir, 'data.jsonl');
  await writeFile(data, `${JSON.stringify({ state: 'the parcel never arrived', questions: QUESTIONS, expected: { topic: 'shipping' } })}\n`);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function refusal(options: unknown): Promise<CalibrationError> {
  const err = await calibrateModel(options as never).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(CalibrationError);
  expect(err).toMatchObject({ code: 'invalid_argument', exitCode: 2 });
  return err as CalibrationError;
}

describe('calibrateModel() options', () => {
  it('refuses a missing or wrongly typed option, naming it and the value, before reading anything', async () => {
    const base = { model: MODEL_ID, data, modelsDir };
    const before = await readdir(modelsDir);
    for (const [options, message] of [
      [undefined, 'calibrateModel: options must be an object, got undefined'],
      [{}, 'calibrateModel: model must be a non-empty string, got undefined'],
      [{ ...base, model: 5 }, 'calibrateModel: model must be a non-empty string, got 5'],
      [{ ...base, data: undefined }, 'calibrateModel: data must be a non-empty string, got undefined'],
      [{ ...base, modelsDir: '' }, 'calibrateModel: modelsDir must name a folder, got an empty value'],
      [{ ...base, seed: 'x' }, "calibrateModel: seed must be an integer from 0 to 2147483647, got 'x'"],
      [{ ...base, seed: -3 }, 'calibrateModel: seed must be an integer from 0 to 2147483647, got -3'],
      [{ ...base, resamples: { figures: 0 } }, 'calibrateModel: resamples.figures must be an integer from 1 to 100000, got 0'],
      [{ ...base, resamples: { figure: 10 } }, "calibrateModel resamples: unknown option 'figure' (did you mean 'figures'?)"],
      [{ ...base, now: '2026' }, "calibrateModel: now must be a valid Date, got '2026'"],
      [{ ...base, now: new Date('nope') }, 'calibrateModel: now must be a valid Date, got an object'],
      [{ ...base, log: 5 }, 'calibrateModel: log must be a function, got 5'],
      [{ ...base, acceptpoorfit: true }, "calibrateModel: unknown option 'acceptpoorfit' (did you mean 'acceptPoorFit'?)"],
      [{ ...base, acceptPoorFit: 'yes' }, "calibrateModel: acceptPoorFit must be true or false, got 'yes'"],
    ] as const) {
      expect((await refusal(options)).message, JSON.stringify(options)).toBe(message);
    }
    expect(await readdir(modelsDir)).toEqual(before);
  });

  it('a bad engine option or thread count is invalid_argument too, not an unavailable models folder', async () => {
    expect((await refusal({ model: MODEL_ID, data, modelsDir, threads: -1 })).message).toMatch(/threads/);
    expect((await refusal({ model: MODEL_ID, data, modelsDir, engine: { provider: 'tpu' } })).message).toMatch(/provider/);
  });

  it('a good call still runs (the checks take what the CLI passes)', async () => {
    const err = await calibrateModel({ model: MODEL_ID, data, modelsDir: await mkdtemp(path.join(dir, 'empty-models-')), seed: 7, now: new Date(), log: () => undefined }).catch((e: unknown) => e);
    // An empty models folder: the model is unknown, found after the options passed.
    expect(err).toMatchObject({ code: 'unknown_model' });
  });
});
