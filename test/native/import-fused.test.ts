/**
 * `importModel({ attention: 'fused' })` against transformers: the transformers-made checkpoints in
 * hf-tiny (README, "Tests"), imported with ONNX Runtime's MultiHeadAttention in every layer and
 * scored through the engine at several prefix / suffix splits, give transformers' last-position
 * logits within 1e-4, as the standard-op import does (import-model.test.ts). A value other than
 * 'ops' or 'fused' is refused before anything is written.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { onnx } from '../../src/models/builder/onnx-writer.js';
import { ImportError, importModel, PACKED_IMPORTS_BY_DEFAULT } from '../../src/models/import/import-model.js';
import { engineLastLogits, maxAbsDiff } from '../helpers/imported-logits.js';
import { releaseReferenceSessions } from '../helpers/reference.js';

const REPO_ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const FIXTURES = path.join(REPO_ROOT, '..', 'shared', 'fixtures', 'hf-tiny');
const VOCAB = 512;

let scratch: string;

beforeAll(async () => {
  if (!existsSync(FIXTURES)) throw new Error(`the hf-tiny fixtures are expected at ${FIXTURES} (shared/ beside the repository)`);
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
  it("writes MultiHeadAttention in every layer and scores within 1e-4 of transformers at every prefix/suffix split", async () => {
    const imported = await importModel({ hfDir: path.join(FIXTURES, family), outDir: path.join(scratch, `${family}-fused`), attention: 'fused' });
    const model = onnx.ModelProto.decode(await readFile(path.join(imported.dir, 'onnx', 'model.onnx')));
    const layers = Number((JSON.parse(readFileSync(path.join(imported.dir, 'config.json'), 'utf8')) as Record<string, unknown>).num_hidden_layers);
    expect(model.graph!.node!.filter((n) => n.opType === 'MultiHeadAttention' && n.domain === 'com.microsoft')).toHaveLength(layers);
    expect(model.graph!.node!.filter((n) => n.opType === 'Softmax')).toHaveLength(0);
    const decision = JSON.parse(readFileSync(path.join(imported.dir, 'decision.json'), 'utf8')) as { import?: { features?: unknown } };
    expect(decision.import?.features).toEqual({ attention: 'fused', ...(PACKED_IMPORTS_BY_DEFAULT ? { segmentIds: true } : {}) });

    const refCases = (JSON.parse(readFileSync(path.join(FIXTURES, family, 'reference_logits.json'), 'utf8')) as { cases: Case[] }).cases;
    const got = await engineLastLogits(imported.dir, refCases.map((c) => c.input_ids), VOCAB);
    refCases.forEach((c, i) => {
      expect(got[i]!.length).toBeGreaterThan(0);
      for (const { logits } of got[i]!) expect(maxAbsDiff(logits, c.last_logits)).toBeLessThan(1e-4);
    });
  });
});

it('refuses an attention other than ops or fused, writing nothing', async () => {
  const outDir = path.join(scratch, 'refused');
  const err = await importModel({ hfDir: path.join(FIXTURES, 'qwen3'), outDir, attention: 'flash' as 'fused' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ImportError);
  expect((err as Error).message).toMatch(/attention must be ops or fused, got flash/);
  expect(existsSync(outDir)).toBe(false);
});
