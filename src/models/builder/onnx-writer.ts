/**
 * Tiny helpers over the onnx-proto classes: nodes, constant initializers, value infos with symbolic
 * dims, a graph builder that names outputs the way torch/Optimum exports do (`<node>_output_0`), and
 * a ModelProto writer that streams large weights to disk one chunk at a time, either inline
 * (raw_data, one file) or as external data (`model.onnx_data`, 4 KiB-aligned offsets).
 */
import { open, type FileHandle } from 'node:fs/promises';
import { endianness } from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import type { FloatDtype } from './dtypes.js';
import { DECIDE_OP_DOMAIN } from '../../engine/decide-ops.js';

export const { onnx } = onnxProto;
export type NodeProto = OnnxTypes.INodeProto;
export type TensorProto = OnnxTypes.ITensorProto;
export type ValueInfoProto = OnnxTypes.IValueInfoProto;
export type GraphProto = OnnxTypes.IGraphProto;
export type ModelProto = OnnxTypes.IModelProto;

/** ONNX TensorProto.DataType values used here. */
export const DataType = {
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
  FLOAT16: 10,
} as const;
export type ElemType = (typeof DataType)[keyof typeof DataType];

export type { FloatDtype };

export function floatElemType(dtype: FloatDtype): ElemType {
  return dtype === 'fp16' ? DataType.FLOAT16 : DataType.FLOAT;
}

/** Storage type of a large weight: a float type, or bytes (int8 quantized weights, MatMulNBits' packed uint8 blocks). */
export type WeightDtype = FloatDtype | 'int8' | 'uint8';

export function weightElemType(dtype: WeightDtype): ElemType {
  if (dtype === 'int8') return DataType.INT8;
  if (dtype === 'uint8') return DataType.UINT8;
  return floatElemType(dtype);
}

/** A float attribute (an epsilon, a scale); a bare number is an integer attribute. */
export interface FloatAttr {
  float: number;
}

/** A subgraph attribute (an If node's branches). */
export interface GraphAttr {
  graph: GraphProto;
}

/** Node attributes: integers, integer lists, floats and subgraphs (no strings: this graph needs none). */
export type IntAttrs = Record<string, number | number[] | FloatAttr | GraphAttr>;

export function floatAttr(value: number): FloatAttr {
  return { float: value };
}

/** The default domain's version a graph is written for, unless it asks for another. */
export const ONNX_OPSET = 17;
/** The first version with ONNX's Attention operator (grouped KV heads, past, an additive mask). */
export const ATTENTION_OPSET = 23;

/** ONNX Runtime's contrib operators (MultiHeadAttention, GroupQueryAttention, ...). */
export const MS_DOMAIN = 'com.microsoft';

export function makeNode(opType: string, inputs: string[], outputs: string[], name: string, attrs: IntAttrs = {}, domain?: string): NodeProto {
  const attribute = Object.entries(attrs).map(([key, v]) =>
    Array.isArray(v)
      ? { name: key, type: onnx.AttributeProto.AttributeType.INTS, ints: v }
      : typeof v === 'number'
        ? { name: key, type: onnx.AttributeProto.AttributeType.INT, i: v }
        : 'graph' in v
          ? { name: key, type: onnx.AttributeProto.AttributeType.GRAPH, g: v.graph }
          : { name: key, type: onnx.AttributeProto.AttributeType.FLOAT, f: v.float },
  );
  const node: NodeProto = { opType, input: inputs, output: outputs, name, attribute };
  if (domain !== undefined) node.domain = domain;
  return node;
}

/** A tensor value info; string dims become symbolic (dim_param). */
export function makeValueInfo(name: string, elemType: ElemType, dims: (number | string)[]): ValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) },
      },
    },
  };
}

export function makeTensor(name: string, dataType: ElemType, dims: number[], rawData: Uint8Array): TensorProto {
  return { name, dataType, dims, rawData };
}

export function int64Tensor(name: string, dims: number[], values: number[]): TensorProto {
  const data = BigInt64Array.from(values, (v) => BigInt(v));
  return makeTensor(name, DataType.INT64, dims, bytesOf(data));
}

export function floatTensor(name: string, dtype: FloatDtype, dims: number[], values: ArrayLike<number>): TensorProto {
  const f32 = Float32Array.from(values);
  const raw = dtype === 'fp16' ? bytesOf(float32ToFloat16(f32)) : bytesOf(f32);
  return makeTensor(name, floatElemType(dtype), dims, raw);
}

/**
 * Collects nodes and small constant initializers. `op` returns the output names, named
 * `<node name>_output_<k>` unless given.
 */
export class GraphBuilder {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private readonly constants = new Map<string, string>();

  /**
   * `opset`: the default domain's version the graph is written for (ops whose form changed, such as
   * ReduceMax's axes, read it). `parent`: this builds a subgraph (an If branch), whose constants live
   * in the main graph.
   */
  constructor(
    readonly opset: number = ONNX_OPSET,
    private readonly parent?: GraphBuilder,
  ) {}

  /**
   * A subgraph (an If node's branch) named `name`: `build` adds its nodes to a child builder and
   * returns the names its nodes produced for `outputs` (value infos, in the same order, by the same
   * names). It reads the main graph's values by name (outer scope).
   */
  subgraph(name: string, outputs: ValueInfoProto[], build: (sub: GraphBuilder) => string[]): GraphAttr {
    const sub = new GraphBuilder(this.opset, this);
    const produced = build(sub);
    if (produced.length !== outputs.length || produced.some((made, k) => made !== outputs[k]!.name)) {
      throw new Error(`subgraph ${name}: its nodes produce [${produced.join(', ')}], not the declared outputs`);
    }
    return { graph: { name, node: sub.nodes, output: outputs } };
  }

  op(opType: string, name: string, inputs: string[], attrs: IntAttrs = {}, outputs: number | string[] = 1, domain?: string): string[] {
    const outs = typeof outputs === 'number' ? Array.from({ length: outputs }, (_, k) => `${name}_output_${k}`) : outputs;
    this.nodes.push(makeNode(opType, inputs, outs, name, attrs, domain));
    return outs;
  }

  /** Single-output shorthand for `op`. */
  op1(opType: string, name: string, inputs: string[], attrs: IntAttrs = {}, output?: string, domain?: string): string {
    return this.op(opType, name, inputs, attrs, output === undefined ? 1 : [output], domain)[0]!;
  }

  /** A deduplicated int64 constant; `dims` [] makes a scalar. */
  int64(values: number[], dims: number[] = [values.length]): string {
    return this.constant(`int64[${dims.join(',')}]:${values.join(',')}`, () => (name) => int64Tensor(name, dims, values));
  }

  /** A deduplicated float constant of the given storage type; `dims` [] makes a scalar. */
  float(dtype: FloatDtype, values: number[], dims: number[] = [values.length]): string {
    return this.constant(`${dtype}[${dims.join(',')}]:${values.join(',')}`, () => (name) => floatTensor(name, dtype, dims, values));
  }

  addInitializer(tensor: TensorProto): void {
    this.initializers.push(tensor);
  }

  private constant(key: string, make: () => (name: string) => TensorProto): string {
    if (this.parent !== undefined) return this.parent.constant(key, make);
    const found = this.constants.get(key);
    if (found !== undefined) return found;
    const name = `/model/constants/c${this.constants.size}`;
    this.initializers.push(make()(name));
    this.constants.set(key, name);
    return name;
  }
}

/** A large weight whose values are produced lazily, in order, in chunks (the writer never holds it whole). */
export interface WeightSpec {
  name: string;
  dims: number[];
  dtype: WeightDtype;
  /**
   * Yields chunks whose lengths sum to the product of `dims`: float32 values for a float dtype
   * (converted to fp16 on the way out), the stored bytes themselves (Int8Array / Uint8Array) for
   * int8 / uint8. A chunk buffer may be reused once the next one is requested.
   */
  chunks(): Iterable<Float32Array | Int8Array | Uint8Array>;
}

export interface WriteModelOptions {
  /** Path of the .onnx file; external data goes next to it. */
  path: string;
  /** Nodes, inputs, outputs and small initializers; the weights are appended by the writer. */
  graph: GraphProto;
  weights: WeightSpec[];
  externalData: boolean;
  dataFileName?: string;
  opsetVersion?: number;
  irVersion?: number;
  producerName?: string;
  producerVersion?: string;
  /** Fsync the files before returning (the caller renames the directory into place afterwards). */
  sync?: boolean;
}

export interface WriteModelResult {
  modelBytes: number;
  dataBytes: number;
}

const EXTERNAL_ALIGNMENT = 4096;
const ONNX_IR_VERSION = 8;

/**
 * Writes a ModelProto. Inline mode writes the protobuf by hand around the streamed raw_data fields
 * (lengths are known from the dims, so no second copy of the weights is ever built); external mode
 * writes the weights to `dataFileName` and a small .onnx that points at them.
 */
export async function writeModel(opts: WriteModelOptions): Promise<WriteModelResult> {
  if (endianness() !== 'LE') throw new Error('model builder: ONNX raw data is little-endian; big-endian hosts are not supported');
  const dataFileName = opts.dataFileName ?? 'model.onnx_data';
  const header: ModelProto = {
    irVersion: opts.irVersion ?? ONNX_IR_VERSION,
    opsetImport: [{ domain: '', version: opts.opsetVersion ?? ONNX_OPSET }, ...contribOpsets(opts.graph)],
    producerName: opts.producerName ?? 'decision-engine model builder',
    producerVersion: opts.producerVersion ?? '1',
  };
  return opts.externalData ? writeExternal(opts, header, dataFileName) : writeInline(opts, header);
}

/**
 * ONNX Runtime's contrib opset and the engine's own (each version 1) where a node uses it, in the
 * graph or in a subgraph of it (an If's branches); none otherwise, so stock graphs stay byte-identical.
 */
function contribOpsets(graph: GraphProto): { domain: string; version: number }[] {
  const used = new Set<string>();
  const visit = (g: GraphProto) => {
    for (const n of g.node ?? []) {
      if (n.domain) used.add(n.domain);
      for (const a of n.attribute ?? []) if (a.g) visit(a.g);
    }
  };
  visit(graph);
  return [MS_DOMAIN, DECIDE_OP_DOMAIN].filter((d) => used.has(d)).map((domain) => ({ domain, version: 1 }));
}

async function writeExternal(opts: WriteModelOptions, header: ModelProto, dataFileName: string): Promise<WriteModelResult> {
  const dataPath = path.join(path.dirname(opts.path), dataFileName);
  const initializers: TensorProto[] = [];
  const sink = await FileSink.open(dataPath);
  try {
    for (const w of opts.weights) {
      const pad = (EXTERNAL_ALIGNMENT - (sink.position % EXTERNAL_ALIGNMENT)) % EXTERNAL_ALIGNMENT;
      if (pad > 0) await sink.write(new Uint8Array(pad));
      const offset = sink.position;
      await writeWeightData(sink, w);
      initializers.push({
        name: w.name,
        dims: w.dims,
        dataType: weightElemType(w.dtype),
        dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
        externalData: [
          { key: 'location', value: dataFileName },
          { key: 'offset', value: String(offset) },
          { key: 'length', value: String(sink.position - offset) },
        ],
      });
    }
    await sink.close(opts.sync === true);
  } catch (err) {
    await sink.close(false).catch(() => undefined);
    throw err;
  }
  const graph: GraphProto = { ...opts.graph, initializer: [...(opts.graph.initializer ?? []), ...initializers] };
  const bytes = onnx.ModelProto.encode({ ...header, graph }).finish();
  const modelSink = await FileSink.open(opts.path);
  await modelSink.write(bytes);
  await modelSink.close(opts.sync === true);
  return { modelBytes: bytes.length, dataBytes: sink.position };
}

// Protobuf field tags (field number << 3 | wire type 2 = length-delimited).
const TAG_MODEL_GRAPH = (7 << 3) | 2;
const TAG_GRAPH_INITIALIZER = (5 << 3) | 2;
const TAG_TENSOR_RAW_DATA = (9 << 3) | 2;

async function writeInline(opts: WriteModelOptions, header: ModelProto): Promise<WriteModelResult> {
  const headerBytes = onnx.ModelProto.encode(header).finish();
  const graphBody = onnx.GraphProto.encode(opts.graph).finish();
  const entries = opts.weights.map((w) => {
    const tensorHead = onnx.TensorProto.encode({ name: w.name, dims: w.dims, dataType: weightElemType(w.dtype) }).finish();
    const dataLen = numel(w.dims) * bytesPerElement(w.dtype);
    const rawPrefix = concat([Uint8Array.of(TAG_TENSOR_RAW_DATA), varint(dataLen)]);
    const tensorLen = tensorHead.length + rawPrefix.length + dataLen;
    const entryPrefix = concat([Uint8Array.of(TAG_GRAPH_INITIALIZER), varint(tensorLen), tensorHead, rawPrefix]);
    return { w, entryPrefix, entryLen: entryPrefix.length + dataLen };
  });
  const graphLen = graphBody.length + entries.reduce((s, e) => s + e.entryLen, 0);
  if (headerBytes.length + graphLen > 2 ** 31 - 1024) {
    throw new Error('model builder: weights exceed the 2 GB protobuf limit; use external data');
  }
  const sink = await FileSink.open(opts.path);
  try {
    await sink.write(concat([headerBytes, Uint8Array.of(TAG_MODEL_GRAPH), varint(graphLen), graphBody]));
    for (const e of entries) {
      await sink.write(e.entryPrefix);
      await writeWeightData(sink, e.w);
    }
    await sink.close(opts.sync === true);
  } catch (err) {
    await sink.close(false).catch(() => undefined);
    throw err;
  }
  return { modelBytes: sink.position, dataBytes: 0 };
}

async function writeWeightData(sink: FileSink, w: WeightSpec): Promise<void> {
  const expected = numel(w.dims);
  let produced = 0;
  let half: Uint16Array | undefined;
  for (const chunk of w.chunks()) {
    produced += chunk.length;
    if (produced > expected) break;
    if (!(chunk instanceof Float32Array)) {
      if (w.dtype !== 'int8' && w.dtype !== 'uint8') throw new Error(`model builder: weight ${w.name} (${w.dtype}) yielded integer data`);
      await sink.write(bytesOf(chunk));
    } else if (w.dtype === 'int8' || w.dtype === 'uint8') {
      throw new Error(`model builder: weight ${w.name} (${w.dtype}) yielded float data`);
    } else if (w.dtype === 'fp16') {
      if (half === undefined || half.length < chunk.length) half = new Uint16Array(chunk.length);
      const view = half.subarray(0, chunk.length);
      float32ToFloat16(chunk, view);
      await sink.write(bytesOf(view));
    } else {
      await sink.write(bytesOf(chunk));
    }
  }
  if (produced !== expected) {
    throw new Error(`model builder: weight ${w.name} produced ${produced} values, expected ${expected}`);
  }
}

/** Sequential writer that tracks its position. */
class FileSink {
  position = 0;
  private constructor(private readonly fh: FileHandle) {}

  static async open(file: string): Promise<FileSink> {
    return new FileSink(await open(file, 'w'));
  }

  async write(bytes: Uint8Array): Promise<void> {
    let done = 0;
    while (done < bytes.length) {
      const { bytesWritten } = await this.fh.write(bytes, done, bytes.length - done);
      done += bytesWritten;
    }
    this.position += bytes.length;
  }

  async close(sync: boolean): Promise<void> {
    try {
      if (sync) await this.fh.sync();
    } finally {
      await this.fh.close();
    }
  }
}

/** float32 -> IEEE binary16, round to nearest even; overflow goes to +-Inf, NaN stays NaN. */
export function float32ToFloat16(src: Float32Array, dst: Uint16Array = new Uint16Array(src.length)): Uint16Array {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < bits.length; i++) {
    const x = bits[i]!;
    const sign = (x >>> 16) & 0x8000;
    const e32 = (x >>> 23) & 0xff;
    const m = x & 0x7fffff;
    if (e32 === 0xff) {
      dst[i] = sign | 0x7c00 | (m !== 0 ? 0x200 : 0);
      continue;
    }
    const e = e32 - 127 + 15;
    if (e >= 0x1f) {
      dst[i] = sign | 0x7c00;
    } else if (e <= 0) {
      if (e < -10) {
        dst[i] = sign;
      } else {
        const full = m | 0x800000;
        const shift = 14 - e;
        let hm = full >>> shift;
        const rem = full & ((1 << shift) - 1);
        const halfway = 1 << (shift - 1);
        if (rem > halfway || (rem === halfway && (hm & 1) === 1)) hm++;
        dst[i] = sign | hm;
      }
    } else {
      let h = sign | (e << 10) | (m >>> 13);
      const rem = m & 0x1fff;
      // A carry out of the mantissa correctly bumps the exponent (up to Inf).
      if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++;
      dst[i] = h;
    }
  }
  return dst;
}

/** IEEE binary16 -> float32. */
export function float16ToFloat32(src: Uint16Array, dst: Float32Array = new Float32Array(src.length)): Float32Array {
  for (let i = 0; i < src.length; i++) {
    const h = src[i]!;
    const sign = h & 0x8000 ? -1 : 1;
    const e = (h >>> 10) & 0x1f;
    const m = h & 0x3ff;
    if (e === 0) dst[i] = sign * m * 2 ** -24;
    else if (e === 0x1f) dst[i] = m !== 0 ? NaN : sign * Infinity;
    else dst[i] = sign * (1 + m / 1024) * 2 ** (e - 15);
  }
  return dst;
}

export function numel(dims: number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

export function bytesPerElement(dtype: WeightDtype): number {
  if (dtype === 'int8' || dtype === 'uint8') return 1;
  return dtype === 'fp16' ? 2 : 4;
}

function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

function varint(n: number): Uint8Array {
  const out: number[] = [];
  let v = n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Uint8Array.from(out);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
