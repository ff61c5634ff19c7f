/**
 * The u8 x s8 rewrite of an int8 model (int8-path.ts, path 'u8s8'): the graph surgery and the
 * weight conversion alone; int8-graph.ts caches, stamps and picks the graph the engine loads.
 *
 * `--dtype int8` writes each projection as (quantize.ts, kernel 'rowq-u8')
 *   q = the row-quantized activation (uint8 around 128), W = uint8 weight around 128
 *   y = Mul(Mul(Cast<float>(MatMulInteger(q, W, 128, 128)), W_scale), rowScale)
 * (models made before 2026-11-27: rowScale first, then W_scale) and this rewrites it to
 *   y = Mul(com.microsoft.MatMulIntegerToFloat(q, W - 128 as int8, 1.0, W_scale, 128), rowScale)
 * which is the same product: (q - 128) · (W - 128) is what MatMulInteger computes too, and
 * MatMulIntegerToFloat scales the int32 sum by 1.0 x W_scale = W_scale, then the Mul by the row's:
 * the same float operations in the same order, so both paths answer bit for bit alike (for the
 * older order, a float may differ by an ulp, which can move a later row's rounding). The activation's row quantization that feeds q and its
 * row scale (Abs, ReduceMax, Mul, Max, Div, Round, Add, Cast: eight passes over the activation, two
 * of them single-threaded in ONNX Runtime) becomes one RowQuantize, the engine's own operator
 * (decide-ops.ts, native/ops/), which computes the same values in one pass over each row: on
 * AVX-512 hosts the ops around the GEMM, not the GEMM, are what made the standard form slow
 * (docs/benchmark.md). The int8 weights go to one external data file beside the
 * graph (the stored model keeps its uint8 ones for CPUs without VNNI); every other initializer is
 * left as it was, inline or pointing at the model's own data file, which resolves the same way from
 * the same folder.
 */
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';

import onnxProto from 'onnx-proto';

import { DECIDE_OP_DOMAIN, ROW_QUANTIZE } from './decide-ops.js';
import { DERIVED_TAGS, derivedPath } from './derived-graph-cache.js';
import { tensorBytes } from './onnx-tensor-bytes.js';

const { onnx } = onnxProto;

type Node = onnxProto.onnx.INodeProto;
type Tensor = onnxProto.onnx.ITensorProto;

/** Bump whenever the rewrite's output changes: a cached rewrite with another version is made again. */
export const U8S8_REWRITE_VERSION = 4;

const MS_DOMAIN = 'com.microsoft';
const ONE = 'decide_u8s8/one';
/** Offsets in the data file are multiples of this (as the model builder writes them). */
const ALIGNMENT = 64;

/** The rewritten graph, its int8 weights and its stamp, beside the stock graph. */
export function u8s8Paths(stockGraph: string): { graph: string; data: string; stamp: string } {
  const beside = (rest: string) => derivedPath(stockGraph, DERIVED_TAGS.u8s8, rest);
  return { graph: beside('.onnx'), data: beside('.onnx_data'), stamp: beside('.json') };
}

export type U8S8Rewrite =
  | { kind: 'rewritten'; converted: number; externalFiles: string[] }
  | { kind: 'not-applicable'; reason: string };

function initializerValue(t: Tensor | undefined): number | undefined {
  if (t === undefined || t.dataType !== onnx.TensorProto.DataType.UINT8 || (t.dims ?? []).some((d) => Number(d) !== 1)) return undefined;
  if (t.rawData && t.rawData.length === 1) return t.rawData[0];
  if (t.int32Data && t.int32Data.length === 1) return t.int32Data[0];
  return undefined;
}

function attributeInt(node: Node, name: string): number | undefined {
  const a = (node.attribute ?? []).find((x) => x.name === name);
  return a === undefined ? undefined : Number(a.i);
}

/** One matched projection: the four stored nodes and what the new ones read. */
interface Match {
  mmi: Node;
  cast: Node;
  /** The two Muls after the Cast, in graph order: one by the weight's scale, one by the row's. */
  firstMul: Node;
  secondMul: Node;
  rowScale: string;
  weightScale: string;
}

/** An int64 initializer's values, whether the writer put them in int64Data or rawData. */
function int64Values(t: Tensor | undefined): number[] | undefined {
  if (t?.dataType !== onnx.TensorProto.DataType.INT64) return undefined;
  if ((t.int64Data ?? []).length > 0) return t.int64Data!.map(Number);
  const raw = t.rawData ?? new Uint8Array(0);
  const view = new DataView(raw.buffer, raw.byteOffset, raw.length);
  return Array.from({ length: raw.length / 8 }, (_, i) => Number(view.getBigInt64(i * 8, true)));
}

function floatScalar(t: Tensor | undefined): number | undefined {
  if (t?.dataType !== onnx.TensorProto.DataType.FLOAT || (t.dims ?? []).some((d) => Number(d) !== 1)) return undefined;
  if (t.rawData?.length === 4) return new DataView(t.rawData.buffer, t.rawData.byteOffset, 4).getFloat32(0, true);
  return t.floatData?.length === 1 ? t.floatData[0] : undefined;
}

/**
 * The stored row quantization that produces `q` and its row scale (quantize.ts quantizedRows):
 *   scale = Max(Mul(ReduceMax(Abs(x), axes -1, keepdims), 1/127), 1e-30)
 *   q = Cast<uint8>(Add(Round(Div(x, scale)), 128))
 * Its eight nodes become one decide RowQuantize (decide-ops.ts), which computes the same values in
 * one pass over each row. Undefined where the graph holds another form (then it stays as stored).
 */
function rowQuantization(
  q: string,
  producers: Map<string, Node>,
  only: (value: string) => Node | undefined,
  initializers: Map<string, Tensor>,
): { nodes: Node[]; x: string; scale: string } | undefined {
  const constantOf = (node: Node, value: string): number | undefined => {
    const other = node.input!.find((i) => i !== value);
    return node.input!.length === 2 && other !== undefined ? floatScalar(initializers.get(other)) : undefined;
  };
  const cast = producers.get(q);
  if (cast?.opType !== 'Cast' || attributeInt(cast, 'to') !== onnx.TensorProto.DataType.UINT8) return undefined;
  const add = producers.get(cast.input![0]!);
  if (add?.opType !== 'Add' || only(add.output![0]!) !== cast) return undefined;
  const rounded = add.input!.find((i) => !initializers.has(i));
  if (rounded === undefined || constantOf(add, rounded) !== ROW_QUANTIZE.zeroPoint) return undefined;
  const round = producers.get(rounded);
  if (round?.opType !== 'Round' || only(rounded) !== add) return undefined;
  const div = producers.get(round.input![0]!);
  if (div?.opType !== 'Div' || only(div.output![0]!) !== round) return undefined;
  const [x, scale] = div.input as [string, string];
  const max = producers.get(scale);
  if (max?.opType !== 'Max') return undefined;
  const scaled = max.input!.find((i) => !initializers.has(i));
  if (scaled === undefined || constantOf(max, scaled) !== ROW_QUANTIZE.minScale) return undefined;
  const mul = producers.get(scaled);
  if (mul?.opType !== 'Mul' || only(scaled) !== max) return undefined;
  const absMax = mul.input!.find((i) => !initializers.has(i));
  if (absMax === undefined || constantOf(mul, absMax) !== ROW_QUANTIZE.inverseRange) return undefined;
  const reduce = producers.get(absMax);
  if (reduce?.opType !== 'ReduceMax' || only(absMax) !== mul || attributeInt(reduce, 'keepdims') !== 1) return undefined;
  const axes = reduce.input!.length > 1 ? int64Values(initializers.get(reduce.input![1]!)) : (reduce.attribute ?? []).find((a) => a.name === 'axes')?.ints?.map(Number);
  if (axes?.length !== 1 || axes[0] !== -1) return undefined;
  const abs = producers.get(reduce.input![0]!);
  if (abs?.opType !== 'Abs' || abs.input![0] !== x || only(abs.output![0]!) !== reduce) return undefined;
  return { nodes: [abs, reduce, mul, max, div, round, add, cast], x, scale };
}

/**
 * Rewrites the graph in `stockGraph` to `tempGraph`, its int8 weights to `tempData`; the graph
 * names the data file `dataFileName` (its final name, in the same folder). Says why not where the
 * graph holds no projection of the stored form.
 */
export function rewriteToU8S8(stockGraph: string, tempGraph: string, tempData: string, dataFileName: string): U8S8Rewrite {
  const model = onnx.ModelProto.decode(readFileSync(stockGraph));
  const graph = model.graph;
  if (!graph) return { kind: 'not-applicable', reason: 'the file holds no graph' };
  const nodes = graph.node ?? [];
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name!, t]));
  const producers = new Map<string, Node>();
  for (const n of nodes) for (const o of n.output ?? []) producers.set(o, n);
  const consumers = new Map<string, Node[]>();
  for (const n of nodes) for (const i of n.input ?? []) consumers.set(i, [...(consumers.get(i) ?? []), n]);
  const graphOutputs = new Set((graph.output ?? []).map((o) => o.name));
  const only = (value: string): Node | undefined => {
    const c = consumers.get(value) ?? [];
    return c.length === 1 && !graphOutputs.has(value) ? c[0] : undefined;
  };

  const matches: Match[] = [];
  for (const mmi of nodes) {
    if (mmi.opType !== 'MatMulInteger' || (mmi.domain ?? '') !== '' || (mmi.input ?? []).length !== 4) continue;
    const [, weight, , weightZero] = mmi.input!;
    const w = initializers.get(weight!);
    if (w === undefined || w.dataType !== onnx.TensorProto.DataType.UINT8 || (w.dims ?? []).length !== 2) continue;
    if (initializerValue(initializers.get(weightZero!)) !== 128 || (consumers.get(weight!) ?? []).length !== 1) continue;
    const cast = only(mmi.output![0]!);
    if (cast?.opType !== 'Cast' || attributeInt(cast, 'to') !== onnx.TensorProto.DataType.FLOAT) continue;
    const firstMul = only(cast.output![0]!);
    if (firstMul?.opType !== 'Mul') continue;
    const secondMul = only(firstMul.output![0]!);
    if (secondMul?.opType !== 'Mul') continue;
    const firstScale = firstMul.input!.find((i) => i !== cast.output![0]);
    const secondScale = secondMul.input!.find((i) => i !== firstMul.output![0]);
    if (firstScale === undefined || secondScale === undefined) continue;
    // Models made since 2026-11-27 scale by the weight first (quantize.ts), older ones by the row.
    const isWeightScale = (name: string) => {
      const t = initializers.get(name);
      return t?.dataType === onnx.TensorProto.DataType.FLOAT && (t.dims ?? []).length === 1 && Number(t.dims![0]) === Number(w.dims![1]);
    };
    const [weightScale, rowScale] = isWeightScale(firstScale) ? [firstScale, secondScale] : isWeightScale(secondScale) ? [secondScale, firstScale] : [];
    if (weightScale === undefined || rowScale === undefined) continue;
    matches.push({ mmi, cast, firstMul, secondMul, rowScale, weightScale });
  }
  if (matches.length === 0) {
    return { kind: 'not-applicable', reason: 'no MatMulInteger of uint8 weights around 128 followed by the row and weight scales (the form --dtype int8 writes)' };
  }

  // The int8 weights, one after the other, each at an aligned offset.
  const graphDir = path.dirname(stockGraph);
  const externalFiles = new Set<string>();
  const fd = openSync(tempData, 'w');
  try {
    let position = 0;
    for (const m of matches) {
      const w = initializers.get(m.mmi.input![1]!)!;
      const u8 = tensorBytes(w, graphDir, externalFiles);
      // uint8 v around 128 is the int8 v - 128: flipping the top bit is that subtraction.
      const s8 = new Uint8Array(u8.length);
      for (let i = 0; i < u8.length; i++) s8[i] = u8[i]! ^ 0x80;
      const pad = (ALIGNMENT - (position % ALIGNMENT)) % ALIGNMENT;
      if (pad > 0) writeSync(fd, new Uint8Array(pad), 0, pad, position);
      const offset = position + pad;
      let done = 0;
      while (done < s8.length) done += writeSync(fd, s8, done, s8.length - done, offset + done);
      position = offset + s8.length;
      w.dataType = onnx.TensorProto.DataType.INT8;
      w.rawData = new Uint8Array(0);
      w.dataLocation = onnx.TensorProto.DataLocation.EXTERNAL;
      w.externalData = [
        onnx.StringStringEntryProto.create({ key: 'location', value: dataFileName }),
        onnx.StringStringEntryProto.create({ key: 'offset', value: String(offset) }),
        onnx.StringStringEntryProto.create({ key: 'length', value: String(s8.length) }),
      ];
    }
  } finally {
    closeSync(fd);
  }

  const removed = new Set<Node>();
  const replaced = new Map<Node, Node[]>();
  for (const m of matches) {
    const [q, weight, activationZero] = m.mmi.input!;
    const unscaled = `${m.secondMul.output![0]}/decide_u8s8`;
    replaced.set(m.mmi, [
      onnx.NodeProto.create({
        name: `${m.mmi.name ?? weight}/decide_u8s8/MatMulIntegerToFloat`,
        opType: 'MatMulIntegerToFloat',
        domain: MS_DOMAIN,
        input: [q!, weight!, ONE, m.weightScale, activationZero!],
        output: [unscaled],
      }),
    ]);
    replaced.set(m.secondMul, [
      onnx.NodeProto.create({ name: `${m.secondMul.name ?? weight}/decide_u8s8/Mul_row_scale`, opType: 'Mul', input: [unscaled, m.rowScale], output: [m.secondMul.output![0]!] }),
    ]);
    removed.add(m.cast).add(m.firstMul);
  }
  // Each activation quantized once (the projections that read it share q and its scale).
  const quantized = new Set(matches.map((m) => m.mmi.input![0]!));
  let rowQuantizes = 0;
  for (const q of quantized) {
    const found = rowQuantization(q, producers, only, initializers);
    if (found === undefined) continue;
    rowQuantizes++;
    const [first, ...rest] = found.nodes;
    replaced.set(first!, [
      onnx.NodeProto.create({
        name: `${first!.name ?? q}/decide_u8s8/${ROW_QUANTIZE.opType}`,
        opType: ROW_QUANTIZE.opType,
        domain: DECIDE_OP_DOMAIN,
        input: [found.x],
        output: [q, found.scale],
      }),
    ]);
    for (const n of rest) removed.add(n);
  }
  graph.node = nodes.flatMap((n) => (removed.has(n) ? [] : (replaced.get(n) ?? [n])));
  graph.initializer!.push(
    onnx.TensorProto.create({ name: ONE, dataType: onnx.TensorProto.DataType.FLOAT, dims: [], rawData: new Uint8Array(Float32Array.of(1).buffer) }),
  );
  model.opsetImport = model.opsetImport ?? [];
  for (const domain of rowQuantizes > 0 ? [MS_DOMAIN, DECIDE_OP_DOMAIN] : [MS_DOMAIN]) {
    if (!model.opsetImport.some((o) => o.domain === domain)) model.opsetImport.push(onnx.OperatorSetIdProto.create({ domain, version: 1 }));
  }
  writeFileSync(tempGraph, onnx.ModelProto.encode(model).finish());
  return { kind: 'rewritten', converted: matches.length, externalFiles: [...externalFiles].sort() };
}
