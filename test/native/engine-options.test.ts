/**
 * Engine load options: one place for defaults and validation (src/engine/engine-options.ts), and a
 * native binding that requires every field and refuses what would be undefined behaviour in a C++
 * cast (NaN, infinities, negatives, fractions, out of range), each with ERR_INPUT naming the field.
 */
import { beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { ENGINE_DEFAULTS, resolveLoadOptions } from '../../src/engine/engine-options.js';
import { readModelConfig } from '../../src/engine/model-dir.js';
import { loadNativeModule, resolveOrtLibrary, type NativeLoadOptions } from '../../src/engine/native.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

let modelDir: string;
let packedDir: string;
let valid: NativeLoadOptions;

beforeAll(async () => {
  modelDir = await tinyModelDir();
  packedDir = await tinyModelDir({ segmentIds: true });
  const options = resolveLoadOptions({ modelDir, threads: 1 }, readModelConfig(modelDir), resolveOrtLibrary());
  valid = { ...options, modelPath: `${modelDir}/onnx/model.onnx` };
});

async function nativeLoad(options: Record<string, unknown>): Promise<unknown> {
  const engine = new (loadNativeModule().NativeEngine)();
  try {
    return await engine.load(options as unknown as NativeLoadOptions);
  } finally {
    engine.close();
  }
}

describe('the native binding', () => {
  it('loads with every field given', async () => {
    await expect(nativeLoad({ ...valid })).resolves.toBeUndefined();
  });

  it('requires every field: dropping any one is ERR_INPUT naming it', async () => {
    const keys = Object.keys(valid);
    expect(keys.length).toBeGreaterThanOrEqual(17);
    for (const key of keys) {
      const options: Record<string, unknown> = { ...valid };
      delete options[key];
      await expect(nativeLoad(options), key).rejects.toMatchObject({ code: 'ERR_INPUT', message: `options.${key} is required` });
    }
  });

  it.each([
    ['tokenBudget', Number.NaN],
    ['tokenBudget', 0],
    ['tokenBudget', 2.5],
    ['prefixCacheBytes', -1],
    ['prefixCacheBytes', Number.POSITIVE_INFINITY],
    ['pastBudgetBytes', -1],
    ['attentionBudget', -1],
    ['threads', 0],
    ['threads', 2 ** 31],
    ['deviceId', -1],
    ['vocabSize', 0],
    ['maxContext', -4096],
    ['attentionWeight', Number.NaN],
    ['passOverheadTokens', Number.POSITIVE_INFINITY],
    ['passOverheadTokens', -1],
    ['packSuffixes', 1],
    ['provider', 'tpu'],
    ['modelPath', ''],
    ['threads', '4'],
  ])('refuses %s = %s with ERR_INPUT', async (key, value) => {
    await expect(nativeLoad({ ...valid, [key]: value })).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: expect.stringContaining(`options.${key}`),
    });
  });
});

describe('Engine.load', () => {
  it.each([
    ['tokenBudget', -8],
    ['tokenBudget', Number.NaN],
    ['prefixCacheBytes', -1],
    ['pastBudgetBytes', 1.5],
    ['threads', 0],
    ['deviceId', Number.NaN],
    ['passOverheadTokens', Number.NaN],
    ['passOverheadTokens', -1],
    ['packSuffixes', 'yes'],
    ['ortProfilePrefix', ''],
    ['provider', 'tpu'],
  ])('refuses %s = %s with ERR_INPUT naming it', async (key, value) => {
    await expect(Engine.load({ modelDir, [key]: value } as unknown as Parameters<typeof Engine.load>[0])).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: expect.stringContaining(`options.${key}`),
    });
  });

  it('packs on a packing graph by the one default (off on the CPU), and when asked', async () => {
    expect(ENGINE_DEFAULTS.packSuffixes('cpu')).toBe(false);
    expect(ENGINE_DEFAULTS.packSuffixes('cuda')).toBe(true);
    const byDefault = await Engine.load({ modelDir: packedDir });
    const asked = await Engine.load({ modelDir: packedDir, packSuffixes: true });
    try {
      expect(byDefault.info.packsSuffixes).toBe(false);
      expect(asked.info.packsSuffixes).toBe(true);
    } finally {
      byDefault.close();
      asked.close();
    }
  });

  it('takes Infinity as the pass overhead (fewest passes) and scores', async () => {
    const engine = await Engine.load({ modelDir, passOverheadTokens: Number.POSITIVE_INFINITY });
    try {
      const [[score]] = await engine.score([{ prefix: Int32Array.from([5, 6, 7]), suffixes: [{ tokens: Int32Array.from([8]), labels: Int32Array.from([1, 2]) }] }]);
      expect(score!.labelLogits).toHaveLength(2);
    } finally {
      engine.close();
    }
  });
});
