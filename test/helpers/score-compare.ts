/**
 * Deterministic inputs and comparisons shared by the engine tests that compare two ways of scoring
 * the same groups (packed vs forked rows, CUDA vs CPU, alone vs inside a call).
 */
import { expect } from 'vitest';

import type { Engine } from '../../src/engine/engine.js';

export type Scores = Awaited<ReturnType<Engine['score']>>;
export type BatchResult = Awaited<ReturnType<Engine['scoreBatch']>>;

/** `n` deterministic token ids below `below` (a linear congruential sequence from `seed`). */
export function tokenIds(seed: number, n: number, below: number): number[] {
  let x = seed >>> 0;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x % below;
  });
}

/** The options' probabilities as the service derives them, unrounded: a softmax over the label logits. */
export function optionProbabilities(logits: Float32Array): number[] {
  const max = Math.max(...logits);
  const exps = Array.from(logits, (v) => Math.exp(v - max));
  const sum = exps.reduce((x, y) => x + y, 0);
  return exps.map((e) => e / sum);
}

/**
 * The largest difference between two score sets of the same groups: over every label logit and
 * log-sum-exp ('logits'), or over every option probability ('probabilities').
 */
export function maxScoreDiff(a: Scores, b: Scores, what: 'logits' | 'probabilities'): number {
  let d = 0;
  a.forEach((group, g) =>
    group.forEach((score, s) => {
      const other = b[g]![s]!;
      if (what === 'probabilities') {
        const y = optionProbabilities(other.labelLogits);
        optionProbabilities(score.labelLogits).forEach((p, k) => (d = Math.max(d, Math.abs(p - y[k]!))));
        return;
      }
      score.labelLogits.forEach((v, k) => (d = Math.max(d, Math.abs(v - other.labelLogits[k]!))));
      d = Math.max(d, Math.abs(score.logSumExp - other.logSumExp));
    }),
  );
  return d;
}

/**
 * The same call through two engines that only pad their passes differently: option probabilities
 * within 1e-6, label logits and log-sum-exps within 1e-5 (a few float32 ulps of a summation order),
 * the same tokens from the prefix cache.
 */
export function expectSamePaddedAnswers(a: BatchResult, b: BatchResult): void {
  expect(maxScoreDiff(a.groups, b.groups, 'probabilities')).toBeLessThanOrEqual(1e-6);
  expect(maxScoreDiff(a.groups, b.groups, 'logits')).toBeLessThanOrEqual(1e-5);
  expect(b.cachedTokens).toEqual(a.cachedTokens);
}
