/**
 * A model directory's standard-op graph read back as a Hugging Face checkpoint folder (config.json,
 * model.safetensors, the tokenizer files), so that importModel can write the same weights as
 * another graph: the fused one the engine derives for CUDA (src/models/fused-graph.ts). The graph's
 * weights carry the checkpoint's names (model.*, lm_head.weight); its projections are stored
 * [in, out], torch's transpose, so every 2-D weight but the embedding goes back to [out, in]. A tied
 * LM head is left out (the importer takes the embedding). Float weights only: an int8 model's
 * weights are not the checkpoint's, and it is refused.
 */
import { copyFileSync, existsSync, mkdirSync, openSync, closeSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';

import onnxProto from 'onnx-proto';

import { SEGMENT_IDS_INPUT } from '../builder/decoder-graph.js';
import { IMPORTED_SIDE_FILES, MODEL_FILES } from '../../engine/model-dir.js';
import { elementBytes, tensorBytes } from '../../engine/onnx-tensor-bytes.js';

const { onnx } = onnxProto;

/** Checkpoint weights: what the importer maps by name (weight-map.ts). */
const WEIGHT_NAME = /^(model\.|lm_head\.)/;
const EMBEDDING = 'model.embed_tokens.weight';
const LM_HEAD = 'lm_head.weight';
/** The files besides the weights that the checkpoint takes from the model directory, each when it is there. */
const SIDE_FILES = [MODEL_FILES.config, ...IMPORTED_SIDE_FILES];
const SAFETENSORS_DTYPE: Partial<Record<number, string>> = {
  [onnx.TensorProto.DataType.FLOAT]: 'F32',
  [onnx.TensorProto.DataType.FLOAT16]: 'F16',
};

/** Swaps the two axes of a [rows, cols] matrix of `bytes`-byte elements. */
function transposed(data: Uint8Array, rows: number, cols: number, bytes: number): Uint8Array {
  const out = new Uint8Array(data.length);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const from = (r * cols + c) * bytes;
      out.set(data.subarray(from, from + bytes), (c * rows + r) * bytes);
    }
  }
  return out;
}

/** What the graph was, so that an import can write the same weights as another graph. */
export interface GraphFacts {
  dtype: 'fp32' | 'fp16';
  /** The graph takes decide_segment_ids (packed rows). */
  segmentIds: boolean;
}

/**
 * Writes `outDir` (created) as a checkpoint of the model directory `modelDir` whose graph is
 * `graphFile`. Throws, naming the tensor, on a weight that is not fp32 or fp16.
 */
export function writeCheckpointFromGraph(modelDir: string, graphFile: string, outDir: string): GraphFacts {
  const config = JSON.parse(readFileSync(path.join(modelDir, MODEL_FILES.config), 'utf8')) as { tie_word_embeddings?: boolean };
  const model = onnx.ModelProto.decode(readFileSync(graphFile));
  const graphDir = path.dirname(graphFile);
  const tensors: { name: string; dtype: string; shape: number[]; data: Uint8Array }[] = [];
  for (const t of model.graph?.initializer ?? []) {
    const name = t.name ?? '';
    if (!WEIGHT_NAME.test(name) || (name === LM_HEAD && config.tie_word_embeddings === true)) continue;
    const dtype = SAFETENSORS_DTYPE[t.dataType ?? -1];
    if (dtype === undefined) throw new Error(`${name}: stored as ONNX type ${t.dataType}; only fp32 and fp16 weights can be read back (an int8 model is not a checkpoint)`);
    const dims = (t.dims ?? []).map(Number);
    let data = tensorBytes(t, graphDir);
    let shape = dims;
    if (dims.length === 2 && name !== EMBEDDING) {
      data = transposed(data, dims[0]!, dims[1]!, elementBytes(t.dataType)!);
      shape = [dims[1]!, dims[0]!];
    }
    tensors.push({ name, dtype, shape, data });
  }
  if (tensors.length === 0) throw new Error(`${graphFile}: no weights named model.* or lm_head.* (not a graph this project wrote)`);
  mkdirSync(outDir, { recursive: true });
  for (const file of SIDE_FILES) {
    if (existsSync(path.join(modelDir, file))) copyFileSync(path.join(modelDir, file), path.join(outDir, file));
  }
  // safetensors: u64 header length, the JSON header, then the tensors back to back.
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.length] };
    offset += t.data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  const fd = openSync(path.join(outDir, 'model.safetensors'), 'w');
  try {
    writeSync(fd, length);
    writeSync(fd, json);
    for (const t of tensors) writeSync(fd, t.data);
  } finally {
    closeSync(fd);
  }
  return {
    dtype: tensors.some((t) => t.dtype === 'F16') ? 'fp16' : 'fp32',
    segmentIds: (model.graph?.input ?? []).some((i) => i.name === SEGMENT_IDS_INPUT),
  };
}
