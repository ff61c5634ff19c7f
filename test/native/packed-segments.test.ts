/**
 * Multi-item packing in the generated graph (DecoderFeatures.segmentIds), on the CPU in fp32: one
 * row holding a state and all of its questions (segment ids, each question's positions restarting
 * at the state's length) gives each question the logits of its own fresh full-sequence row, within
 * 1e-4; so does the packed questions row after the state's KV as past, which is the fork-free suffix
 * pass. The graph without the feature is today's: no extra input. Packing combines with
 * sliding-window layers (an importer feature): there too each question gets the stock
 * sliding-window graph's fresh row, with padded rows and a padded past. The engine does not use
 * packing yet; this checks the graph it will run.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { makeModel, PRESETS, SEGMENT_IDS_INPUT } from '../../src/models/builder/index.js';
import type { DecoderFeatures } from '../../src/models/builder/decoder-graph.js';
import { referenceLastLogits, referenceModel } from '../helpers/reference.js';
import { TINY_SEED, tinyModelDir } from '../helpers/tiny-model.js';

const tiny = PRESETS.tiny!;
/** Small enough that a 40-token state and 12- or 15-token questions reach past it; in the first layer only. */
const WINDOW: DecoderFeatures['slidingWindow'] = { size: 8, layers: [true, false] };
let scratch: string;
let stockDir: string;
let windowDir: string;
let packed: ort.InferenceSession;
let windowPacked: ort.InferenceSession;

/** A tiny model with these features (the weights are the stock tiny model's), and its session. */
async function tinyWith(name: string, features: Partial<DecoderFeatures>): Promise<{ dir: string; session: ort.InferenceSession }> {
  const { dir } = await makeModel({ preset: 'tiny', seed: TINY_SEED, outDir: path.join(scratch, name), features });
  return { dir, session: await ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'), { intraOpNumThreads: 1 }) };
}

beforeAll(async () => {
  stockDir = await tinyModelDir();
  scratch = await mkdtemp(path.join(os.tmpdir(), 'packed-segments-'));
  packed = (await tinyWith('tiny-packed', { segmentIds: true })).session;
  windowPacked = (await tinyWith('tiny-window-packed', { slidingWindow: WINDOW, segmentIds: true })).session;
  // The stock sliding-window graph: its fresh rows are what packing must reproduce.
  const windowStock = await tinyWith('tiny-window', { slidingWindow: WINDOW });
  await windowStock.session.release();
  windowDir = windowStock.dir;
}, 60_000);

afterAll(async () => {
  await packed?.release();
  await windowPacked?.release();
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
const filled = (n: number, v: number) => Array<number>(n).fill(v);
const upTo = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

/** Rows right-padded with `fill` to `width`, as one [rows, width] int64 tensor. */
function padded(rows: number[][], width: number, fill = 0): ort.Tensor {
  return int64(rows.flatMap((r) => [...r, ...filled(width - r.length, fill)]), [rows.length, width]);
}

function emptyPast(batch: number, kv?: Record<string, ort.Tensor>): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  for (let l = 0; l < tiny.numLayers; l++) {
    for (const kind of ['key', 'value']) {
      feeds[`past_key_values.${l}.${kind}`] = kv?.[`present.${l}.${kind}`] ?? new ort.Tensor('float32', new Float32Array(0), [batch, tiny.numKvHeads, 0, tiny.headDim]);
    }
  }
  return feeds;
}

/** Logits of row `b` at `position`, from a [B, S, vocab] output. */
function logitsAt(out: ort.Tensor, position: number, b = 0): Float32Array {
  const [, seq, vocab] = out.dims as [number, number, number];
  const at = (b * seq + position) * vocab;
  return (out.data as Float32Array).slice(at, at + vocab);
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** A state and its questions. */
interface Item {
  state: number[];
  questions: number[][];
}

/** The questions of an item packed one after another: tokens, positions restarting at the state's length, 1-based segments. */
function packedQuestions({ state, questions }: Item) {
  return {
    tokens: questions.flat(),
    positions: questions.flatMap((q) => upTo(q.length, state.length)),
    segments: questions.flatMap((q, k) => filled(q.length, k + 1)),
    /** Index of each question's last token among the question tokens. */
    last: questions.map((_, k) => questions.slice(0, k + 1).reduce((n, q) => n + q.length, 0) - 1),
  };
}

/** One row, empty past: the state (segment 0), then every question (segments `questionSegments`, default their own). */
function packedRow(session: ort.InferenceSession, item: Item, questionSegments?: number[]): Promise<ort.InferenceSession.OnnxValueMapType> {
  const q = packedQuestions(item);
  const tokens = [...item.state, ...q.tokens];
  return session.run({
    input_ids: int64(tokens, [1, tokens.length]),
    attention_mask: int64(filled(tokens.length, 1), [1, tokens.length]),
    position_ids: int64([...upTo(item.state.length), ...q.positions], [1, tokens.length]),
    [SEGMENT_IDS_INPUT]: int64([...filled(item.state.length, 0), ...(questionSegments ?? q.segments)], [1, tokens.length]),
    ...emptyPast(1),
  });
}

/**
 * The engine's fork-free layout, one row per item: a prefix pass over the states (right-padded to
 * the longest, masked), then each item's questions packed in one row after its state's KV as past
 * (the past's padding between the state's end and the longest state masked, the rows right-padded).
 * Returns the question pass's logits.
 */
async function questionsAfterPast(session: ort.InferenceSession, items: Item[]): Promise<ort.Tensor> {
  const pastLen = Math.max(...items.map((it) => it.state.length));
  const prefix = await session.run({
    input_ids: padded(items.map((it) => it.state), pastLen),
    attention_mask: padded(items.map((it) => filled(it.state.length, 1)), pastLen),
    position_ids: padded(items.map((it) => upTo(it.state.length)), pastLen),
    [SEGMENT_IDS_INPUT]: padded(items.map(() => []), pastLen),
    ...emptyPast(items.length),
  });
  const qs = items.map(packedQuestions);
  const width = Math.max(...qs.map((q) => q.tokens.length));
  const out = await session.run({
    input_ids: padded(qs.map((q) => q.tokens), width),
    attention_mask: padded(
      items.map((it, b) => [...filled(it.state.length, 1), ...filled(pastLen - it.state.length, 0), ...filled(qs[b]!.tokens.length, 1)]),
      pastLen + width,
    ),
    position_ids: padded(qs.map((q) => q.positions), width),
    [SEGMENT_IDS_INPUT]: padded(qs.map((q) => [...filled(pastLen, 0), ...q.segments]), pastLen + width),
    ...emptyPast(items.length, prefix),
  });
  return out.logits!;
}

const item: Item = { state: ids(1, 40), questions: [ids(2, 12), ids(3, 7), ids(4, 15)] };
const lastOf = packedQuestions(item).last;

describe('multi-item packing (segment ids) in the generated graph', () => {
  it('the stock graph has no segment input; the packed one adds only that input', async () => {
    const stock = (await referenceModel(stockDir)).session;
    expect(stock.inputNames).not.toContain(SEGMENT_IDS_INPUT);
    expect(packed.inputNames).toEqual([...stock.inputNames.slice(0, 3), SEGMENT_IDS_INPUT, ...stock.inputNames.slice(3)]);
  });

  it('one row with the state and every question: each question gets its fresh row logits (1e-4)', async () => {
    const out = await packedRow(packed, item);
    for (let k = 0; k < item.questions.length; k++) {
      const fresh = await referenceLastLogits(stockDir, [...item.state, ...item.questions[k]!]);
      expect(maxDiff(logitsAt(out.logits!, item.state.length + lastOf[k]!), fresh), `question ${k}`).toBeLessThan(1e-4);
    }
  });

  it("the questions packed after the state's KV as past (no per-question copy): the same logits (1e-4)", async () => {
    const logits = await questionsAfterPast(packed, [item]);
    for (let k = 0; k < item.questions.length; k++) {
      const fresh = await referenceLastLogits(stockDir, [...item.state, ...item.questions[k]!]);
      expect(maxDiff(logitsAt(logits, lastOf[k]!), fresh), `question ${k}`).toBeLessThan(1e-4);
    }
  });

  it('without the segment ids the questions would see each other: the mask is what keeps them apart', async () => {
    // Every question in segment 1: question 2 then attends to questions 0 and 1 and moves away from its fresh row.
    const out = await packedRow(packed, item, filled(packedQuestions(item).tokens.length, 1));
    const fresh = await referenceLastLogits(stockDir, [...item.state, ...item.questions[2]!]);
    expect(maxDiff(logitsAt(out.logits!, item.state.length + lastOf[2]!), fresh)).toBeGreaterThan(1e-3);
  });
});

describe('packing with sliding-window layers', () => {
  // Questions 0 and 2 are longer than the window: their last tokens must not see their own first
  // tokens, which only holds if a packed question's keys are placed at its own positions.
  const shorter: Item = { state: ids(5, 29), questions: [ids(6, 9), ids(7, 13)] };

  it('the window matters here: the sliding-window fresh rows are far from full attention over the same weights', async () => {
    for (const q of item.questions) {
      const seq = [...item.state, ...q];
      expect(maxDiff(await referenceLastLogits(windowDir, seq), await referenceLastLogits(stockDir, seq))).toBeGreaterThan(1e-2);
    }
  });

  it("one row with the state and every question: each question gets the stock sliding-window graph's fresh row (1e-4)", async () => {
    const out = await packedRow(windowPacked, item);
    for (let k = 0; k < item.questions.length; k++) {
      const fresh = await referenceLastLogits(windowDir, [...item.state, ...item.questions[k]!]);
      expect(maxDiff(logitsAt(out.logits!, item.state.length + lastOf[k]!), fresh), `question ${k}`).toBeLessThan(1e-4);
    }
  });

  it('questions after a padded past, in right-padded rows: each gets its fresh row (1e-4)', async () => {
    const items = [item, shorter];
    const logits = await questionsAfterPast(windowPacked, items);
    for (const [b, it] of items.entries()) {
      const { last } = packedQuestions(it);
      for (let k = 0; k < it.questions.length; k++) {
        const fresh = await referenceLastLogits(windowDir, [...it.state, ...it.questions[k]!]);
        expect(maxDiff(logitsAt(logits, last[k]!, b), fresh), `row ${b} question ${k}`).toBeLessThan(1e-4);
      }
    }
  });
});
