/**
 * The benchmark's peak probe (native/matmul_probe.h through bench/peak.ts): a MatMul graph timed
 * with its input resident on the provider's device. On this CPU host it must time real runs of
 * the graph in both float types and refuse what is not a probe graph with a coded error. (Whether
 * it keeps the data on a GPU is for a GPU host: nothing here can show it.)
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';

import { measurePeak, PeakProbe } from '../../bench/peak.js';
import { loadNativeModule, resolveOrtLibrary } from '../../src/engine/native.js';
import { findGraphFile } from '../../src/engine/model-dir.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

const shape = { m: 64, k: 32, n: 48, label: 'small' };

describe('the device-resident MatMul probe', () => {
  it.each(['fp32', 'fp16'] as const)('times %s runs: at least the runs asked for, each a positive, finite GFLOP/s', async (dtype) => {
    const probe = await PeakProbe.create({ threads: 1, provider: 'cpu', dtype }, shape);
    try {
      const gflops = await probe.measure(4, 0);
      expect(gflops.length).toBeGreaterThanOrEqual(4);
      for (const g of gflops) expect(Number.isFinite(g) && g > 0).toBe(true);
    } finally {
      await probe.release();
    }
  });

  it('measurePeak reports every shape and keeps the best one open for probes between runs', async () => {
    const other = { m: 32, k: 32, n: 32, label: 'smaller' };
    const { result, probe } = await measurePeak({ threads: 1, provider: 'cpu', quick: true }, [shape, other]);
    try {
      expect(result.shapes.map((s) => s.label)).toEqual(['small', 'smaller']);
      expect(result.gflops).toBe(Math.max(...result.shapes.map((s) => s.medianGflops)));
      expect(await probe.quickMedian(0)).toBeGreaterThan(0);
    } finally {
      await probe.release();
    }
  });

  it('refuses a graph that is not one [M, K] input and one output, and bad options, with coded errors', async () => {
    const { timeMatMul } = loadNativeModule();
    const ortLibrary = resolveOrtLibrary(undefined, 'cpu');
    const decoder = findGraphFile(await tinyModelDir());
    expect(() => timeMatMul({ ortLibrary, modelPath: decoder, provider: 'cpu' })).toThrow(expect.objectContaining({ code: 'ERR_MODEL_LOAD' }));
    expect(() => timeMatMul({ ortLibrary, modelPath: path.join(path.dirname(decoder), 'missing.onnx'), provider: 'cpu' })).toThrow(
      expect.objectContaining({ code: 'ERR_MODEL_LOAD' }),
    );
    expect(() => timeMatMul({ ortLibrary, modelPath: decoder, provider: 'cpu', minRuns: 0 })).toThrow(expect.objectContaining({ code: 'ERR_INPUT' }));
    // Values an int cast would turn into undefined behaviour are refused, naming the option.
    for (const bad of [{ minRuns: Number.NaN }, { threads: -1 }, { maxRuns: Number.POSITIVE_INFINITY }, { minSeconds: -0.5 }]) {
      expect(() => timeMatMul({ ortLibrary, modelPath: decoder, provider: 'cpu', ...bad })).toThrow(
        expect.objectContaining({ code: 'ERR_INPUT', message: expect.stringContaining(`options.${Object.keys(bad)[0]}`) }),
      );
    }
    expect(() => timeMatMul({ ortLibrary, modelPath: decoder, provider: 'tpu' as 'cpu' })).toThrow(expect.objectContaining({ code: 'ERR_INPUT' }));
  });
});
