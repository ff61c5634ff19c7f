/**
 * Shape buckets (the `shapeBuckets` engine option, native/shape_buckets.h), on the CPU provider:
 * every forward pass padded to a fixed shape (padding rows, longer past and new runs, dummy label
 * and position entries) and bound to buffers reused at fixed addresses, as CUDA graphs need.
 * - Padding changes no answer: every option probability within 1e-6 of the exact-shape engine's
 *   (label logits and log-sum-exps within 1e-5: a few float32 ulps of a summation order), on the standard-op and the fused graphs, forked and packed rows, causal states' split passes, stock LM head, and
 *   calls whose states are partly cached (passes with a past).
 * - The padding is real (paddedTokens grows) and the budgets still hold (a tight token budget).
 * - Fixed buffers: once a call's shapes have been seen, the same call again moves no buffer.
 * - CUDA graphs are refused on the CPU with a clear error.
 */
import { afterAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import type { EngineOptions } from '../../src/engine/engine-options.js';
import { callsWithCachedStates, counterWorkload } from '../helpers/random-groups.js';
import { expectSamePaddedAnswers, maxScoreDiff } from '../helpers/score-compare.js';
import { tinyModelDir, type TinyVariant } from '../helpers/tiny-model.js';

const engines: Engine[] = [];
afterAll(() => engines.forEach((e) => e.close()));

async function load(variant: TinyVariant, options: EngineOptions): Promise<Engine> {
  const engine = await Engine.load({ modelDir: await tinyModelDir(variant), ...options });
  engines.push(engine);
  return engine;
}

/** Groups of every size, and a second call that extends some of their states (cached prefixes as past). */
const calls = (seed: number) => callsWithCachedStates(seed, 11, { prefixTokens: 40, suffixes: 5, suffixTokens: 9, labels: 26 }, { extend: 6, extraTokens: 7 });

describe.each<[string, TinyVariant, EngineOptions]>([
  ['standard-op graph, forked rows', {}, {}],
  ['standard-op graph, packed rows', { segmentIds: true }, { packSuffixes: true }],
  ['fused graph, packed rows', { segmentIds: true, attention: 'fused' }, { packSuffixes: true }],
  ['fused graph, forked rows', { attention: 'fused' }, { packSuffixes: false }],
  ['causal states, packed rows (split passes)', { segmentIds: true, attention: 'fused', causalStates: true }, { packSuffixes: true }],
  ['stock LM head (no scoring head)', {}, { gatherLogits: false }],
])('shape buckets, %s', (_name, variant, options) => {
  it('answers as the exact shapes do (probabilities 1e-6, logits 1e-5), padding the passes', async () => {
    const exact = await load(variant, { ...options, threads: 1 });
    const bucketed = await load(variant, { ...options, threads: 1, shapeBuckets: true });
    expect(exact.info.passShapes).toBe('exact');
    expect(bucketed.info.passShapes).toBe('buckets');
    let exactPadding = 0;
    let bucketPadding = 0;
    for (const groups of calls(7)) {
      const a = await exact.scoreBatch(groups);
      const b = await bucketed.scoreBatch(groups);
      expectSamePaddedAnswers(a, b);
      exactPadding += a.counters.paddedTokens;
      bucketPadding += b.counters.paddedTokens;
    }
    expect(bucketPadding).toBeGreaterThan(exactPadding);
  });
});

describe('shape buckets: budgets and fixed buffers', () => {
  it('a pass padded to its bucket still fits the token budget, and answers do not move', async () => {
    const exact = await load({ segmentIds: true }, { packSuffixes: true, threads: 1, tokenBudget: 300 });
    const bucketed = await load({ segmentIds: true }, { packSuffixes: true, threads: 1, tokenBudget: 300, shapeBuckets: true });
    const groups = counterWorkload(3, 12);
    const a = await exact.scoreBatch(groups);
    const b = await bucketed.scoreBatch(groups);
    expect(maxScoreDiff(a.groups, b.groups, 'probabilities')).toBeLessThanOrEqual(1e-6);
    // Padded to their buckets, passes hold fewer real rows: at least as many passes.
    expect(b.counters.forwardPasses).toBeGreaterThanOrEqual(a.counters.forwardPasses);
  });

  it('once its shapes have been run, the same call moves no buffer (fixed addresses)', async () => {
    const engine = await load({ segmentIds: true }, { packSuffixes: true, threads: 1, prefixCacheBytes: 0, shapeBuckets: true });
    const groups = counterWorkload(5, 16);
    const first = await engine.scoreBatch(groups);
    expect(first.counters.passBufferMoves).toBeGreaterThan(0);
    for (let i = 0; i < 2; i++) {
      const again = await engine.scoreBatch(groups);
      expect(again.counters.passBufferMoves).toBe(0);
      expect(maxScoreDiff(first.groups, again.groups, 'logits')).toBe(0);
    }
    // A smaller call fits the buffers the larger one grew.
    expect((await engine.scoreBatch(counterWorkload(6, 4))).counters.passBufferMoves).toBe(0);
    expect(engine.counters().passBufferMoves).toBe(first.counters.passBufferMoves);
  });

  it('refuses CUDA graphs on the CPU provider, naming the option', async () => {
    const modelDir = await tinyModelDir();
    await expect(Engine.load({ modelDir, cudaGraphs: true })).rejects.toMatchObject({ code: 'ERR_INPUT', message: expect.stringMatching(/cudaGraphs needs provider 'cuda'/) });
  });
});
