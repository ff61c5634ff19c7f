/**
 * Which graph the engine runs when the engine's own kernels are asked for (chooseAttentionGraph,
 * src/engine/attention-graph.ts): where the graph with them cannot be derived (on a CUDA host
 * without NVRTC its check fails; the CPU cannot make that happen, so the deriver here answers as
 * such a host's would), the fused graph without them runs and says why; where neither can be
 * derived, the stored graph runs with the first reason; without a derivation the option is said to
 * have done nothing. CUDA graphs take the fused graph only (cudaGraphsProblem).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { chooseAttentionGraph, cudaGraphsProblem, type DerivedGraphForm, type GraphDeriver } from '../../src/engine/attention-graph.js';
import type { VerifyLoadOptions } from '../../src/engine/lm-head-verify.js';

const modelDir = mkdtempSync(path.join(os.tmpdir(), 'attention-choice-'));
writeFileSync(path.join(modelDir, 'decision.json'), JSON.stringify({ builder: { dtype: 'fp16', features: { segmentIds: true } } }));
afterAll(() => rmSync(modelDir, { recursive: true, force: true }));
const stored = path.join(modelDir, 'onnx', 'model.onnx');
/** Passed through to the deriver, which does not read them here. */
const verify = {} as VerifyLoadOptions;

/** A deriver that derives every form but those `refuses` names, recording what it was asked for. */
function deriver(refuses: (form: DerivedGraphForm) => string | undefined, asked: DerivedGraphForm[]): GraphDeriver {
  return async (_dir, storedGraph, _verify, form) => {
    asked.push(form);
    const reason = refuses(form);
    if (reason !== undefined) return { graphFile: storedGraph, attention: { graph: 'ops', source: 'stored', reason } };
    return { graphFile: `derived-${form.ownKernels ? 'own' : 'plain'}.onnx`, attention: { graph: 'fused', source: 'derived', ...(form.ownKernels ? { ownKernels: true as const } : {}) } };
  };
}

describe('the graph chosen with ownKernels', () => {
  it('is the derived graph with them where it can be made', async () => {
    const asked: DerivedGraphForm[] = [];
    const chosen = await chooseAttentionGraph(modelDir, stored, 'auto', 'cuda', deriver(() => undefined, asked), verify, { controlFlow: true, ownKernels: true });
    expect(chosen).toEqual({ graphFile: 'derived-own.onnx', attention: { graph: 'fused', source: 'derived', ownKernels: true } });
    expect(asked).toEqual([{ controlFlow: true, ownKernels: true }]);
  });

  it('falls back to the fused graph without them, saying why', async () => {
    const asked: DerivedGraphForm[] = [];
    const noNvrtc = (form: DerivedGraphForm) => (form.ownKernels ? 'the fused graph could not be derived: NVRTC was not found' : undefined);
    const chosen = await chooseAttentionGraph(modelDir, stored, 'auto', 'cuda', deriver(noNvrtc, asked), verify, { controlFlow: false, ownKernels: true });
    expect(chosen.graphFile).toBe('derived-plain.onnx');
    expect(chosen.attention).toEqual({ graph: 'fused', source: 'derived', reason: "without the engine's own kernels: the fused graph could not be derived: NVRTC was not found" });
    expect(asked).toEqual([{ controlFlow: false, ownKernels: true }, { controlFlow: false, ownKernels: false }]);
  });

  it('is the stored graph, with the first reason, where no fused graph can be derived', async () => {
    const chosen = await chooseAttentionGraph(modelDir, stored, 'on', 'cpu', deriver((f) => (f.ownKernels ? 'first' : 'second'), []), verify, { controlFlow: true, ownKernels: true });
    expect(chosen).toEqual({ graphFile: stored, attention: { graph: 'ops', source: 'stored', reason: 'first' } });
  });

  it('is the stored graph where nothing is derived, saying the option did nothing', async () => {
    const asked: DerivedGraphForm[] = [];
    const chosen = await chooseAttentionGraph(modelDir, stored, 'auto', 'cpu', deriver(() => undefined, asked), verify, { controlFlow: true, ownKernels: true });
    expect(chosen.graphFile).toBe(stored);
    expect(chosen.attention).toMatchObject({ graph: 'ops', source: 'stored', reason: expect.stringContaining("fusedAttention is 'auto' on cpu") });
    expect(asked).toEqual([]);
    const off = await chooseAttentionGraph(modelDir, stored, 'off', 'cuda', deriver(() => undefined, asked), verify, { controlFlow: true });
    expect(off.attention).toEqual({ graph: 'ops', source: 'stored' });
  });
});

describe('CUDA graphs and the graph chosen', () => {
  it('run the fused graph, stored or derived; the standard-op graph is refused saying why and what to do', () => {
    expect(cudaGraphsProblem({ graph: 'fused', source: 'derived' })).toBeUndefined();
    expect(cudaGraphsProblem({ graph: 'fused', source: 'stored' })).toBeUndefined();
    expect(cudaGraphsProblem({ graph: 'ops', source: 'stored' })).toMatch(
      /^cudaGraphs runs the fused graph only: the standard-op graph appends the KV cache with Concat, .* Load it with graphDeriver \(fusedAttention 'auto' or 'on'\), or make or import the model with --attention fused$/,
    );
    // Where a derivation was asked for and failed, its reason is passed on.
    expect(cudaGraphsProblem({ graph: 'ops', source: 'stored', reason: 'no graph deriver was given to Engine.load' })).toMatch(/--attention fused \(not derived here: no graph deriver was given to Engine\.load\)$/);
  });
});
