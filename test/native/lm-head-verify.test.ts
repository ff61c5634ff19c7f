/**
 * The LM-head rewrite is verified through the native engine (no onnxruntime-node at run time):
 * a fresh rewrite passes and is used, and a rewrite that computes something else is rejected.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { resolveOrtLibrary } from '../../src/engine/native.js';
import { makeModel } from '../../src/models/builder/make-model.js';
import { findGraphFile, readModelConfig } from '../../src/engine/model-dir.js';
import { prepareScoringGraph } from '../../src/engine/scoring-graph.js';
import { verifyRewrite } from '../../src/engine/lm-head-verify.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

describe('LM-head rewrite verification', () => {
  let tmp: string;
  let modelDir: string;
  let otherDir: string;

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'lm-head-verify-'));
    modelDir = path.join(tmp, 'tiny');
    await cp(await tinyModelDir(), modelDir, { recursive: true });
    // The shared model may carry a cached rewrite already: start from the stock graph alone.
    await rm(findGraphFile(modelDir).replace(/\.onnx$/, '.decide-gather.onnx'), { force: true });
    otherDir = path.join(tmp, 'other');
    await makeModel({ preset: 'tiny', outDir: otherDir, seed: 2 });
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  const loadOptions = (dir: string) => {
    const config = readModelConfig(dir);
    return {
      ortLibrary: resolveOrtLibrary(),
      provider: 'cpu' as const,
      numKvHeads: config.numKvHeads,
      headDim: config.headDim,
      vocabSize: config.vocabSize,
      maxContext: config.maxPositionEmbeddings,
    };
  };

  it('a fresh rewrite is verified, written beside the graph and loaded', async () => {
    const stock = findGraphFile(modelDir);
    expect(existsSync(stock.replace(/\.onnx$/, '.decide-gather.onnx'))).toBe(false);
    const engine = await Engine.load({ modelDir, threads: 1 });
    try {
      expect(engine.info.graphFile).toMatch(/\.decide-gather\.onnx$/);
      expect(engine.info.hasLogitsIndex).toBe(true);
    } finally {
      engine.close();
    }
  });

  it("a rewrite that computes other logits (another model's graph) is rejected", async () => {
    const stock = findGraphFile(modelDir);
    const foreign = await prepareScoringGraph(findGraphFile(otherDir), loadOptions(otherDir));
    expect(foreign).toMatch(/\.decide-gather\.onnx$/);
    await expect(verifyRewrite(stock, foreign, loadOptions(modelDir))).rejects.toThrow(/rewrite mismatch/);
  });
});
