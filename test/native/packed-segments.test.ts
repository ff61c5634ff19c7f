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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { makeModel, PRESETS, SEGMENT_IDS_INPUT } from '../../src/models/builder/index.js';
import type { DecoderFeatures } from '../../src/models/builder/decoder-graph.js';
import { maxAbsDiff } from '../helpers/imported-logits.js';
import { filled, logitsAt, packedQuestions, packedRow, questionsAfterPast, sampleItems, worstQuestion, type Item } from '../helpers/packed-rows.js';
import { referenceLastLogits, referenceModel, releaseReferenceSessions } from '../helpers/reference.js';
import { TINY_SEED, tinyModelDir } from '../helpers/tiny-model.js';

const tiny = PRESETS.tiny!;
/** Small enough that a 40-token state and 12- or 15-token questions reach past it; in the first layer only. */
const WINDOW: DecoderFeatures['slidingWindow'] = { size: 8, layers: [true, false] };
let scratch: string;
let stockDir: string;
let packedDir: string;
let windowDir: string;
let windowPackedDir: string;

/** A tiny model with these features; the weights are the stock tiny model's. */
async function tinyWith(name: string, features: Partial<DecoderFeatures>): Promise<string> {
  return (await makeModel({ preset: 'tiny', seed: TINY_SEED, outDir: path.join(scratch, name), features })).dir;
}

beforeAll(async () => {
  stockDir = await tinyModelDir();
  scratch = await mkdtemp(path.join(os.tmpdir(), 'packed-segments-'));
  packedDir = await tinyWith('tiny-packed', { segmentIds: true });
  // The stock sliding-window graph: its fresh rows are what packing must reproduce.
  windowDir = await tinyWith('tiny-window', { slidingWindow: WINDOW });
  windowPackedDir = await tinyWith('tiny-window-packed', { slidingWindow: WINDOW, segmentIds: true });
}, 60_000);

afterAll(async () => {
  await releaseReferenceSessions();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const [item, shorter] = sampleItems(tiny.vocabSize);
const inRow = (it: Item) => it.state.length;
const afterPast = () => 0;
const freshFrom = (dir: string) => (seq: number[]) => referenceLastLogits(dir, seq);

describe('multi-item packing (segment ids) in the generated graph', () => {
  it('the stock graph has no segment input; the packed one adds only that input', async () => {
    const stock = (await referenceModel(stockDir)).session;
    const packed = (await referenceModel(packedDir)).session;
    expect(stock.inputNames).not.toContain(SEGMENT_IDS_INPUT);
    expect(packed.inputNames).toEqual([...stock.inputNames.slice(0, 3), SEGMENT_IDS_INPUT, ...stock.inputNames.slice(3)]);
  });

  it('one row with the state and every question: each question gets its fresh row logits (1e-4)', async () => {
    const out = await packedRow(await referenceModel(packedDir), item);
    expect(await worstQuestion(out, [item], inRow, freshFrom(stockDir))).toBeLessThan(1e-4);
  });

  it("the questions packed after the state's KV as past (no per-question copy): the same logits (1e-4)", async () => {
    const out = await questionsAfterPast(await referenceModel(packedDir), [item]);
    expect(await worstQuestion(out, [item], afterPast, freshFrom(stockDir))).toBeLessThan(1e-4);
  });

  it('without the segment ids the questions would see each other: the mask is what keeps them apart', async () => {
    // Every question in segment 1: question 2 then attends to questions 0 and 1 and moves away from its fresh row.
    const out = await packedRow(await referenceModel(packedDir), item, filled(packedQuestions(item).tokens.length, 1));
    const fresh = await referenceLastLogits(stockDir, [...item.state, ...item.questions[2]!]);
    expect(maxAbsDiff(logitsAt(out, item.state.length + packedQuestions(item).last[2]!), fresh)).toBeGreaterThan(1e-3);
  });
});

describe('packing with sliding-window layers', () => {
  it('the window matters here: the sliding-window fresh rows are far from full attention over the same weights', async () => {
    for (const q of item.questions) {
      const seq = [...item.state, ...q];
      expect(maxAbsDiff(await referenceLastLogits(windowDir, seq), await referenceLastLogits(stockDir, seq))).toBeGreaterThan(1e-2);
    }
  });

  it("one row with the state and every question: each question gets the stock sliding-window graph's fresh row (1e-4)", async () => {
    const out = await packedRow(await referenceModel(windowPackedDir), item);
    expect(await worstQuestion(out, [item], inRow, freshFrom(windowDir))).toBeLessThan(1e-4);
  });

  it('questions after a padded past, in right-padded rows: each gets its fresh row (1e-4)', async () => {
    const items = [item, shorter];
    const out = await questionsAfterPast(await referenceModel(windowPackedDir), items);
    expect(await worstQuestion(out, items, afterPast, freshFrom(windowDir))).toBeLessThan(1e-4);
  });
});
