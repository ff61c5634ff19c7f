/**
 * The benchmark's check (bench/agreement.ts): what a run is compared with, per dtype and provider,
 * and that a small precision drift passes while a wrong answer does not.
 */
import { describe, expect, it } from 'vitest';

import { agreementPlan, agrees, compareRows } from '../../bench/agreement.js';
import type { Workload } from '../../bench/workloads.js';

/** A workload as compareRows reads it: per state, its questions. */
function workload(questions: Array<Array<{ id: string; type: 'noul' | 'choice'; options: string[] }>>): Workload {
  return {
    items: questions.map((qs) => ({
      normalized: { questions: qs.map((q) => ({ id: q.id, type: q.type, options: q.options, instructions: q.id })) },
    })),
  } as unknown as Workload;
}

const calibration = { temperature: { noul: 1, choice: 1, score: 1 } } as never;
const w = workload([
  [{ id: 'refund', type: 'noul', options: ['no', 'yes'] }, { id: 'topic', type: 'choice', options: ['a', 'b', 'c'] }],
  [{ id: 'refund', type: 'noul', options: ['no', 'yes'] }],
]);
const reference = [Float32Array.of(0.2, 1.1), Float32Array.of(2, -1, 0.5), Float32Array.of(-0.3, 0.4)];

describe('agreementPlan', () => {
  it('fp32 on the CPU: the baseline, logits and probabilities within 1e-4', () => {
    expect(agreementPlan('fp32', 'cpu')).toEqual({ reference: 'baseline', logitTolerance: 1e-4, probTolerance: 1e-4 });
  });
  it('fp16 anywhere and fp32 on CUDA: the fp32 CPU engine, probabilities only', () => {
    expect(agreementPlan('fp16', 'cpu')).toEqual({ reference: 'fp32 CPU engine', probTolerance: 1e-2 });
    expect(agreementPlan('fp16', 'cuda')).toEqual({ reference: 'fp32 CPU engine', probTolerance: 1e-2 });
    expect(agreementPlan('fp32', 'cuda')).toEqual({ reference: 'fp32 CPU engine', probTolerance: 1e-3 });
  });
  it('int8 weights: the fp32 CPU engine on the fp32 twin, probabilities within 8e-2 (the 2e-2 goal is a reported target)', () => {
    expect(agreementPlan('int8', 'cpu')).toEqual({ reference: 'fp32 CPU engine', probTolerance: 8e-2 });
  });
});

describe('compareRows', () => {
  it('fp16-sized drift (logits 6e-3) passes the fp16 plan and fails the fp32 one', () => {
    const drifted = reference.map((r) => r.map((x, k) => x + (k % 2 === 0 ? 6e-3 : -6e-3)));
    const a = compareRows(w, drifted, reference, calibration);
    expect(a.rows).toBe(3);
    expect(a.maxAbsLogitDiff).toBeCloseTo(6e-3, 6);
    expect(a.maxAbsProbDiff).toBeGreaterThan(1e-4);
    expect(a.maxAbsProbDiff).toBeLessThan(1e-2);
    expect(agrees(a, agreementPlan('fp16', 'cuda'))).toBe(true);
    expect(agrees(a, agreementPlan('fp32', 'cpu'))).toBe(false);
    expect(a.topAgreeing).toBe(3);
  });

  it('a wrong row (two rows swapped) fails every plan, naming where', () => {
    const swapped = [reference[0]!, reference[1]!, Float32Array.of(0.4, -0.3)];
    const a = compareRows(w, swapped, reference, calibration);
    expect(a.maxAbsProbDiff).toBeGreaterThan(0.1);
    expect(a.worst).toMatch(/^state 1, question 'refund', option 0/);
    for (const plan of [agreementPlan('fp32', 'cpu'), agreementPlan('fp16', 'cuda'), agreementPlan('fp32', 'cuda'), agreementPlan('int8', 'cpu')]) {
      expect(agrees(a, plan)).toBe(false);
    }
    // The swapped row's most probable option flips; the other two rows keep theirs.
    expect(a.topAgreeing).toBe(2);
  });

  it('a NaN anywhere is infinitely far', () => {
    const a = compareRows(w, [Float32Array.of(NaN, 1.1), reference[1]!, reference[2]!], reference, calibration);
    expect(a.maxAbsLogitDiff).toBe(Infinity);
    expect(a.maxAbsProbDiff).toBe(Infinity);
    expect(agrees(a, agreementPlan('fp16', 'cpu'))).toBe(false);
  });
});
