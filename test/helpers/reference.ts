/**
 * Reference scoring through the onnxruntime-node JS API (never the native engine): full-sequence
 * forwards with an empty past. This is the "fresh scoring" baseline the engine's prefix reuse must
 * match, and what the benchmark times as the naive approach.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import * as ort from 'onnxruntime-node';

import { float16Tensor } from '../../bench/ort-float16.js';
import { float16ToFloat32 } from '../../src/models/builder/onnx-writer.js';
import { SEGMENT_IDS_INPUT } from '../../src/models/builder/decoder-graph.js';

export interface ReferenceModel {
  session: ort.InferenceSession;
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  /** 'float16' for fp16 exports (past/present/logits are fp16). */
  floatType: 'float32' | 'float16';
}

/**
 * One ONNX Runtime thread: two test files run at once on two cores, and a second intra-op thread
 * spins against them (the engines follow DECIDE_THREADS=1 from vitest.config.ts for the same reason).
 */
export const REFERENCE_SESSION_OPTIONS: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 1 };

const sessions = new Map<string, Promise<ReferenceModel>>();

/** The cached session of a model directory (one per directory per process). */
export function referenceModel(modelDir: string): Promise<ReferenceModel> {
  return oncePerModelDir(sessions, modelDir, loadReferenceModel);
}

/** `load(dir)` once per resolved model directory, kept in `cache`; a failed load is tried again next time. */
export function oncePerModelDir<T>(cache: Map<string, Promise<T>>, modelDir: string, load: (dir: string) => Promise<T>): Promise<T> {
  const key = path.resolve(modelDir);
  let found = cache.get(key);
  if (found === undefined) {
    found = load(key);
    found.catch(() => cache.delete(key));
    cache.set(key, found);
  }
  return found;
}

async function loadReferenceModel(dir: string): Promise<ReferenceModel> {
  const config = JSON.parse(await readFile(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const session = await ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'), REFERENCE_SESSION_OPTIONS);
  const past = session.inputMetadata.find((m) => m.name === 'past_key_values.0.key');
  const floatType = past !== undefined && past.isTensor && past.type === 'float16' ? 'float16' : 'float32';
  return {
    session,
    numLayers: Number(config.num_hidden_layers),
    numKvHeads: Number(config.num_key_value_heads),
    // head_dim is optional in Hugging Face configs (Qwen2, older Llama): hidden_size / heads then.
    headDim: Number(config.head_dim ?? Number(config.hidden_size) / Number(config.num_attention_heads)),
    vocabSize: Number(config.vocab_size),
    floatType,
  };
}

/** Releases every cached session (call from afterAll when a file used large models). */
export async function releaseReferenceSessions(): Promise<void> {
  const all = [...sessions.values()];
  sessions.clear();
  await Promise.all(all.map(async (p) => (await p.catch(() => undefined))?.session.release()));
}

/** Empty past tensors [batch, kv_heads, 0, head_dim] for every layer. */
export function emptyPast(model: ReferenceModel, batch: number): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  const dims = [batch, model.numKvHeads, 0, model.headDim];
  for (let i = 0; i < model.numLayers; i++) {
    for (const kind of ['key', 'value']) {
      feeds[`past_key_values.${i}.${kind}`] =
        model.floatType === 'float16' ? float16Tensor(new Uint16Array(0), dims) : new ort.Tensor('float32', new Float32Array(0), dims);
    }
  }
  return feeds;
}

/** A tensor's data as float32 (converting fp16 outputs). */
export function asFloat32(t: ort.Tensor): Float32Array {
  if (t.type === 'float32') return t.data as Float32Array;
  // onnxruntime-node gives fp16 data as bits (Uint16Array), or as a Float16Array of values on a
  // Node that has one (24 and later).
  if (t.type === 'float16') return t.data instanceof Uint16Array ? float16ToFloat32(t.data) : Float32Array.from(t.data as ArrayLike<number>);
  throw new Error(`expected a float tensor, got ${t.type}`);
}

/** Logits at the last position of one full-sequence forward of `ids` with an empty past. */
export async function referenceLastLogits(modelDir: string, ids: number[] | Int32Array): Promise<Float32Array> {
  const [logits] = await referenceBatchLastLogits(modelDir, [Int32Array.from(ids)]);
  return logits!;
}

/**
 * One forward of all rows, right-padded to the longest, with an empty past; returns each row's logits
 * at its last real position. Padding is masked with attention_mask 0; position_ids are 0..len-1. A
 * packing graph gets segment ids 0 everywhere, which makes each row an ordinary causal row.
 */
export async function referenceBatchLastLogits(modelDir: string, rows: Int32Array[]): Promise<Float32Array[]> {
  if (rows.length === 0) return [];
  if (rows.some((r) => r.length === 0)) throw new Error('referenceBatchLastLogits: empty row');
  const model = await referenceModel(modelDir);
  const batch = rows.length;
  const seq = Math.max(...rows.map((r) => r.length));
  const ids = new BigInt64Array(batch * seq);
  const mask = new BigInt64Array(batch * seq);
  const positions = new BigInt64Array(batch * seq);
  rows.forEach((row, b) => {
    for (let s = 0; s < seq; s++) {
      const at = b * seq + s;
      ids[at] = s < row.length ? BigInt(row[s]!) : 0n;
      mask[at] = s < row.length ? 1n : 0n;
      positions[at] = BigInt(s);
    }
  });
  const out = await model.session.run(
    {
      input_ids: new ort.Tensor('int64', ids, [batch, seq]),
      attention_mask: new ort.Tensor('int64', mask, [batch, seq]),
      position_ids: new ort.Tensor('int64', positions, [batch, seq]),
      ...(model.session.inputNames.includes(SEGMENT_IDS_INPUT) ? { [SEGMENT_IDS_INPUT]: new ort.Tensor('int64', new BigInt64Array(batch * seq), [batch, seq]) } : {}),
      ...emptyPast(model, batch),
    },
    ['logits'],
  );
  const logits = asFloat32(out.logits!);
  const vocab = model.vocabSize;
  return rows.map((row, b) => logits.slice((b * seq + row.length - 1) * vocab, (b * seq + row.length) * vocab));
}
