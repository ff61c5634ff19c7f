/**
 * bench/attention-kernels.ts: the attention kernel ONNX Runtime's CUDA provider picked, counted from
 * its verbose log lines (the format of onnxruntime/core/providers/cuda/llm/attention.cc), and the
 * log reduced to those lines and the step's own output.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { countAttentionKernels, summarizeAttentionLog } from '../../bench/attention-kernels.js';

const LOG = [
  'bench: GPU-size workloads, tickets',
  '2026-11-27 10:00:00.1 [V:onnxruntime:decide, attention.cc:1451 ComputeInternal] ONNX Attention: using Memory Efficient Attention (batch=64, q_seq=144, total_seq=536, past=yes, mask=yes)',
  '2026-11-27 10:00:00.2 [V:onnxruntime:decide, attention.cc:1482 ComputeInternal] Attention: using unified unfused path (is_gqa=1, head_size=128, softcap=0)',
  '2026-11-27 10:00:00.3 [V:onnxruntime:decide, attention.cc:1451 ComputeInternal] ONNX Attention: using Memory Efficient Attention (batch=16, q_seq=1888, total_seq=1888, past=no, mask=yes)',
  '2026-11-27 10:00:00.4 [V:onnxruntime:decide, attention.cc:1400 ComputeInternal] ONNX Attention: using Flash Attention (batch=1, q_seq=1, total_seq=16, past=yes)',
  '2026-11-27 10:00:00.5 [I:onnxruntime:decide, bfc_arena.cc:281 Reserve] Reserving memory in BFCArena for Cuda size: 8',
  '2026-11-27 10:00:00.6 [V:onnxruntime:, graph_transformer_mgr.cc:31 ApplyTransformers] No graph transformers registered for level 0.',
  'bench: done',
].join('\n');

const scratch = mkdtempSync(path.join(os.tmpdir(), 'attention-kernels-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('attention kernel counts', () => {
  it('counts each kernel choice, the unfused one without the "ONNX " prefix included', () => {
    expect(countAttentionKernels(LOG)).toEqual({ 'Memory Efficient Attention': 2, 'unified unfused path': 1, 'Flash Attention': 1 });
    expect(countAttentionKernels('no attention here\n')).toEqual({});
  });

  it("keeps in the step's log only its own lines and the dispatch lines", () => {
    const file = path.join(scratch, 'attention-kernels.log');
    writeFileSync(file, LOG);
    expect(summarizeAttentionLog(file)).toEqual({ 'Memory Efficient Attention': 2, 'unified unfused path': 1, 'Flash Attention': 1 });
    const kept = readFileSync(file, 'utf8').split('\n');
    expect(kept).toHaveLength(6);
    expect(kept[0]).toBe('bench: GPU-size workloads, tickets');
    expect(kept.at(-1)).toBe('bench: done');
    expect(kept.some((l) => l.includes('BFCArena') || l.includes('ApplyTransformers'))).toBe(false);
  });
});
