/**
 * CUDA graphs (the `cudaGraphs` engine option; needs a GPU host, as cuda-engine.test.ts; skipped
 * elsewhere): each fixed pass shape is captured once and replayed after. The same answers as the
 * CUDA engine without graphs, on the call that captures and on the calls that replay; replays move
 * no buffer (a moved buffer would leave a captured graph writing to freed memory); a call of new
 * shapes beside them still answers right. The standard-op graph is refused with them. A CUDA engine that derives the fused graph derives the
 * form without causal states' If for it. The CPU half of this (padding, fixed buffers) is
 * test/native/shape-buckets.test.ts.
 */
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { deriveFusedGraph, fusedPaths } from '../../src/models/fused-graph.js';
import { counterWorkload as workload } from '../helpers/random-groups.js';
import { maxScoreDiff } from '../helpers/score-compare.js';
import { tinyModelDir, type TinyVariant } from '../helpers/tiny-model.js';
import { cudaAvailable as hasCuda } from '../helpers/cuda-available.js';

const packedDir = await tinyModelDir({ segmentIds: true });
const cudaAvailable = await hasCuda(packedDir);

const engines: Engine[] = [];
afterAll(() => engines.forEach((e) => e.close()));

describe.skipIf(!cudaAvailable)('CUDA graphs on the standard-op graph', () => {
  it('are refused at load, saying to use the fused graph (its KV Concat copies from host memory in every run)', async () => {
    const modelDir = await tinyModelDir({ segmentIds: true });
    await expect(Engine.load({ modelDir, provider: 'cuda', prefixCacheBytes: 0, cudaGraphs: true })).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: expect.stringMatching(/^cudaGraphs runs the fused graph only/),
    });
  });
});

describe.skipIf(!cudaAvailable).each<[string, TinyVariant]>([['fused graph', { segmentIds: true, attention: 'fused' }]])('CUDA graphs, %s', (_name, variant) => {
  it('captured and replayed calls answer as the engine without graphs, and replays move no buffer', async () => {
    const modelDir = await tinyModelDir(variant);
    const load = async (cudaGraphs: boolean) => {
      const engine = await Engine.load({ modelDir, provider: 'cuda', prefixCacheBytes: 0, cudaGraphs });
      engines.push(engine);
      return engine;
    };
    const plain = await load(false);
    const graphs = await load(true);
    expect(graphs.info.passShapes).toBe('cuda-graphs');
    const groups = workload(11, 24);
    const reference = await plain.score(groups);
    // 1: a regular run per shape; 2: captured; 3 and 4: replayed.
    for (let call = 0; call < 4; call++) {
      const { groups: scores, counters } = await graphs.scoreBatch(groups);
      expect(maxScoreDiff(reference, scores, 'logits'), `call ${call + 1}`).toBeLessThan(1e-4);
      if (call > 0) expect(counters.passBufferMoves).toBe(0);
    }
    const other = workload(12, 5);
    expect(maxScoreDiff(await plain.score(other), await graphs.score(other), 'logits')).toBeLessThan(1e-4);
    expect(maxScoreDiff(reference, await graphs.score(groups), 'logits')).toBeLessThan(1e-4);
  });
});

describe.skipIf(!cudaAvailable)('CUDA graphs with the derived fused graph', () => {
  it('derive the form without control flow (causal states have an If, which ONNX Runtime refuses to capture)', async () => {
    const modelDir = await tinyModelDir({ segmentIds: true });
    const graphs = await Engine.load({ modelDir, provider: 'cuda', prefixCacheBytes: 0, cudaGraphs: true, graphDeriver: deriveFusedGraph });
    engines.push(graphs);
    expect(graphs.info.attention).toEqual({ graph: 'fused', source: 'derived' });
    expect(graphs.info.graphFile.startsWith(fusedPaths(path.join(modelDir, 'onnx', 'model.onnx'), { controlFlow: false }).dir)).toBe(true);
    const plain = await Engine.load({ modelDir, provider: 'cuda', prefixCacheBytes: 0, graphDeriver: deriveFusedGraph });
    engines.push(plain);
    const groups = workload(13, 8);
    const reference = await plain.score(groups);
    for (let call = 0; call < 3; call++) expect(maxScoreDiff(reference, await graphs.score(groups), 'logits')).toBeLessThan(1e-4);
  });
});
