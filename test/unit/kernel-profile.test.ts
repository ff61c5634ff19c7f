/**
 * bench/kernel-profile.ts: device time by kernel and by kernel family from Nsight Compute's
 * per-kernel CSV summary. The fixture is an excerpt of a real one (an H200, the GPU-size tickets
 * call, 2026-11-27), with ncu's own lines and the program's output around the table; beside it
 * the GPU-size step's report of the same session.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

import { formatGpuReport, kernelShareLine, newGpuReport } from '../../bench/gpu-report.js';
import type { GpuScaleReport } from '../../bench/gpu-scale.js';
import { kernelFamily, parseNcuSummary, summarizeKernels } from '../../bench/kernel-profile.js';

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures');
const fixture = readFileSync(path.join(fixtures, 'ncu-per-kernel-tickets.csv'), 'utf8');
const gpuScale = JSON.parse(readFileSync(path.join(fixtures, 'gpu-scale-h200-tickets.json'), 'utf8')) as GpuScaleReport;

describe('Nsight Compute per-kernel summary', () => {
  it('reads each kernel once, summing its launch shapes, in microseconds, skipping the lines around the table', () => {
    const kernels = parseNcuSummary(fixture);
    const byName = (part: string) => kernels.filter((k) => k.name.includes(part));
    expect(byName('attention_kernel_batched_impl')).toEqual([{ name: expect.any(String), calls: 56, micros: expect.closeTo((56 * 1_726_589.14) / 1000, 3) }]);
    // Two launch shapes (q and k heads) of one RotaryEmbedding kernel.
    expect(byName('RotaryEmbeddingBSNH')).toEqual([{ name: expect.any(String), calls: 112, micros: expect.closeTo((56 * 239_344.57 + 56 * 474_904) / 1000, 3) }]);
    expect(kernels.some((k) => k.name.includes('PROF') || k.name.includes('profiling'))).toBe(false);
  });

  it('sums kernels by what they are for, slowest family first, shares adding to one', () => {
    const profile = summarizeKernels(fixture, 3);
    expect(profile.families.map((f) => f.family).slice(0, 3)).toEqual(['attention', 'GEMM (MatMul)', 'RotaryEmbedding']);
    expect(profile.families.reduce((n, f) => n + f.share, 0)).toBeCloseTo(1, 9);
    expect(profile.totalMicros).toBeCloseTo(profile.families.reduce((n, f) => n + f.micros, 0), 6);
    expect(profile.top).toHaveLength(3);
    expect(profile.top[0]!.name).toContain('attention_kernel_batched_impl');
    expect(profile.top.map((k) => k.micros)).toEqual([...profile.top.map((k) => k.micros)].sort((a, b) => b - a));
  });

  it('names the families of cuBLAS, CUTLASS, cuDNN and ONNX Runtime kernels', () => {
    expect(kernelFamily('nvjet_sm90_hsh_128x192_64x5_2x1_v_bz_coopB_NNN')).toBe('GEMM (MatMul)');
    expect(kernelFamily('void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)')).toBe('GEMM (MatMul)');
    expect(kernelFamily('void reduce_tensor_kernel_free<float, 8, 16, 1, 1, 3, 1>(cudnnReduceTensorStruct)')).toBe('reductions');
    expect(kernelFamily('void onnxruntime::_SplitKernel<short>(onnxruntime::DivMod<int>)')).toBe('Split');
    expect(kernelFamily('void contrib::<unnamed>::UnfusedSoftmaxKernel<float, 256>(int)')).toBe('attention');
    expect(kernelFamily('void onnxruntime::softmax_block_forward<4, float, float, float, onnxruntime::LogSoftMaxForwardEpilogue>(T4 *)')).toBe('softmax');
    expect(kernelFamily('void onnxruntime::cuApplyLayerNorm<__half, float, __half, 1>(T3 *)')).toBe('norms');
    expect(kernelFamily('some_new_kernel')).toBe('other');
  });

  it('reads nothing from a log without the table (ncu absent or the program failed)', () => {
    expect(parseNcuSummary('==ERROR== the application returned an error code (1)\n')).toEqual([]);
    expect(summarizeKernels('').families).toEqual([]);
  });
});

it("decide gpu-report's report.md gives the kernel families and the slowest kernels", () => {
  const report = newGpuReport({
    startedAt: '2026-11-27T22:45:00.000Z',
    provider: 'cuda',
    preset: 'qwen3-0.6b',
    host: { hostname: 'gpu-host', cpus: 16, memoryBytes: 128 * 2 ** 30, gpus: 'GPU 0: NVIDIA H200', node: 'v20.19.0' },
    git: null,
  });
  report.kernels = summarizeKernels(fixture);
  const md = formatGpuReport(report);
  expect(md).toContain('## Device time by kernel of the GPU-size tickets call (Nsight Compute');
  // 56 launches of 1,726,589.14 ns each.
  expect(md).toMatch(/^\| attention \| 56 \| 96\.69 \| \d+\.\d% \|$/m);
  expect(md).toMatch(/^\| void attention_kernel_batched_impl<AttentionKernel<cutlass::half_t/m);
});

it("puts a call's kernel time (half the profiled run's) beside the timed packed tickets call", () => {
  const kernels = summarizeKernels(fixture);
  const perCall = kernels.totalMicros / 2 / 1000;
  const wall = gpuScale.workloads.find((w) => w.workload === 'tickets')!.layouts.find((l) => l.layout === 'packed')!.seconds * 1000;
  expect(kernelShareLine(kernels, gpuScale)).toBe(
    `Kernel time per call: ${perCall.toFixed(1)} ms; the GPU-size step's packed tickets call took ${wall.toFixed(1)} ms, so kernels fill ${((100 * perCall) / wall).toFixed(1)}% of it.`,
  );
  expect(kernelShareLine(kernels, null)).toBe(`Kernel time per call: ${perCall.toFixed(1)} ms (no timed tickets call to compare with).`);
});
