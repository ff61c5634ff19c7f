/**
 * The forked past of a large pass: on the CPU the engine copies each question row's state KV into
 * the pass's past tensors on all of its threads once the fork is large (native/decoder.cc
 * ForkPast), and zeroes only the padding after a shorter state's KV. The answers must be those of
 * each question scored alone, whatever the rows' past lengths and whatever the reused past
 * buffers held from the call before.
 */
import { describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

function tokens(count: number, seed: number): Int32Array {
  return Int32Array.from({ length: count }, (_, i) => 1 + ((i * 7919 + seed * 104729) % 16_000));
}

function groups(seed: number) {
  // Two states of different lengths in one pass: the shorter one's rows carry padding. 24 rows
  // over ~3,000 past tokens of the tiny model (512 bytes of KV per token) fork ~35 MB, above the
  // size the fork is split across threads at.
  return [3000, 2600].map((length, g) => ({
    prefix: tokens(length, seed + g),
    suffixes: Array.from({ length: 12 }, (_, q) => ({ tokens: tokens(1 + (q % 5), seed * 31 + g * 12 + q), labels: Int32Array.of(5, 6, 7) })),
  }));
}

describe('forked past of a large pass', () => {
  it('gives each question its alone answer, with padding, on two threads, after another call', async () => {
    const engine = await Engine.load({ modelDir: await tinyModelDir(), threads: 2, passOverheadTokens: Infinity, prefixCacheBytes: 0 });
    try {
      await engine.score(groups(1)); // leaves other KV in the reused past buffers
      const batch = groups(2);
      const result = await engine.scoreBatch(batch);
      expect(result.counters.suffixPasses).toBe(1);
      for (const [g, group] of batch.entries()) {
        for (const [q, suffix] of group.suffixes.entries()) {
          const alone = (await engine.score([{ prefix: group.prefix, suffixes: [suffix] }]))[0]![0]!.labelLogits;
          const batched = result.groups[g]![q]!.labelLogits;
          expect(batched.length).toBe(alone.length);
          for (let i = 0; i < alone.length; i++) expect(Math.abs(batched[i]! - alone[i]!)).toBeLessThan(1e-4);
        }
      }
    } finally {
      engine.close();
    }
  }, 120_000);
});
