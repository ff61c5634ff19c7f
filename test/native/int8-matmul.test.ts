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
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { probeActivations, writeInt8ProbeModel } from '../../bench/int8-graph.js';
import { quantizeBlocksNBits8, quantizeColumnsInt8 } from '../../src/models/builder/quantize.js';
import { Rng } from '../../src/models/builder/rng.js';

const shape = { m: 3, k: 512, n: 96 };
const BLOCK = 128;

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

  it.each(['rowq-u8', 'nbits8'] as const)('%s: the worst-case rows give the exact product of the quantized operands (no saturation)', async (kernel) => {
    const file = path.join(dir, `${kernel}.onnx`);
    await writeInt8ProbeModel(file, kernel === 'nbits8' ? `nbits8-b${BLOCK}` : kernel, shape, w);
    const session = await ort.InferenceSession.create(file, { intraOpNumThreads: 1 });
    const y = (await session.run({ A: new ort.Tensor('float32', worst, [shape.m, shape.k]) })).Y!.data as Float32Array;
    await session.release();

    const wq = dequantized(kernel, w);
    let worstError = 0;
    let sumSquares = 0;
    for (let r = 0; r < shape.m; r++) {
      for (let n = 0; n < shape.n; n++) {
        let expected = 0;
        for (let k = 0; k < shape.k; k++) expected += worst[r * shape.k + k]! * wq[k * shape.n + n]!;
        sumSquares += expected * expected;
        worstError = Math.max(worstError, Math.abs(y[r * shape.n + n]! - expected));
      }
    }
    const rms = Math.sqrt(sumSquares / (shape.m * shape.n));
    // fp32 rounding of the scales and of a 512-term sum: far below 1e-4 of the rms; a saturated
    // int16 pair sum moves the first column by 0.1 of it and more.
    expect(worstError / rms).toBeLessThan(1e-4);
  });
});
