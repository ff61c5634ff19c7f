/**
 * The int8 kernels `--dtype int8` writes (quantize.ts: 'rowq-u8' for the projections and MLP,
 * 'nbits8' for the LM head) compute exactly the product of their quantized operands on this CPU,
 * in ONNX Runtime (onnxruntime-node, the engine's ONNX Runtime build).
 *
 * The activation rows are the worst case for an integer GEMM: every entry at the row's largest
 * magnitude (so quantizing it is exact), signed like the first column's weights (so that column's
 * products all add up). ONNX Runtime's u8 x s8 GEMM on CPUs without VNNI (AVX2) adds pairs of
 * products in a saturating int16 and misses this by 0.4 to 0.6 of the output's rms ('rowq-s8',
 * what --dtype int8 wrote before): a kernel that saturates fails here on such a host.
 *
 * 'u8s8' is the engine's load-time rewrite of 'rowq-u8' for CPUs with VNNI or AMX (int8 weights,
 * MatMulIntegerToFloat; src/engine/int8-rewrite.ts). On every CPU it is checked on rows that cannot
 * saturate an int16 pair sum (non-positive activations: uint8 values 1..128, so 2 x 128 x 127 <
 * 32767): that checks the rewrite and the weight conversion. On the worst-case rows it is exact only
 * where the CPU has VNNI or AMX, and is checked there.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { probeActivations, writeInt8ProbeModel, type Int8ProbeVariant } from '../../bench/int8-graph.js';
import { cpuInt8Support } from '../../src/engine/cpu-int8.js';
import { chooseInt8Path } from '../../src/engine/int8-path.js';
import { quantizeBlocksNBits8, quantizeColumnsInt8 } from '../../src/models/builder/quantize.js';
import { Rng } from '../../src/models/builder/rng.js';

const shape = { m: 3, k: 512, n: 96 };
const BLOCK = 128;
/** True where this CPU's u8 x s8 GEMM is exact (VNNI or AMX): the engine would pick 'u8s8' here. */
const EXACT_U8S8 = chooseInt8Path('auto', cpuInt8Support()).path === 'u8s8';

/** The weight each kernel multiplies by, dequantized: w[k, n] as the model stores it. */
function dequantized(kernel: 'rowq-u8' | 'nbits8', w: Float32Array): Float64Array {
  const out = new Float64Array(shape.k * shape.n);
  if (kernel === 'rowq-u8') {
    const { q, scales } = quantizeColumnsInt8(w, shape.k, shape.n);
    for (let i = 0; i < out.length; i++) out[i] = q[i]! * scales[i % shape.n]!;
    return out;
  }
  const blocks = shape.k / BLOCK;
  const { packed, scales } = quantizeBlocksNBits8(w, shape.k, shape.n, BLOCK);
  for (let n = 0; n < shape.n; n++) {
    for (let k = 0; k < shape.k; k++) {
      const b = Math.floor(k / BLOCK);
      out[k * shape.n + n] = (packed[(n * blocks + b) * BLOCK + (k % BLOCK)]! - 128) * scales[n * blocks + b]!;
    }
  }
  return out;
}

describe('the int8 kernels of --dtype int8, on this CPU', () => {
  let dir: string;
  const w = new Float32Array(shape.k * shape.n);
  new Rng(3, 'int8-matmul-test').fillNormal(w, 0.02);
  const { worst } = probeActivations(shape, w);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'decide-int8-matmul-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** max |y - the product of the quantized operands| / its rms, for activation rows `a`. */
  async function errorAgainstExact(variant: Int8ProbeVariant, a: Float32Array): Promise<number> {
    const file = path.join(dir, `${variant}.onnx`);
    await writeInt8ProbeModel(file, variant, shape, w, true);
    const session = await ort.InferenceSession.create(file, { intraOpNumThreads: 1 });
    const y = (await session.run({ A: new ort.Tensor('float32', a, [shape.m, shape.k]) })).Y!.data as Float32Array;
    await session.release();

    const wq = dequantized(variant.startsWith('nbits8') ? 'nbits8' : 'rowq-u8', w);
    let worstError = 0;
    let sumSquares = 0;
    for (let r = 0; r < shape.m; r++) {
      for (let n = 0; n < shape.n; n++) {
        let expected = 0;
        for (let k = 0; k < shape.k; k++) expected += a[r * shape.k + k]! * wq[k * shape.n + n]!;
        sumSquares += expected * expected;
        worstError = Math.max(worstError, Math.abs(y[r * shape.n + n]! - expected));
      }
    }
    return worstError / Math.sqrt(sumSquares / (shape.m * shape.n));
  }

  // fp32 rounding of the scales and of a 512-term sum: far below 1e-4 of the rms; a saturated int16
  // pair sum moves the first column by 0.1 of it and more.
  it.each(['rowq-u8', `nbits8-b${BLOCK}`] as const)('%s: the worst-case rows give the exact product of the quantized operands (no saturation)', async (variant) => {
    expect(await errorAgainstExact(variant, worst)).toBeLessThan(1e-4);
  });

  it('u8s8 (the rewrite for VNNI and AMX): rows that cannot saturate give the exact product on any CPU', async () => {
    // Each row: integer multiples of (r + 1) from 0 down to -127 (r + 1), so quantizing is exact.
    const rng = new Rng(4, 'int8-matmul-nonpositive');
    const a = new Float32Array(shape.m * shape.k);
    for (let r = 0; r < shape.m; r++) {
      for (let k = 0; k < shape.k; k++) a[r * shape.k + k] = -(r + 1) * (k === 0 ? 127 : rng.nextU32() % 128);
    }
    expect(await errorAgainstExact('u8s8', a)).toBeLessThan(1e-4);
  });

  it.skipIf(!EXACT_U8S8)('u8s8 on this CPU (VNNI or AMX): the worst-case rows give the exact product too', async () => {
    // Skipped where the CPU has no VNNI or AMX: its u8 x s8 GEMM adds pairs in a saturating int16.
    expect(await errorAgainstExact('u8s8', worst)).toBeLessThan(1e-4);
  });
});
