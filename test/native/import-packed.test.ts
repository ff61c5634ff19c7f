/**
 * `importModel` with multi-item packing (`segmentIds`): the imported graph gains the
 * decide_segment_ids input, decision.json records the feature, and a packed row (a state and its
 * questions, or the questions after the state's KV) gives each question the unpacked import's fresh
 * row within 1e-4, on the transformers-made Qwen3 fixture and on the same weights with a
 * sliding-window layer. Without the option the graph follows PACKED_IMPORTS_BY_DEFAULT.
 */
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SEGMENT_IDS_INPUT } from '../../src/models/builder/decoder-graph.js';
import { GRAPH_VERSION } from '../../src/models/builder/make-model.js';
import { importModel, PACKED_IMPORTS_BY_DEFAULT } from '../../src/models/import/import-model.js';
import { maxAbsDiff } from '../helpers/imported-logits.js';
import { packedRow, questionsAfterPast, sampleItems, worstQuestion } from '../helpers/packed-rows.js';
import { referenceLastLogits, referenceModel, releaseReferenceSessions } from '../helpers/reference.js';
import { HF_TINY } from '../helpers/fixtures.js';

const QWEN3 = path.join(HF_TINY, 'qwen3');
const VOCAB = 512;

let scratch: string;
/** The fixture as is, and with a window of 8 on its first layer (transformers 5 layer_types). */
const dirs = { plain: '', plainPacked: '', window: '', windowPacked: '' };

async function importTo(name: string, hfDir: string, segmentIds?: boolean): Promise<string> {
  return (await importModel({ hfDir, outDir: path.join(scratch, 'models', name), ...(segmentIds === undefined ? {} : { segmentIds }) })).dir;
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'import-packed-'));
  const windowed = path.join(scratch, 'qwen3-window');
  await cp(QWEN3, windowed, { recursive: true });
  const config = JSON.parse(readFileSync(path.join(QWEN3, 'config.json'), 'utf8')) as Record<string, unknown>;
  await writeFile(path.join(windowed, 'config.json'), JSON.stringify({ ...config, sliding_window: 8, layer_types: ['sliding_attention', 'full_attention'] }));
  dirs.plain = await importTo('plain', QWEN3, false);
  dirs.plainPacked = await importTo('plain-packed', QWEN3, true);
  dirs.window = await importTo('window', windowed, false);
  dirs.windowPacked = await importTo('window-packed', windowed, true);
}, 60_000);

afterAll(async () => {
  await releaseReferenceSessions();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

function importRecord(dir: string): Record<string, unknown> {
  return (JSON.parse(readFileSync(path.join(dir, 'decision.json'), 'utf8')) as { import: Record<string, unknown> }).import;
}

const items = sampleItems(VOCAB);
const freshFrom = (dir: string) => (seq: number[]) => referenceLastLogits(dir, seq);

describe('importing with multi-item packing', () => {
  it('adds only the segment input and records the feature; without it nothing is recorded', async () => {
    const plain = (await referenceModel(dirs.plain)).session;
    const packed = (await referenceModel(dirs.plainPacked)).session;
    expect(plain.inputNames).not.toContain(SEGMENT_IDS_INPUT);
    expect(packed.inputNames).toEqual([...plain.inputNames.slice(0, 3), SEGMENT_IDS_INPUT, ...plain.inputNames.slice(3)]);
    expect(importRecord(dirs.plainPacked)).toMatchObject({ features: { segmentIds: true }, graphVersion: GRAPH_VERSION });
    expect(importRecord(dirs.plain).features).toBeUndefined();
    expect(importRecord(dirs.plain).graphVersion).toBe(GRAPH_VERSION);
  });

  it('without the option the graph follows PACKED_IMPORTS_BY_DEFAULT', async () => {
    const dir = await importTo('default', QWEN3);
    expect((await referenceModel(dir)).session.inputNames.includes(SEGMENT_IDS_INPUT)).toBe(PACKED_IMPORTS_BY_DEFAULT);
    expect(importRecord(dir).features).toEqual(PACKED_IMPORTS_BY_DEFAULT ? { segmentIds: true } : undefined);
  });

  it("a packed row gives each question the unpacked import's fresh row (1e-4)", async () => {
    const model = await referenceModel(dirs.plainPacked);
    for (const item of items) {
      expect(await worstQuestion(await packedRow(model, item), [item], (it) => it.state.length, freshFrom(dirs.plain))).toBeLessThan(1e-4);
    }
    expect(await worstQuestion(await questionsAfterPast(model, items), items, () => 0, freshFrom(dirs.plain))).toBeLessThan(1e-4);
  });

  it('with a sliding-window layer too: packed rows match the windowed import, and the window matters', async () => {
    const seq = [...items[0]!.state, ...items[0]!.questions[2]!];
    expect(maxAbsDiff(await referenceLastLogits(dirs.window, seq), await referenceLastLogits(dirs.plain, seq))).toBeGreaterThan(1e-2);
    expect(importRecord(dirs.windowPacked)).toMatchObject({ slidingWindow: { size: 8, layers: [true, false] }, features: { segmentIds: true } });
    const model = await referenceModel(dirs.windowPacked);
    for (const item of items) {
      expect(await worstQuestion(await packedRow(model, item), [item], (it) => it.state.length, freshFrom(dirs.window))).toBeLessThan(1e-4);
    }
    expect(await worstQuestion(await questionsAfterPast(model, items), items, () => 0, freshFrom(dirs.window))).toBeLessThan(1e-4);
  });
});
