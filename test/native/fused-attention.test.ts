/**
 * The fused-attention graph (DecoderFeatures.attention 'fused': ONNX Runtime's MultiHeadAttention)
 * on the CPU in fp32, against today's standard-op graph with the same weights: the same inputs and
 * outputs, and the same logits and presents within 1e-4 on the engine's layout (a batch of rows with
 * different past lengths, padding between a row's past and its new tokens, padded new tokens), with
 * segment ids and with a sliding window. Then the engine runs it unchanged and scores as the stock
 * model does. An fp16 build runs on the CPU too, though ORT 1.30's CPU MultiHeadAttention is
 * float-only: ORT inserts Casts around the op and computes it in fp32 there.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, type ScoreGroup } from '../../src/engine/engine.js';
import { makeModel, PRESETS, SEGMENT_IDS_INPUT, type DecoderFeatures } from '../../src/models/builder/index.js';
import { float32ToFloat16, onnx } from '../../src/models/builder/onnx-writer.js';
import { asFloat32, REFERENCE_SESSION_OPTIONS } from '../helpers/reference.js';
import { TINY_SEED, tinyModelDir } from '../helpers/tiny-model.js';

const tiny = PRESETS.tiny!;
const { numLayers, numKvHeads, headDim, vocabSize } = tiny;

/** The graph variants compared: each is built twice, with standard-op and with fused attention. */
const VARIANTS: Record<string, Partial<DecoderFeatures>> = {
  plain: {},
  segments: { segmentIds: true },
  sliding: { slidingWindow: { size: 4, layers: [true, false] } },
  packedSliding: { segmentIds: true, slidingWindow: { size: 3, layers: [false, true] } },
};

let scratch: string;
const sessions = new Map<string, { ops: ort.InferenceSession; fused: ort.InferenceSession; fusedDir: string }>();

async function build(name: string, features: Partial<DecoderFeatures>, dtype: 'fp32' | 'fp16' = 'fp32'): Promise<string> {
  // fp32 variants without a window are the shared test models (built once for every test file).
  if (dtype === 'fp32' && features.slidingWindow === undefined) return tinyModelDir({ segmentIds: features.segmentIds, attention: features.attention });
  const { dir } = await makeModel({ preset: 'tiny', seed: TINY_SEED, dtype, outDir: path.join(scratch, name), features });
  return dir;
}

const open = (dir: string) => ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'), REFERENCE_SESSION_OPTIONS);

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'fused-attention-'));
  for (const [name, features] of Object.entries(VARIANTS)) {
    const opsDir = await build(`${name}-ops`, features);
    const fusedDir = await build(`${name}-fused`, { ...features, attention: 'fused' });
    sessions.set(name, { ops: await open(opsDir), fused: await open(fusedDir), fusedDir });
  }
}, 120_000);

afterAll(async () => {
  for (const s of sessions.values()) await Promise.all([s.ops.release(), s.fused.release()]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** Deterministic values in [-1, 1). */
function values(seed: number, n: number): Float32Array {
  let x = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 31 - 1;
  });
}

const int64 = (v: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(v.map(BigInt)), dims);

/**
 * The engine's layout: row r has pastLens[r] real past tokens at [0, pastLens[r]) then padding to P,
 * and newLens[r] real new tokens at [P, P + newLens[r]) then padding to S. Positions continue the
 * row's own count; segments (when given) number each row's new tokens in pairs after a shared state.
 */
function engineLayoutFeeds(pastLens: number[], newLens: number[], withSegments: boolean, fp16 = false): Record<string, ort.Tensor> {
  const B = pastLens.length;
  const P = Math.max(...pastLens);
  const S = Math.max(...newLens);
  const T = P + S;
  const ids: number[] = [];
  const mask: number[] = [];
  const positions: number[] = [];
  const segments: number[] = [];
  const tokens = values(5, B * S);
  for (let r = 0; r < B; r++) {
    for (let j = 0; j < T; j++) mask.push(j < pastLens[r]! || (j >= P && j < P + newLens[r]!) ? 1 : 0);
    for (let s = 0; s < S; s++) {
      ids.push(Math.floor((tokens[r * S + s]! + 1) * 0.5 * (vocabSize - 64)));
      positions.push(pastLens[r]! + s);
    }
    for (let j = 0; j < T; j++) segments.push(j < P ? 0 : 1 + Math.floor((j - P) / 2));
  }
  const feeds: Record<string, ort.Tensor> = {
    input_ids: int64(ids, [B, S]),
    attention_mask: int64(mask, [B, T]),
    position_ids: int64(positions, [B, S]),
  };
  if (withSegments) feeds[SEGMENT_IDS_INPUT] = int64(segments, [B, T]);
  const pastDims = [B, numKvHeads, P, headDim];
  const past = (seed: number) => {
    const v = values(seed, B * numKvHeads * P * headDim);
    return fp16 ? new ort.Tensor('float16', float32ToFloat16(v), pastDims) : new ort.Tensor('float32', v, pastDims);
  };
  for (let l = 0; l < numLayers; l++) {
    feeds[`past_key_values.${l}.key`] = past(100 + l);
    feeds[`past_key_values.${l}.value`] = past(200 + l);
  }
  return feeds;
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

async function compare(variant: string, pastLens: number[], newLens: number[]): Promise<void> {
  const { ops, fused } = sessions.get(variant)!;
  const feeds = engineLayoutFeeds(pastLens, newLens, VARIANTS[variant]!.segmentIds === true);
  const [want, got] = [await ops.run(feeds), await fused.run(feeds)];
  expect(got.logits!.dims).toEqual(want.logits!.dims);
  expect(maxDiff(asFloat32(got.logits!), asFloat32(want.logits!)), 'logits').toBeLessThan(1e-4);
  for (let l = 0; l < numLayers; l++) {
    for (const kind of ['key', 'value']) {
      const name = `present.${l}.${kind}`;
      expect(got[name]!.dims).toEqual(want[name]!.dims);
      expect(maxDiff(asFloat32(got[name]!), asFloat32(want[name]!)), name).toBeLessThan(1e-4);
    }
  }
}

describe('fused attention (MultiHeadAttention) in the generated graph, fp32 on the CPU', () => {
  it('keeps the graph contract: the same inputs and outputs; one MultiHeadAttention per layer and no Softmax', async () => {
    for (const { ops, fused, fusedDir } of sessions.values()) {
      expect(fused.inputNames).toEqual(ops.inputNames);
      expect(fused.outputNames).toEqual(ops.outputNames);
      const model = onnx.ModelProto.decode(await readFile(path.join(fusedDir, 'onnx', 'model.onnx')));
      const nodes = model.graph!.node!;
      expect(nodes.filter((n) => n.opType === 'MultiHeadAttention' && n.domain === 'com.microsoft')).toHaveLength(numLayers);
      expect(nodes.filter((n) => n.opType === 'Softmax')).toHaveLength(0);
      expect(model.opsetImport).toContainEqual(expect.objectContaining({ domain: 'com.microsoft' }));
    }
    // The stock graph imports no contrib opset.
    const stock = onnx.ModelProto.decode(await readFile(path.join(await tinyModelDir(), 'onnx', 'model.onnx')));
    expect(stock.opsetImport!.map((o) => o.domain ?? '')).toEqual(['']);
  });

  it('one row, past and new tokens: the stock graph\'s logits and presents (1e-4)', async () => {
    await compare('plain', [9], [5]);
    await compare('plain', [0], [12]);
  });

  it('a batch of rows with different past lengths, padding between past and new, padded new tokens (1e-4)', async () => {
    await compare('plain', [7, 3, 0, 5], [4, 6, 2, 1]);
  });

  it('a fully masked row (an empty slot in a batch) gives the same finite values, not NaN (1e-4)', async () => {
    await compare('plain', [5, 0], [3, 0]);
  });

  it('with segment ids (multi-item packing) (1e-4)', async () => {
    await compare('segments', [6, 2], [6, 4]);
  });

  it('with a sliding window in one layer (1e-4)', async () => {
    await compare('sliding', [8, 3], [5, 7]);
  });

  it('with segment ids and a sliding window together (1e-4)', async () => {
    await compare('packedSliding', [7, 0], [8, 6]);
  });
});

describe('an fp16 fused graph on the CPU', () => {
  it('runs (the op in fp32 behind Casts ORT inserts) and stays within fp16 rounding of the fp16 stock graph', async () => {
    const [ops, fused] = await Promise.all([open(await build('fp16-ops', {}, 'fp16')), open(await build('fp16-fused', { attention: 'fused' }, 'fp16'))]);
    try {
      const feeds = engineLayoutFeeds([6, 2], [4, 3], false, true);
      const [want, got] = [await ops.run(feeds), await fused.run(feeds)];
      expect(got.logits!.type).toBe('float16');
      const logits = asFloat32(got.logits!);
      expect(logits.every(Number.isFinite)).toBe(true);
      expect(maxDiff(logits, asFloat32(want.logits!))).toBeLessThan(0.1);
    } finally {
      await Promise.all([ops.release(), fused.release()]);
    }
  });
});

describe('the engine runs the fused graph', () => {
  let stock: Engine;
  let fused: Engine;
  beforeAll(async () => {
    stock = await Engine.load({ modelDir: await tinyModelDir(), threads: 1 });
    fused = await Engine.load({ modelDir: sessions.get('plain')!.fusedDir, threads: 1 });
  }, 60_000);
  afterAll(() => {
    stock?.close();
    fused?.close();
  });

  it('scores prefixes and suffixes of several lengths as the stock model does (1e-4)', async () => {
    const ids = (seed: number, n: number) => Int32Array.from(values(seed, n), (v) => Math.floor((v + 1) * 0.5 * (vocabSize - 64)));
    const groups: ScoreGroup[] = [
      { prefix: ids(1, 40), suffixes: [{ tokens: ids(2, 5), labels: ids(3, 4) }, { tokens: ids(4, 11), labels: ids(5, 3) }] },
      { prefix: ids(6, 7), suffixes: [{ tokens: ids(7, 1), labels: ids(8, 6) }] },
      { prefix: ids(9, 90), suffixes: [{ tokens: ids(10, 20), labels: ids(11, 2) }, { tokens: ids(12, 3), labels: ids(13, 5) }] },
    ];
    const [want, got] = [await stock.score(groups), await fused.score(groups)];
    want.forEach((group, g) =>
      group.forEach((score, s) => {
        const mine = got[g]![s]!;
        expect(maxDiff(mine.labelLogits, score.labelLogits)).toBeLessThan(1e-4);
        expect(Math.abs(mine.logSumExp - score.logSumExp)).toBeLessThan(1e-4);
      }),
    );
  });
});
