/**
 * The graph `decide bench --size gpu` builds when --attention is not given: on CUDA the fused graph
 * with causal states, except with CUDA graphs, which ONNX Runtime refuses to capture over the If
 * that causal states put around the layers (an H100 run of `decide gpu-report` stopped its
 * CUDA-graphs step on that refusal); on the CPU the standard-op graph.
 */
import { describe, expect, it } from 'vitest';

import { gpuScaleGraph } from '../../bench/gpu-scale.js';

describe('the GPU-size run\'s default graph', () => {
  it('cuda: causal states; with CUDA graphs the fused graph without them (no If to capture)', () => {
    expect(gpuScaleGraph('cuda', false)).toBe('causal');
    expect(gpuScaleGraph('cuda', true)).toBe('fused');
  });

  it('cpu: the standard-op graph', () => {
    expect(gpuScaleGraph('cpu', false)).toBe('ops');
  });
});
