/**
 * `importModel({ attention: 'fused' })` against transformers and against the standard-op import:
 * the transformers-made checkpoints in hf-tiny (README, "Tests"), imported as the fused decoder
 * graph (fused-layers.ts) and scored through the engine at several prefix / suffix splits, give
 * transformers' last-position logits within 1e-4, as the standard-op import does
 * (import-model.test.ts); every fixture (the bf16 ones too) imported both ways gives the same
 * logits and presents within 1e-4 on the engine's batch layout, packed rows included. The node
 * count per layer is recorded in decision.json. A value other than 'ops' or 'fused' is refused
 * before anything is written.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { onnx } from '../../src/models/builder/onnx-writer.js';
import { importModel, PACKED_IMPORTS_BY_DEFAULT } from '../../src/models/import/import-model.js';
import * as ort from 'onnxruntime-node';

import { compareSessions, engineLayoutFeeds } from '../helpers/engine-layout.js';
import { engineLastLogits, maxAbsDiff } from '../helpers/imported-logits.js';
import { REFERENCE_SESSION_OPTIONS, releaseReferenceSessions } from '../helpers/reference.js';
import { HF_TINY } from '../helpers/fixtures.js';

const FIXTURES = HF_TINY;
const VOCAB = 512;

let scratch: string;

beforeAll(async () => {
  if (!existsSync(FIXTURES)) throw new Error(`the hf-tiny fixtures are expected at ${FIXTURES} (set DECIDE_HF_TINY_DIR to their folder)`);
  scratch = await mkdtemp(path.join(os.tmpdir(), 'import-fused-test-'));
});

afterAll(async () => {
  await releaseReferenceSessions();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

interface Case {
  input_ids: number[];
  last_logits: number[];
}

describe.each(['qwen3', 'qwen2', 'llama3'])('the %s fixture imported with fused attention', (family) => {
  it("writes ONNX's Attention in every layer and scores within 1e-4 of transformers at every prefix/suffix split", async () => {
    const imported = await importModel({ hfDir: path.join(FIXTURES, family), outDir: path.join(scratch, `${family}-fused`), attention: 'fused' });
    const model = onnx.ModelProto.decode(await readFile(path.join(imported.dir, 'onnx', 'model.onnx')));
    const layers = Number((JSON.parse(readFileSync(path.join(imported.dir, 'config.json'), 'utf8')) as Record<string, unknown>).num_hidden_layers);
    expect(model.graph!.node!.filter((n) => n.opType === 'Attention' && !n.domain)).toHaveLength(layers);
    expect(model.graph!.node!.filter((n) => n.opType === 'Softmax')).toHaveLength(0);
    const decision = JSON.parse(readFileSync(path.join(imported.dir, 'decision.json'), 'utf8')) as { import?: { features?: unknown; nodesPerLayer?: number } };
    expect(decision.import?.features).toEqual({ attention: 'fused', ...(PACKED_IMPORTS_BY_DEFAULT ? { segmentIds: true } : {}) });
    // Qwen3: 16 nodes (its q/k norms); Qwen2: 13 + the q/k/v bias Add; Llama: 13.
    expect(decision.import?.nodesPerLayer).toBe({ qwen3: 20, qwen2: 17, llama3: 14 }[family]);
    expect(imported.nodesPerLayer).toBe(decision.import?.nodesPerLayer);

    const refCases = (JSON.parse(readFileSync(path.join(FIXTURES, family, 'reference_logits.json'), 'utf8')) as { cases: Case[] }).cases;
    const got = await engineLastLogits(imported.dir, refCases.map((c) => c.input_ids), VOCAB);
    refCases.forEach((c, i) => {
      expect(got[i]!.length).toBeGreaterThan(0);
      for (const { logits } of got[i]!) expect(maxAbsDiff(logits, c.last_logits)).toBeLessThan(1e-4);
    });
  });
});

describe.each(['qwen3', 'qwen2', 'llama3', 'qwen3-bf16', 'qwen2-bf16', 'llama3-bf16'])('the %s fixture imported both ways', (folder) => {
  it('gives the same logits and presents from the fused graph as from the standard-op graph (1e-4), packed rows included', async () => {
    const hfDir = path.join(FIXTURES, folder);
    const [ops, fused] = await Promise.all(
      (['ops', 'fused'] as const).map(async (attention) => {
        const { dir, plan } = await importModel({ hfDir, outDir: path.join(scratch, `${folder}-${attention}-pair`), attention, segmentIds: true });
        return { session: await ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'), REFERENCE_SESSION_OPTIONS), shape: plan.shape };
      }),
    );
    try {
      const shape = ops.shape;
      for (const [pastLens, newLens] of [
        [[11, 0, 4], [6, 9, 3]],
        [[40], [25]],
      ]) {
        const diff = await compareSessions(ops.session, fused.session, engineLayoutFeeds(shape, pastLens!, newLens!, true));
        expect(diff.logits, 'logits').toBeLessThan(1e-4);
        expect(diff.presents, 'presents').toBeLessThan(1e-4);
      }
    } finally {
      await Promise.all([ops.session.release(), fused.session.release()]);
    }
  });
});

it('refuses an attention other than ops or fused, writing nothing', async () => {
  const outDir = path.join(scratch, 'refused');
  const err = await importModel({ hfDir: path.join(FIXTURES, 'qwen3'), outDir, attention: 'flash' as 'fused' }).catch((e: unknown) => e);
  // The caller's option, not the checkpoint: ERR_INPUT, as every library option refusal.
  expect(err).toMatchObject({ code: 'ERR_INPUT', message: "importModel: attention must be ops or fused, got 'flash'" });
  expect(existsSync(outDir)).toBe(false);
});
