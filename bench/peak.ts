/**
 * The machine's limit: MatMul throughput of ONNX Runtime on this machine, in the model's float type
 * (fp32, or fp16 for an fp16 model), with the same thread count and provider as the systems under
 * test. One MatMul model per shape is written with the builder's ONNX writer (activation [M, K] as
 * input, weight [K, N] as an initializer, so ORT may prepack it exactly as it does the model's
 * weights) and timed through the engine's addon with the activation resident on the provider's
 * device and the output left there (native/matmul_probe.h): on a GPU, onnxruntime-node's JS API
 * would copy both across on every run and time the copies instead of the GEMM.
 *
 * The peak is the best shape's median throughput: the MFU of either system is measured against what
 * ORT's own GEMM reaches here, not against a datasheet number. On a shared machine the capacity
 * drifts, so the run also probes the best shape right before every timed run (PeakProbe).
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';

import { loadNativeModule, resolveOrtLibrary } from '../src/engine/native.js';
import { floatElemType, makeValueInfo, writeModel, type FloatDtype, type WeightSpec } from '../src/models/builder/onnx-writer.js';
import { Rng } from '../src/models/builder/rng.js';
import { makeScratch } from './scratch.js';

export interface PeakOptions {
  threads: number;
  provider: 'cpu' | 'cuda';
  /** The float type of the MatMuls: the model's (default fp32). */
  dtype?: FloatDtype;
  /** Fewer timed runs per shape. */
  quick?: boolean;
}

export interface MatMulShape {
  m: number;
  k: number;
  n: number;
  /** What the shape stands for. */
  label: string;
}

export interface MatMulMeasurement extends MatMulShape {
  runs: number;
  /** GFLOP/s (2·M·K·N per run) per timed run. */
  gflops: number[];
  medianGflops: number;
  maxGflops: number;
}

export interface PeakResult {
  /** The best median over the shapes at the start of the run, GFLOP/s. */
  gflops: number;
  shapes: MatMulMeasurement[];
  threads: number;
  provider: string;
  dtype: FloatDtype;
  seconds: number;
}

/** Square-ish large GEMM (the usual "peak" probe) and the model's own MLP shape at a prefix-pass size. */
export function peakShapes(hiddenSize: number, intermediateSize: number): MatMulShape[] {
  return [
    { m: 2048, k: 2048, n: 2048, label: 'square 2048' },
    { m: 4096, k: hiddenSize, n: intermediateSize, label: `model MLP up [4096 tokens x ${hiddenSize}] x [${hiddenSize} x ${intermediateSize}]` },
  ];
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

async function writeMatMulModel(file: string, shape: MatMulShape, dtype: FloatDtype): Promise<void> {
  const weight: WeightSpec = {
    name: 'W',
    dims: [shape.k, shape.n],
    dtype,
    *chunks() {
      const rng = new Rng(7, 'bench-peak');
      const total = shape.k * shape.n;
      const chunk = new Float32Array(Math.min(total, 1 << 20));
      for (let done = 0; done < total; done += chunk.length) {
        const view = chunk.subarray(0, Math.min(chunk.length, total - done));
        rng.fillNormal(view, 0.02);
        yield view;
      }
    },
  };
  await writeModel({
    path: file,
    externalData: false,
    weights: [weight],
    graph: {
      name: 'bench_peak_matmul',
      node: [{ opType: 'MatMul', name: 'MatMul', input: ['A', 'W'], output: ['Y'] }],
      input: [makeValueInfo('A', floatElemType(dtype), [shape.m, shape.k])],
      output: [makeValueInfo('Y', floatElemType(dtype), [shape.m, shape.n])],
    },
  });
}

/**
 * One MatMul graph on disk: a short probe before each timed run gives the peak the machine offers at
 * that moment (a shared machine's capacity drifts; MFU is taken against the probe next to the run
 * it describes). Each measurement opens its own session (native/matmul_probe.h warms it up first).
 */
export class PeakProbe {
  private constructor(
    readonly shape: MatMulShape,
    private readonly options: PeakOptions,
    private readonly modelPath: string,
    private readonly dir: string,
  ) {}

  static async create(options: PeakOptions, shape: MatMulShape): Promise<PeakProbe> {
    const dir = await makeScratch('peak');
    try {
      const file = path.join(dir, 'matmul.onnx');
      await writeMatMulModel(file, shape, options.dtype ?? 'fp32');
      return new PeakProbe(shape, options, file, dir);
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** GFLOP/s of each run: at least `minRuns` runs and `minSeconds` of work (at most the probe's max_runs, native/matmul_probe.h). */
  async measure(minRuns: number, minSeconds: number): Promise<number[]> {
    const flop = 2 * this.shape.m * this.shape.k * this.shape.n;
    const seconds = loadNativeModule().timeMatMul({
      ortLibrary: resolveOrtLibrary(undefined, this.options.provider),
      modelPath: this.modelPath,
      provider: this.options.provider,
      threads: this.options.threads,
      minRuns,
      minSeconds,
    });
    return Array.from(seconds, (s) => flop / s / 1e9);
  }

  /** Median GFLOP/s of a short probe (at least 3 runs and `seconds`). */
  async quickMedian(seconds = 0.3): Promise<number> {
    return median(await this.measure(3, seconds));
  }

  async release(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Measures every shape (about 2 s each, 0.5 s quick); returns the probe of the best shape, still open. */
export async function measurePeak(options: PeakOptions, shapes: MatMulShape[]): Promise<{ result: PeakResult; probe: PeakProbe }> {
  const started = performance.now();
  const measured: MatMulMeasurement[] = [];
  let best: PeakProbe | undefined;
  let bestMedian = -Infinity;
  try {
    for (const shape of shapes) {
      const probe = await PeakProbe.create(options, shape);
      const gflops = await probe.measure(5, options.quick ? 0.3 : 1.5);
      const m = median(gflops);
      measured.push({ ...shape, runs: gflops.length, gflops, medianGflops: m, maxGflops: Math.max(...gflops) });
      if (m > bestMedian) {
        await best?.release();
        best = probe;
        bestMedian = m;
      } else {
        await probe.release();
      }
    }
  } catch (err) {
    await best?.release();
    throw err;
  }
  return {
    result: {
      gflops: bestMedian,
      shapes: measured,
      threads: options.threads,
      provider: options.provider,
      dtype: options.dtype ?? 'fp32',
      seconds: (performance.now() - started) / 1000,
    },
    probe: best!,
  };
}
