/**
 * The embedded default model the service creates on a fresh machine: written once with the
 * packing graph (so an engine that packs, as on CUDA, scores a state's questions in its own row),
 * and left alone when it is already there.
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { ensureDefaultModel } from '../../src/models/default-model.js';

describe('the embedded default model', () => {
  let scratch: string;
  let dir: string;
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'decide-default-model-'));
    dir = await ensureDefaultModel(path.join(scratch, 'models'));
  }, 120_000);
  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('is built with the packing graph, on which the engine can pack its questions', async () => {
    const decision = JSON.parse(await readFile(path.join(dir, 'decision.json'), 'utf8'));
    expect(decision.builder.features).toEqual({ segmentIds: true });
    expect(decision.model).toMatchObject({ id: 'svc-alpha-2026-10', weights: 'random' });
    const engine = await Engine.load({ modelDir: dir, threads: 1, packSuffixes: true });
    try {
      expect(engine.info.packsSuffixes).toBe(true);
      const [scores] = await engine.score([{ prefix: Int32Array.of(1, 2, 3), suffixes: [{ tokens: Int32Array.of(4), labels: Int32Array.of(5, 6) }, { tokens: Int32Array.of(7, 8), labels: Int32Array.of(9) }] }]);
      expect(scores!.map((s) => s.labelLogits.length)).toEqual([2, 1]);
      // The state and both questions were one row: no copy of the state's KV.
      expect(engine.counters()).toMatchObject({ pastTokensCopied: 0, forwardPasses: 1 });
    } finally {
      engine.close();
    }
  });

  it('is not rebuilt when it is already there', async () => {
    const graph = path.join(dir, 'onnx', 'model.onnx');
    const before = (await stat(graph)).mtimeMs;
    expect(await ensureDefaultModel(path.join(scratch, 'models'))).toBe(dir);
    expect((await stat(graph)).mtimeMs).toBe(before);
  });
});
