/**
 * Which int8 MatMul kernel to build `--dtype int8` models with, measured in the engine's own ONNX
 * Runtime (the addon's timeMatMul: native/matmul_probe.h): one weight-stationary MatMul graph per
 * variant (bench/int8-graph.ts), activation [M, K] fp32 in, [M, N] fp32 out, at the given thread
 * counts:
 *   fp32            MatMul with an fp32 weight (the fp32 model's op)
 *   rowq-u8         each activation row quantized to uint8 with its own scale, uint8 weights with a
 *                   scale per column, MatMulInteger u8 x u8, both scales (the --dtype int8 default)
 *   rowq-s8         the same with int8 weights (u8 x s8: saturates in int16 on CPUs without VNNI)
 *   u8s8            what the engine loads where the CPU has VNNI or AMX: the rowq-u8 model rewritten
 *                   to the engine's RowQuantize over the rows, int8 weights and MatMulIntegerToFloat,
 *                   one Mul by the row scale after it (src/engine/int8-rewrite.ts; saturates like
 *                   rowq-s8 on CPUs without VNNI). Timed in the addon, which has RowQuantize; its
 *                   error is taken through onnxruntime-node with RowQuantize expanded into the
 *                   standard ops that compute the same values.
 *   dqmm            com.microsoft DynamicQuantizeMatMul, int8 weight with a per-column scale
 *   dql+mmitf       DynamicQuantizeLinear + com.microsoft MatMulIntegerToFloat (the unfused pair)
 *   nbits8-bB       com.microsoft MatMulNBits, bits 8, block B, accuracy_level 4 (int8 compute)
 *
 *   npx tsc -p tsconfig.json && [INT8_VARIANTS=fp32,rowq-u8,...] node dist/bench/int8-kernels.js \
 *     [--threads 1,2] [--seconds 1] [--shapes MxKxN,...]
 *
 * Prints GFLOP/s-equivalents (2·M·K·N per run / median seconds), each variant's speed relative to
 * fp32 at the same shape and threads, and its error against the fp32 MatMul (onnxruntime-node, the
 * same ONNX Runtime), as max |error| / rms of the fp32 result on two activations: 'normal' (normal
 * rows with a few 6x outliers) and 'worst' (every entry at the row's largest magnitude, signed like
 * the first column's weights: the products add up, which is where an int16 pair sum saturates).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import * as ort from 'onnxruntime-node';

import { loadNativeModule, resolveOrtLibrary } from '../src/engine/native.js';
import { Rng } from '../src/models/builder/rng.js';
import { expandDecideOps } from '../src/engine/decide-ops.js';
import { probeActivations, writeInt8ProbeModel, type Int8ProbeVariant, type ProbeShape } from './int8-graph.js';

type Variant = Int8ProbeVariant;
const VARIANTS = (process.env.INT8_VARIANTS?.split(',') as Variant[] | undefined) ?? ['fp32', 'rowq-u8', 'rowq-s8', 'u8s8', 'dqmm', 'dql+mmitf', 'nbits8-b128', 'nbits8-b256'];

async function outputs(file: string, s: ProbeShape, inputs: Float32Array[]): Promise<Float32Array[]> {
  const session = await ort.InferenceSession.create(file, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  try {
    const out: Float32Array[] = [];
    for (const a of inputs) out.push((await session.run({ A: new ort.Tensor('float32', a, [s.m, s.k]) })).Y!.data as Float32Array);
    return out;
  } finally {
    await session.release();
  }
}

/** max |y - reference| / rms(reference). */
function relativeMaxError(y: Float32Array, reference: Float32Array): number {
  let sq = 0;
  let max = 0;
  for (let i = 0; i < y.length; i++) {
    sq += reference[i]! * reference[i]!;
    max = Math.max(max, Math.abs(y[i]! - reference[i]!));
  }
  return max / Math.sqrt(sq / y.length);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      threads: { type: 'string', default: '1,2' },
      seconds: { type: 'string', default: '1' },
      shapes: { type: 'string', default: '4096x512x1536,512x512x1536,64x512x1536,4096x1536x512' },
    },
  });
  const threads = values.threads.split(',').map(Number);
  const shapes: ProbeShape[] = values.shapes.split(',').map((t) => {
    const [m, k, n] = t.split('x').map(Number) as [number, number, number];
    return { m, k, n };
  });
  const native = loadNativeModule();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'decide-int8-kernels-'));
  try {
    for (const s of shapes) {
      const w = new Float32Array(s.k * s.n);
      new Rng(7, 'int8-kernels').fillNormal(w, 0.02);
      const files = new Map<Variant, string>();
      const activations = probeActivations(s, w);
      const errors = new Map<Variant, string>();
      let reference: Float32Array[] = [];
      for (const v of VARIANTS) {
        const file = path.join(dir, `${v}-${s.m}x${s.k}x${s.n}.onnx`);
        await writeInt8ProbeModel(file, v, s, w);
        files.set(v, file);
        // The errors through onnxruntime-node, which has not the engine's own operators (u8s8's):
        // a copy with them expanded where the model has any (beside it: its data file resolves alike).
        const portable = path.join(dir, `${v}-${s.m}x${s.k}x${s.n}.portable.onnx`);
        const ys = await outputs(expandDecideOps(file, portable) > 0 ? portable : file, s, [activations.normal, activations.worst]);
        if (v === 'fp32') reference = ys;
        else if (reference.length > 0) errors.set(v, `error normal ${relativeMaxError(ys[0]!, reference[0]!).toExponential(1)}, worst ${relativeMaxError(ys[1]!, reference[1]!).toExponential(1)}`);
      }
      for (const v of VARIANTS) if (errors.has(v)) console.log(`[${s.m} x ${s.k}] x [${s.k} x ${s.n}] ${v}: ${errors.get(v)}`);
      for (const t of threads) {
        const gflops = new Map<Variant, number>();
        for (const v of VARIANTS) {
          const seconds = native.timeMatMul({
            ortLibrary: resolveOrtLibrary(undefined, 'cpu'),
            modelPath: files.get(v)!,
            provider: 'cpu',
            threads: t,
            minRuns: 5,
            minSeconds: Number(values.seconds),
          });
          gflops.set(v, (2 * s.m * s.k * s.n) / median(Array.from(seconds)) / 1e9);
        }
        const fp32 = gflops.get('fp32')!;
        const cells = VARIANTS.map((v) => `${v} ${gflops.get(v)!.toFixed(0)} (${(gflops.get(v)! / fp32).toFixed(2)}x)`);
        console.log(`[${s.m} x ${s.k}] x [${s.k} x ${s.n}] threads ${t}: ${cells.join(' | ')}`);
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
