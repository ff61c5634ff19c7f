/**
 * The engine's JS-thread methods never wait for a running score call (native/scorer.h): counters()
 * and clearPrefixCache() answer while a call holds the compute lock, and a clear asked for during a
 * call empties the cache when that call ends, its own prefix included.
 *
 * Proven by ordering: `callsInProgress` is 1 only while a call holds the compute lock, so a
 * counters() that reports it returned during the call. A long call on the tiny model (a
 * 3,000-token prefix, 64 questions: about a second) leaves room to see it.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';

import { Engine, type ScoreGroup } from '../../src/engine/engine.js';
import { PRESETS } from '../../src/models/builder/presets.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

let engine: Engine;

beforeAll(async () => {
  engine = await Engine.load({ modelDir: await tinyModelDir() });
});
afterAll(() => engine?.close());

function longGroup(seed: number): ScoreGroup {
  const vocab = PRESETS.tiny!.vocabSize;
  const ids = (length: number, salt: number) => Int32Array.from({ length }, (_, i) => (i * 7919 + salt * 104_729 + seed) % vocab);
  return {
    prefix: ids(3000, 0),
    suffixes: Array.from({ length: 64 }, (_, q) => ({ tokens: ids(20, q + 1), labels: Int32Array.from([1, 2]) })),
  };
}

/** Yields to the event loop until `condition` holds; fails once `settled` says the call ended first. */
async function untilDuringCall(condition: () => boolean, settled: () => boolean): Promise<void> {
  while (!condition()) {
    if (settled()) throw new Error('the call ended before the condition was seen');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

it('counters() and clearPrefixCache() answer while a call computes; the clear lands when the call ends', async () => {
  engine.clearPrefixCache();
  const before = engine.counters();
  expect(before).toMatchObject({ callsInProgress: 0, prefixCacheEntries: 0, prefixCacheBytes: 0 });

  let settled = false;
  const group = longGroup(1);
  const call = engine.scoreBatch([group]).finally(() => {
    settled = true;
  });
  await untilDuringCall(() => engine.counters().callsInProgress === 1, () => settled);

  // Inside the call: the totals do not count it yet, and a clear does not wait for it.
  const during = engine.counters();
  expect(during.callsInProgress).toBe(1);
  expect(during.calls).toBe(before.calls);
  engine.clearPrefixCache();
  expect(engine.counters().callsInProgress).toBe(1);
  expect(settled).toBe(false);

  const result = await call;
  expect(result.cachedTokens[0]).toBe(0);
  // The clear asked for during the call dropped the prefix that call computed.
  expect(engine.counters()).toMatchObject({ callsInProgress: 0, calls: before.calls + 1, prefixCacheEntries: 0, prefixCacheBytes: 0 });
  const again = await engine.scoreBatch([{ prefix: group.prefix, suffixes: group.suffixes.slice(0, 1) }]);
  expect(again.cachedTokens[0]).toBe(0);
  expect(engine.counters().prefixCacheEntries).toBe(1);
});

it('clearPrefixCache() with no call running empties the cache at once', async () => {
  const group = longGroup(2);
  await engine.scoreBatch([{ prefix: group.prefix.subarray(0, 100), suffixes: group.suffixes.slice(0, 1) }]);
  expect(engine.counters().prefixCacheEntries).toBeGreaterThan(0);
  engine.clearPrefixCache();
  expect(engine.counters()).toMatchObject({ prefixCacheEntries: 0, prefixCacheBytes: 0, callsInProgress: 0 });
});
