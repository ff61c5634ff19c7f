/**
 * Weight quantization for `--dtype int8`: the projection, MLP and LM-head weights of a [K, N]
 * MatMul stored as 8-bit integers with fp32 scales and multiplied by ONNX Runtime's integer GEMMs;
 * the activations stay fp32 between ops.
 *
 * The kernels, chosen by measurement (docs/benchmark.md, "int8 weights"; bench/int8-kernels.ts,
 * bench/engine-ab.ts):
 * - 'rowq-u8' (the default for projections and MLP): weights with a scale per column, stored as
 *   uint8 around the zero point 128; each token's activation row is quantized to uint8 around 128
 *   with its own scale (a few standard ops, once per activation that several projections read) and
 *   multiplied by MatMulInteger (u8 x u8), then both scales applied. A token's result depends on
 *   that token alone, so the engine's invariants hold as in fp32 (prefix reuse equals a fresh run
 *   within 1e-4, batching changes nothing), and the u8 x u8 GEMM is exact on every CPU.
 * - 'rowq-s8': the same with int8 weights (u8 x s8). Exact where the CPU has VNNI, but on CPUs
 *   without it (AVX2, AVX-512 without VNNI) ONNX Runtime's u8 x s8 GEMM adds pairs of products in a
 *   saturating int16 (vpmaddubsw): 255 x 127 x 2 overflows it and moves answers by 1e-1 and more
 *   (docs/models.md, int8 weights). Models that record the kernel as 'rowq' use it (int8-warning.ts).
 * - 'nbits8' (the default for the LM head): com.microsoft MatMulNBits, bits 8, symmetric blocks of
 *   `block` rows of a column with a scale each, accuracy_level 4 (the activation quantized per token
 *   and block, no int16 pair sums). Also token-independent; slower than 'rowq-u8' on the
 *   projections, and the one int8 head the LM-head rewrite can gather in front of (it produces
 *   `logits` itself).
 * - 'dqmm': com.microsoft DynamicQuantizeMatMul, the fastest op alone on VNNI hosts, but it
 *   quantizes the activation with one scale per tensor, so a token's result moves with the other
 *   tokens of its pass (8.7e-2 in logits between a reused prefix and a fresh run on the tiny model),
 *   and its int8 weights saturate like 'rowq-s8' on CPUs without VNNI. Kept to be measured, never
 *   the default.
 */
import { ROW_QUANTIZE } from '../../engine/decide-ops.js';
import type { FloatDtype, Int8Kernel, Int8Scheme, ModelDtype } from './dtypes.js';
import { DataType, makeTensor, MS_DOMAIN, type GraphBuilder, type WeightSpec } from './onnx-writer.js';

export type { Int8Kernel, Int8Scheme, ModelDtype };


export const MODEL_DTYPES: readonly ModelDtype[] = ['fp32', 'fp16', 'int8'];

/** The float type the graph computes and exchanges (inputs, KV, logits) in. */
export function computeDtype(dtype: ModelDtype): FloatDtype {
  return dtype === 'int8' ? 'fp32' : dtype;
}

/** int8 weights and their scales: w[k, n] ≈ q[k, n] * scales[n]. */
export interface Int8Columns {
  q: Int8Array;
  scales: Float32Array;
}

/**
 * Per-column symmetric int8 of a row-major [rows, cols] matrix: scale = max |w| / 127 per column
 * (an all-zero column gets scale 1, so dequantization stays exact), values rounded to nearest.
 */
export function quantizeColumnsInt8(w: Float32Array, rows: number, cols: number): Int8Columns {
  if (w.length !== rows * cols) throw new Error(`quantize: ${w.length} values for [${rows}, ${cols}]`);
  const maxAbs = new Float32Array(cols);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) {
      const a = Math.abs(w[base + c]!);
      if (a > maxAbs[c]!) maxAbs[c] = a;
    }
  }
  const scales = new Float32Array(cols);
  const inverse = new Float32Array(cols);
  for (let c = 0; c < cols; c++) {
    if (!Number.isFinite(maxAbs[c]!)) throw new Error(`quantize: column ${c} holds a non-finite value`);
    scales[c] = maxAbs[c]! > 0 ? maxAbs[c]! / 127 : 1;
    inverse[c] = 1 / scales[c]!;
  }
  const q = new Int8Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) {
      const v = Math.round(w[base + c]! * inverse[c]!);
      q[base + c] = v > 127 ? 127 : v < -127 ? -127 : v;
    }
  }
  return { q, scales };
}

/** MatMulNBits (bits 8) blocks: packed uint8 [N, K / block, block] (zero point 128), scales [N * K / block]. */
export interface NBits8Blocks {
  packed: Uint8Array;
  scales: Float32Array;
}

/** MatMulNBits' 8-bit layout of a row-major [k, n] weight, symmetric per block of `block` rows of one column. */
export function quantizeBlocksNBits8(w: Float32Array, k: number, n: number, block: number): NBits8Blocks {
  if (k % block !== 0) throw new Error(`quantize: K ${k} is not a multiple of the block size ${block}`);
  const blocks = k / block;
  const packed = new Uint8Array(n * k);
  const scales = new Float32Array(n * blocks);
  for (let col = 0; col < n; col++) {
    for (let b = 0; b < blocks; b++) {
      let maxAbs = 0;
      for (let i = 0; i < block; i++) maxAbs = Math.max(maxAbs, Math.abs(w[(b * block + i) * n + col]!));
      const scale = maxAbs > 0 ? maxAbs / 127 : 1;
      scales[col * blocks + b] = scale;
      for (let i = 0; i < block; i++) {
        const v = Math.round(w[(b * block + i) * n + col]! / scale);
        packed[(col * blocks + b) * block + i] = Math.max(-127, Math.min(127, v)) + 128;
      }
    }
  }
  return { packed, scales };
}

/** What make-model and import-model write for --dtype int8. */
export const DEFAULT_INT8_SCHEME: Readonly<Int8Scheme> = { kernel: 'rowq-u8', lmHead: 'nbits8', block: 128 };

/** The scale initializer of a quantized weight. */
export function scaleName(weight: string): string {
  return `${weight}_scale`;
}

/** One node x [.., K] @ W [K, N] -> [.., N] for a quantized weight `weight` (its scale is scaleName(weight)). */
export function int8MatMulNode(
  g: GraphBuilder,
  node: string,
  x: string,
  weight: string,
  dims: [number, number],
  kernel: Int8Kernel,
  block: number,
  output?: string,
): string {
  if (kernel === 'dqmm') {
    return g.op1('DynamicQuantizeMatMul', node, [x, weight, scaleName(weight)], {}, output, MS_DOMAIN);
  }
  if (kernel === 'rowq-u8' || kernel === 'rowq-s8') {
    const { q, scale, zeroPoint } = quantizedRows(g, x);
    // uint8 weights sit around the same zero point as the activations (quantizeWeightSpecs).
    const inputs = kernel === 'rowq-u8' ? [q, weight, zeroPoint, zeroPoint] : [q, weight, zeroPoint];
    const acc = g.op1('MatMulInteger', `${node}/MatMulInteger`, inputs);
    const y = g.op1('Cast', `${node}/Cast`, [acc], { to: DataType.FLOAT });
    // The weight's scale first, then the row's: the order in which MatMulIntegerToFloat (the u8 x s8
    // path, src/engine/int8-rewrite.ts) scales, so both paths round alike and answer bit for bit
    // the same (a different order moves a float by an ulp, which can move a later row's rounding).
    return g.op1('Mul', `${node}/Mul_row_scale`, [g.op1('Mul', `${node}/Mul_weight_scale`, [y, scaleName(weight)]), scale], {}, output);
  }
  const [k, n] = dims;
  return g.op1('MatMulNBits', node, [x, weight, scaleName(weight)], { K: k, N: n, bits: 8, block_size: blockFor(k, block), accuracy_level: 4 }, output, MS_DOMAIN);
}

/**
 * The uint8 zero point of 'rowq-*' activations and of 'rowq-u8' weights (symmetric: 1..255 hold
 * -127..127). The row quantization's constants are the engine's RowQuantize contract, which must
 * compute what this writes (src/engine/decide-ops.ts).
 */
const ROWQ_ZERO_POINT = ROW_QUANTIZE.zeroPoint;

/** Per graph: the activations already quantized, so projections that read the same input share it. */
const rowQuantized = new WeakMap<GraphBuilder, Map<string, { q: string; scale: string; zeroPoint: string }>>();

/**
 * 'rowq-*' activation quantization, once per activation: scale = max |x| / 127 over each token's
 * row (at least 1e-30, so a zero row stays 0), q = round(x / scale) + 128 as uint8 (symmetric
 * around the zero point 128, which MatMulInteger takes as a scalar). Each token is quantized on its
 * own, so its result does not depend on the other tokens of its pass.
 */
function quantizedRows(g: GraphBuilder, x: string): { q: string; scale: string; zeroPoint: string } {
  let memo = rowQuantized.get(g);
  if (memo === undefined) rowQuantized.set(g, (memo = new Map()));
  const found = memo.get(x);
  if (found !== undefined) return found;
  const p = `${x.replace(/_output_\d+$/, '')}/int8_rows`;
  const zeroPoint = '/model/int8/zero_point_128';
  if (memo.size === 0) g.addInitializer(makeTensor(zeroPoint, DataType.UINT8, [], Uint8Array.of(ROWQ_ZERO_POINT)));
  // ReduceMax takes its axes as an attribute before opset 18 and as an input from then on.
  const abs = g.op1('Abs', `${p}/Abs`, [x]);
  const absMax =
    g.opset >= 18
      ? g.op1('ReduceMax', `${p}/ReduceMax`, [abs, g.int64([-1])], { keepdims: 1 })
      : g.op1('ReduceMax', `${p}/ReduceMax`, [abs], { axes: [-1], keepdims: 1 });
  const scale = g.op1('Max', `${p}/Max`, [g.op1('Mul', `${p}/Mul`, [absMax, g.float('fp32', [ROW_QUANTIZE.inverseRange], [])]), g.float('fp32', [ROW_QUANTIZE.minScale], [])]);
  const rounded = g.op1('Round', `${p}/Round`, [g.op1('Div', `${p}/Div`, [x, scale])]);
  const q = g.op1('Cast', `${p}/Cast`, [g.op1('Add', `${p}/Add`, [rounded, g.float('fp32', [ROWQ_ZERO_POINT], [])])], { to: DataType.UINT8 });
  const out = { q, scale, zeroPoint };
  memo.set(x, out);
  return out;
}

/** The largest power-of-two block <= `wanted` that divides K (at least 16). */
function blockFor(k: number, wanted: number): number {
  let block = wanted;
  while (block > 16 && k % block !== 0) block /= 2;
  if (k % block !== 0) throw new Error(`int8: K ${k} has no MatMulNBits block size (a power of two >= 16 dividing it)`);
  return block;
}

/**
 * Replaces each fp32 weight spec named in `quantized` ([K, N] values, in order) by its kernel's int8
 * storage and a scale spec right after it. The fp32 values of one weight are held whole while it is
 * quantized (per-column scales need every row), one weight at a time.
 */
export function quantizeWeightSpecs(specs: WeightSpec[], quantized: ReadonlyMap<string, Int8Kernel>, wantedBlock: number): WeightSpec[] {
  const out: WeightSpec[] = [];
  for (const spec of specs) {
    const kernel = quantized.get(spec.name);
    if (kernel === undefined) {
      out.push(spec);
      continue;
    }
    if (spec.dims.length !== 2 || spec.dtype !== 'fp32') throw new Error(`int8: ${spec.name} is not a 2-D fp32 weight`);
    const [k, n] = spec.dims as [number, number];
    let scales: Float32Array | undefined;
    const quantize = (): Int8Array | Uint8Array => {
      const whole = new Float32Array(k * n);
      let at = 0;
      for (const chunk of spec.chunks()) {
        if (!(chunk instanceof Float32Array) || at + chunk.length > whole.length) throw new Error(`int8: ${spec.name} produced unexpected data`);
        whole.set(chunk, at);
        at += chunk.length;
      }
      if (at !== whole.length) throw new Error(`int8: ${spec.name} produced ${at} values, expected ${whole.length}`);
      if (kernel !== 'nbits8') {
        const r = quantizeColumnsInt8(whole, k, n);
        scales = r.scales;
        return kernel === 'rowq-u8' ? Uint8Array.from(r.q, (v) => v + ROWQ_ZERO_POINT) : r.q;
      }
      const r = quantizeBlocksNBits8(whole, k, n, block);
      scales = r.scales;
      return r.packed;
    };
    const block = kernel === 'nbits8' ? blockFor(k, wantedBlock) : 0;
    out.push({
      name: spec.name,
      dims: kernel !== 'nbits8' ? [k, n] : [n, k / block, block],
      dtype: kernel === 'nbits8' || kernel === 'rowq-u8' ? 'uint8' : 'int8',
      *chunks() {
        yield quantize();
      },
    });
    out.push({
      name: scaleName(spec.name),
      dims: [kernel !== 'nbits8' ? n : n * (k / block)],
      dtype: 'fp32',
      *chunks() {
        if (scales === undefined) throw new Error(`int8: the scales of ${spec.name} were asked for before its values`);
        const s = scales;
        scales = undefined;
        yield s;
      },
    });
  }
  return out;
}
