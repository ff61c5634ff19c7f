/**
 * The bytes of an ONNX initializer, inline (raw_data) or from its external data file, which
 * resolves relative to the graph's folder (the ONNX convention). One reader for the graph rewrites
 * (int8-rewrite.ts) and the fused-graph derivation (src/models/import/onnx-checkpoint.ts).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import path from 'node:path';

import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

type Tensor = onnxProto.onnx.ITensorProto;

const ELEMENT_BYTES: Partial<Record<number, number>> = {
  [onnx.TensorProto.DataType.FLOAT]: 4,
  [onnx.TensorProto.DataType.FLOAT16]: 2,
  [onnx.TensorProto.DataType.BFLOAT16]: 2,
  [onnx.TensorProto.DataType.UINT8]: 1,
  [onnx.TensorProto.DataType.INT8]: 1,
  [onnx.TensorProto.DataType.INT32]: 4,
  [onnx.TensorProto.DataType.INT64]: 8,
  [onnx.TensorProto.DataType.DOUBLE]: 8,
};

/** Bytes per element of an ONNX tensor type; undefined for a type this project never stores. */
export function elementBytes(dataType: number | null | undefined): number | undefined {
  return ELEMENT_BYTES[dataType ?? -1];
}

/**
 * Reads a tensor's bytes, inline or from its external data file (relative to `graphDir`); the
 * external files read are added to `files` (their stamps guard cached rewrites).
 */
export function tensorBytes(t: Tensor, graphDir: string, files: Set<string> = new Set()): Uint8Array {
  if (t.dataLocation !== onnx.TensorProto.DataLocation.EXTERNAL) {
    if (t.rawData && t.rawData.length > 0) return t.rawData;
    throw new Error(`${t.name}: no raw data (values stored in a typed field)`);
  }
  const entry = (key: string) => (t.externalData ?? []).find((e) => e.key === key)?.value ?? undefined;
  const location = entry('location');
  if (location === undefined) throw new Error(`${t.name}: external data without a location`);
  const file = path.resolve(graphDir, location);
  files.add(location);
  const offset = Number(entry('offset') ?? 0);
  const count = (t.dims ?? []).reduce((a: number, d) => a * Number(d), 1);
  const length = Number(entry('length') ?? count * (elementBytes(t.dataType) ?? 1));
  const out = new Uint8Array(length);
  const fd = openSync(file, 'r');
  try {
    let done = 0;
    while (done < length) {
      const n = readSync(fd, out, done, length - done, offset + done);
      if (n === 0) throw new Error(`${t.name}: ${location} ends before byte ${offset + length}`);
      done += n;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}
