/**
 * Deterministic random score groups for the engine tests (a failure reproduces from its seed), and
 * the label-logit comparison those tests share.
 */
import { expect } from 'vitest';

import type { ScoreGroup } from '../../src/engine/engine.js';
import { PRESETS } from '../../src/models/builder/presets.js';

/** Uniform [0, 1) stream (mulberry32). */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomIds(next: () => number, length: number, vocab = PRESETS.tiny!.vocabSize): Int32Array {
  return Int32Array.from({ length }, () => Math.floor(next() * vocab));
}

/** The largest of each size a random group may have (the smallest: 1 token, 1 suffix, 2 labels). */
export interface GroupSizes {
  prefixTokens: number;
  suffixes: number;
  suffixTokens: number;
  labels: number;
}

/** `count` groups of random tiny-vocabulary ids, sizes drawn up to `max`. */
export function randomGroups(seed: number, count: number, max: GroupSizes): ScoreGroup[] {
  const next = rng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  return Array.from({ length: count }, () => ({
    prefix: randomIds(next, int(1, max.prefixTokens)),
    suffixes: Array.from({ length: int(1, max.suffixes) }, () => ({
      tokens: randomIds(next, int(1, max.suffixTokens)),
      labels: randomIds(next, int(2, max.labels)),
    })),
  }));
}

/**
 * Three calls for one engine, for tests that compare two engines' answers over changing pass
 * shapes: `count` random groups; the first `extend` of them with up to `extraTokens` more state
 * tokens (the old states then come from the prefix cache: passes with a past) beside the others
 * unchanged; and a counter workload of `count - 2` states.
 */
export function callsWithCachedStates(seed: number, count: number, sizes: GroupSizes, more: { extend: number; extraTokens: number }): ScoreGroup[][] {
  const first = randomGroups(seed, count, sizes);
  const extended = first.slice(0, more.extend).map((g, i) => ({
    prefix: Int32Array.from([...g.prefix, ...randomGroups(seed + i + 1, 1, { prefixTokens: more.extraTokens, suffixes: 1, suffixTokens: 1, labels: 2 })[0]!.prefix]),
    suffixes: g.suffixes,
  }));
  return [first, [...extended, ...first.slice(more.extend)], counterWorkload(seed, count - 2)];
}

/**
 * `states` states of 40-60 tokens, each with 6 questions of 3-9 tokens and 2-26 labels: the
 * workload the counter tests size passes with (their rows grow with `states`).
 */
export function counterWorkload(seed: number, states: number): ScoreGroup[] {
  const next = rng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  return Array.from({ length: states }, () => ({
    prefix: randomIds(next, int(40, 60)),
    suffixes: Array.from({ length: 6 }, () => ({ tokens: randomIds(next, int(3, 9)), labels: randomIds(next, int(2, 26)) })),
  }));
}

/** The largest |difference| between two label-logit rows of the same length. */
export function maxLogitDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}
