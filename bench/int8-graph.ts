/**
 * One-MatMul models for measuring the int8 kernels on their own: activation A [M, K] fp32 in,
 * Y [M, N] fp32 out, the weight [K, N] stored as the kernel stores it. The builder's kernels are
 * built by the builder's own code (quantize.ts int8MatMulNode + quantizeWeightSpecs), so what is
 * timed and checked here is what `--dtype int8` writes. Used by bench/int8-kernels.ts and
 * test/native/int8-matmul.test.ts.
 */
import path from 'node:path';

import { DataType, GraphBuilder, makeValueInfo, MS_DOMAIN, writeModel, type WeightSpec } from '../src/models/builder/onnx-writer.js';
import { Rng } from '../src/models/builder/rng.js';
import { int8MatMulNode, quantizeColumnsInt8, quantizeWeightSpecs, scaleName, type Int8Kernel } from '../src/models/builder/quantize.js';
import { expandDecideOps } from '../src/engine/decide-ops.js';
import { rewriteToU8S8 } from '../src/engine/int8-rewrite.js';

/**
 * fp32 MatMul, a builder kernel ('nbits8' as 'nbits8-bB' with its block), the unfused
 * DynamicQuantizeLinear + MatMulIntegerToFloat pair, or 'u8s8': the engine's load-time rewrite of
 * the 'rowq-u8' model for CPUs with VNNI or AMX (src/engine/int8-rewrite.ts).
 */
export type Int8ProbeVariant = 'fp32' | 'dql+mmitf' | 'u8s8' | Exclude<Int8Kernel, 'nbits8'> | `nbits8-b${number}`;

export interface ProbeShape {
  m: number;
  k: number;
  n: number;
}

/**
 * Two activations for A [m, k] against the weight `w`: 'normal' rows (standard normal, every 97th
 * entry 6x) and 'worst' rows, every entry at the row's largest magnitude and signed like the first
 * column's weights, so that column's products all add up (where an int16 pair sum saturates).
 */
export function probeActivations(s: ProbeShape, w: Float32Array): { normal: Float32Array; worst: Float32Array } {
  const normal = new Float32Array(s.m * s.k);
  new Rng(8, 'int8-kernels-activations').fillNormal(normal, 1);
  for (let i = 0; i < normal.length; i += 97) normal[i]! *= 6;
  const worst = new Float32Array(s.m * s.k);
  for (let r = 0; r < s.m; r++) for (let k = 0; k < s.k; k++) worst[r * s.k + k] = (r + 1) * (w[k * s.n]! < 0 ? -1 : 1);
  return { normal, worst };
}

function fp32Weight(name: string, dims: number[], w: Float32Array): WeightSpec {
  return { name, dims, dtype: 'fp32', *chunks() { yield w; } };
}

/**
 * Writes the model of `variant` for A [m, k] x W [k, n] (`w` row-major fp32) to `file`. 'u8s8' uses
 * the engine's own RowQuantize operator, which only the addon's sessions have; `forOnnxruntimeNode`
 * writes it with that operator expanded into the standard ops that compute the same values.
 */
export async function writeInt8ProbeModel(file: string, variant: Int8ProbeVariant, s: ProbeShape, w: Float32Array, forOnnxruntimeNode = false): Promise<void> {
  if (variant === 'u8s8') {
    // What the engine loads on such a CPU: the stored 'rowq-u8' model, rewritten; the int8 weights
    // in `<file>_data` beside it.
    const stored = `${file}.rowq-u8.onnx`;
    await writeInt8ProbeModel(stored, 'rowq-u8', s, w);
    const r = rewriteToU8S8(stored, file, `${file}_data`, `${path.basename(file)}_data`);
    if (r.kind !== 'rewritten') throw new Error(`u8s8 probe: ${r.reason}`);
    if (forOnnxruntimeNode) expandDecideOps(file, file);
    return;
  }
  const g = new GraphBuilder();
  let weights: WeightSpec[] = [fp32Weight('W', [s.k, s.n], w)];
  if (variant === 'fp32') {
    g.op1('MatMul', 'MatMul', ['A', 'W'], {}, 'Y');
  } else if (variant === 'dql+mmitf') {
    const { q, scales } = quantizeColumnsInt8(w, s.k, s.n);
    weights = [
      { name: 'W', dims: [s.k, s.n], dtype: 'int8', *chunks() { yield q; } },
      { name: scaleName('W'), dims: [s.n], dtype: 'fp32', *chunks() { yield scales; } },
    ];
    const [aq, aScale, aZero] = g.op('DynamicQuantizeLinear', 'DQL', ['A'], {}, 3);
    g.op1('MatMulIntegerToFloat', 'MMITF', [aq!, 'W', aScale!, scaleName('W'), aZero!], {}, 'Y', MS_DOMAIN);
  } else {
    const kernel: Int8Kernel = variant.startsWith('nbits8-b') ? 'nbits8' : (variant as Int8Kernel);
    const block = kernel === 'nbits8' ? Number(variant.slice('nbits8-b'.length)) : 128;
    int8MatMulNode(g, 'int8', 'A', 'W', [s.k, s.n], kernel, block, 'Y');
    weights = quantizeWeightSpecs(weights, new Map([['W', kernel]]), block);
  }
  await writeModel({
    path: file,
    graph: {
      name: 'int8_probe',
      node: g.nodes,
      initializer: g.initializers,
      input: [makeValueInfo('A', DataType.FLOAT, [s.m, s.k])],
      output: [makeValueInfo('Y', DataType.FLOAT, [s.m, s.n])],
    },
    weights,
    externalData: false,
    opsetVersion: 17,
  });
}
