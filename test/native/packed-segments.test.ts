/**
 * Multi-item packing in the generated graph (DecoderFeatures.segmentIds), on the CPU in fp32: one
 * row holding a state and all of its questions (segment ids, each question's positions restarting
 * at the state's length) gives each question the logits of its own fresh full-sequence row, within
 * 1e-4; so does the packed questions row after the state's KV as past, which is the fork-free suffix
 * pass. The graph without the feature is today's: no extra input. The engine does not use packing
 * yet; this checks the graph it will run.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { makeModel, PRESETS, SEGMENT_IDS_INPUT } from '../../src/models/builder/index.js';
import { referenceLastLogits, referenceModel } from '../helpers/reference.js';
import { TINY_SEED, tinyModelDir } from '../helpers/tiny-model.js';

const tiny = PRESETS.tiny!;
let scratch: string;
let packed: ort.InferenceSession;
let stockDir: string;

beforeAll(async () => {
  stockDir = await tinyModelDir();
  scratch = await mkdtemp(path.join(os.tmpdir(), 'packed-segments-'));
  const { dir } = await makeModel({ preset: 'tiny', seed: TINY_SEED, outDir: path.join(scratch, 'tiny-packed'), features: { segmentIds: true } });
  packed = await ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'), { intraOpNumThreads: 1 });
}, 60_000);

afterAll(async () => {
  await packed?.release();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

function ids(seed: number, n: number): number[] {
  let x = seed >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x % (tiny.vocabSize - 64);
  });
}

const int64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims);

function emptyPast(pastLen: number, kv?: Record<string, ort.Tensor>): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  for (let l = 0; l < tiny.numLayers; l++) {
    for (const kind of ['key', 'value']) {
      feeds[`past_key_values.${l}.${kind}`] = kv?.[`present.${l}.${kind}`] ?? new ort.Tensor('float32', new Float32Array(0), [1, tiny.numKvHeads, pastLen, tiny.headDim]);
    }
  }
  return feeds;
}

/** Logits of row 0 at `position`, from a [1, S, vocab] output. */
function logitsAt(out: ort.Tensor, position: number): Float32Array {
  const vocab = out.dims[2]!;
  return (out.data as Float32Array).slice(position * vocab, (position + 1) * vocab);
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const state = ids(1, 40);
const questions = [ids(2, 12), ids(3, 7), ids(4, 15)];
const qTokens = questions.flat();
/** Each question's positions restart at the state's length; its segment is its 1-based number. */
const qPositions = questions.flatMap((q) => q.map((_, i) => state.length + i));
const qSegments = questions.flatMap((q, k) => q.map(() => k + 1));
/** Index of each question's last token among the question tokens. */
const qLast = questions.map((_, k) => questions.slice(0, k + 1).reduce((n, q) => n + q.length, 0) - 1);

/** One row, empty past: the state (segment 0), then every question with `questionSegments`. */
function packedRow(questionSegments: number[]): Promise<ort.InferenceSession.OnnxValueMapType> {
  const tokens = [...state, ...qTokens];
  return packed.run({
    input_ids: int64(tokens, [1, tokens.length]),
    attention_mask: int64(tokens.map(() => 1), [1, tokens.length]),
    position_ids: int64([...state.map((_, i) => i), ...qPositions], [1, tokens.length]),
    [SEGMENT_IDS_INPUT]: int64([...state.map(() => 0), ...questionSegments], [1, tokens.length]),
    ...emptyPast(0),
  });
}

describe('multi-item packing (segment ids) in the generated graph', () => {
  it('the stock graph has no segment input; the packed one adds only that input', async () => {
    const stock = (await referenceModel(stockDir)).session;
    expect(stock.inputNames).not.toContain(SEGMENT_IDS_INPUT);
    expect(packed.inputNames).toEqual([...stock.inputNames.slice(0, 3), SEGMENT_IDS_INPUT, ...stock.inputNames.slice(3)]);
  });

  it('one row with the state and every question: each question gets its fresh row logits (1e-4)', async () => {
    const out = await packedRow(qSegments);
    for (let k = 0; k < questions.length; k++) {
      const fresh = await referenceLastLogits(stockDir, [...state, ...questions[k]!]);
      expect(maxDiff(logitsAt(out.logits!, state.length + qLast[k]!), fresh), `question ${k}`).toBeLessThan(1e-4);
    }
  });

  it("the questions packed after the state's KV as past (no per-question copy): the same logits (1e-4)", async () => {
    const prefix = await packed.run({
      input_ids: int64(state, [1, state.length]),
      attention_mask: int64(state.map(() => 1), [1, state.length]),
      position_ids: int64(state.map((_, i) => i), [1, state.length]),
      [SEGMENT_IDS_INPUT]: int64(state.map(() => 0), [1, state.length]),
      ...emptyPast(0),
    });
    const total = state.length + qTokens.length;
    const out = await packed.run({
      input_ids: int64(qTokens, [1, qTokens.length]),
      attention_mask: int64(Array(total).fill(1), [1, total]),
      position_ids: int64(qPositions, [1, qTokens.length]),
      [SEGMENT_IDS_INPUT]: int64([...state.map(() => 0), ...qSegments], [1, total]),
      ...emptyPast(state.length, prefix),
    });
    for (let k = 0; k < questions.length; k++) {
      const fresh = await referenceLastLogits(stockDir, [...state, ...questions[k]!]);
      expect(maxDiff(logitsAt(out.logits!, qLast[k]!), fresh), `question ${k}`).toBeLessThan(1e-4);
    }
  });

  it('without the segment ids the questions would see each other: the mask is what keeps them apart', async () => {
    // Every question in segment 1: question 2 then attends to questions 0 and 1 and moves away from its fresh row.
    const out = await packedRow(qTokens.map(() => 1));
    const fresh = await referenceLastLogits(stockDir, [...state, ...questions[2]!]);
    expect(maxDiff(logitsAt(out.logits!, state.length + qLast[2]!), fresh)).toBeGreaterThan(1e-3);
  });
});
