/**
 * Chunked prefill: a long state is computed in chunks, each pass after the KV of the chunks before
 * it (native/scorer.cc PrefillChunk), so the causally hidden half of its attention scores is mostly
 * not computed. The answers must be those of the unchunked prefill, whether the state starts from
 * nothing or from a cached part, and beside short states in the same call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, type ScoreGroup } from '../../src/engine/engine.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

function tokens(count: number, seed: number): Int32Array {
  return Int32Array.from({ length: count }, (_, i) => 1 + ((i * 7919 + seed * 104729) % 16_000));
}

function group(prefix: Int32Array, seed: number, questions = 3): ScoreGroup {
  return {
    prefix,
    suffixes: Array.from({ length: questions }, (_, q) => ({ tokens: tokens(2 + q, seed * 17 + q), labels: Int32Array.of(5, 6, 7) })),
  };
}

function maxDiff(a: { labelLogits: Float32Array }[][], b: { labelLogits: Float32Array }[][]): number {
  let max = 0;
  a.forEach((g, i) => g.forEach((s, j) => s.labelLogits.forEach((x, k) => (max = Math.max(max, Math.abs(x - b[i]![j]!.labelLogits[k]!))))));
  return max;
}

describe('chunked prefill of long states', () => {
  let chunked: Engine;
  let unchunked: Engine;
  beforeAll(async () => {
    const modelDir = await tinyModelDir();
    chunked = await Engine.load({ modelDir, threads: 2 });
    // An infinite pass overhead asks for the fewest passes: no state is chunked (the budgets may
    // still put the long state in a pass of its own).
    unchunked = await Engine.load({ modelDir, threads: 2, passOverheadTokens: Infinity, prefixCacheBytes: 0 });
  }, 120_000);
  afterAll(() => {
    chunked?.close();
    unchunked?.close();
  });

  it('a long state beside short ones: several prefill passes, the unchunked answers', async () => {
    const groups = [group(tokens(3000, 1), 1), group(tokens(40, 2), 2), group(tokens(700, 3), 3)];
    chunked.clearPrefixCache();
    const before = chunked.counters();
    const a = await chunked.score(groups);
    const after = chunked.counters();
    const b = await unchunked.score(groups);
    expect(after.prefixPasses - before.prefixPasses).toBeGreaterThan(unchunked.counters().prefixPasses);
    // Chunking computes the same tokens: only the passes differ.
    expect(after.prefixTokensComputed - before.prefixTokensComputed).toBe(3740);
    expect(maxDiff(a, b)).toBeLessThan(1e-4);
  });

  it('a long state whose first part is cached is chunked after that part, with the same answers', async () => {
    const state = tokens(3500, 4);
    chunked.clearPrefixCache();
    await chunked.score([group(state.slice(0, 900), 5)]);
    const before = chunked.counters();
    const a = await chunked.score([group(state, 6, 5)]);
    const after = chunked.counters();
    expect(after.cachedTokens - before.cachedTokens).toBe(900);
    expect(after.prefixPasses - before.prefixPasses).toBeGreaterThan(1);
    const b = await unchunked.score([group(state, 6, 5)]);
    expect(maxDiff(a, b)).toBeLessThan(1e-4);
  });
});
