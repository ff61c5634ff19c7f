/**
 * The prefix cache holds what it counts (native/kv/prefix_cache.h): a state cached straight from
 * the forward pass that computed it keeps that whole pass alive, so the pass is what is counted;
 * a pass larger than the whole cache is not held, and the states the cache would keep of it (the
 * last of the pass, as many as fit) are copied out. Either way the bound holds, later calls still
 * find those states, and the answers do not change.
 */
import { afterAll, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { randomGroups } from '../helpers/random-groups.js';
import { maxScoreDiff, type BatchResult } from '../helpers/score-compare.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

const engines: Engine[] = [];
afterAll(() => engines.forEach((e) => e.close()));

async function load(prefixCacheBytes: number): Promise<Engine> {
  // One prefill pass for all the states (no chunks, no cut for padding), so that they are views of one pass.
  const engine = await Engine.load({ modelDir: await tinyModelDir(), threads: 1, prefixCacheBytes, prefillChunks: false, passOverheadTokens: Infinity });
  engines.push(engine);
  return engine;
}

// Eight states of up to 40 tokens, each with two short questions.
const groups = randomGroups(31, 8, { prefixTokens: 40, suffixes: 2, suffixTokens: 3, labels: 3 });
const stateTokens = groups.reduce((n, g) => n + g.prefix.length, 0);

/** The same answers, whether a state was computed or came from the cache. */
function expectSameAnswers(a: BatchResult, b: BatchResult): void {
  expect(maxScoreDiff(a.groups, b.groups, 'probabilities')).toBeLessThanOrEqual(1e-6);
  expect(maxScoreDiff(a.groups, b.groups, 'logits')).toBeLessThanOrEqual(1e-5);
}

it('a pass that fits is counted whole while any of its states is cached', async () => {
  const probe = await load(0);
  const perToken = probe.info.kvBytesPerToken;
  const roomy = await load(1 << 30);
  const first = await roomy.scoreBatch(groups);
  expect(first.counters.prefixPasses).toBe(1);
  const { prefixCacheBytes, prefixCacheEntries } = roomy.counters();
  expect(prefixCacheEntries).toBe(8);
  // At least every state's tokens; the pass's padding too, never less.
  expect(prefixCacheBytes).toBeGreaterThanOrEqual(stateTokens * perToken);
  const again = await roomy.scoreBatch(groups);
  expect(again.counters.prefixTokensComputed).toBe(0);
  expectSameAnswers(first, again);
});

it('a pass larger than the cache: the last states that fit are copied out, found again, answers unchanged', async () => {
  const probe = await load(0);
  const perToken = probe.info.kvBytesPerToken;
  // Room for three states of up to 40 tokens, not for the pass of eight.
  const bound = 3 * 40 * perToken + perToken;
  const small = await load(bound);
  const reference = await probe.scoreBatch(groups);
  const first = await small.scoreBatch(groups);
  expect(first.counters.prefixPasses).toBe(1);
  expectSameAnswers(reference, first);
  const { prefixCacheBytes, prefixCacheEntries } = small.counters();
  expect(prefixCacheBytes).toBeLessThanOrEqual(bound);
  expect(prefixCacheEntries).toBeGreaterThanOrEqual(3);
  expect(prefixCacheEntries).toBeLessThan(8);
  // The same call again: the states kept come from the cache, the others are computed.
  const again = await small.scoreBatch(groups);
  expect(again.counters.cachedTokens).toBeGreaterThan(0);
  expect(again.counters.prefixTokensComputed).toBeLessThan(first.counters.prefixTokensComputed);
  expectSameAnswers(reference, again);
  expect(small.counters().prefixCacheBytes).toBeLessThanOrEqual(bound);
});
