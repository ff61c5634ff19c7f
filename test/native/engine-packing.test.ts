/**
 * Packed suffix rows (issue 8, "no per-question copy of a state's KV"), on the CPU in fp32: with a
 * graph that takes segment ids the engine scores a state's questions in one row after one copy of
 * the state's KV. The properties shared with the forked layout (reuse == fresh, alone == batched,
 * prefix cache) run on both graphs in engine.test.ts; this file checks what packing itself
 * promises: the same answers as today's forked rows, one copy of the state's KV per row instead of
 * one per question, and rows that split when a state's questions outgrow it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, type ScoreGroup } from '../../src/engine/engine.js';
import { PRESETS } from '../../src/models/builder/presets.js';
import { lastPositionLogits } from '../helpers/last-position-reference.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

/** Deterministic ids, so a failure is reproducible. */
function ids(seed: number, n: number): Int32Array {
  let x = seed >>> 0;
  return Int32Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x % PRESETS.tiny!.vocabSize;
  });
}

function group(seed: number, prefixLength: number, suffixLengths: number[]): ScoreGroup {
  return {
    prefix: ids(seed, prefixLength),
    suffixes: suffixLengths.map((n, k) => ({ tokens: ids(seed * 100 + k, n), labels: ids(seed * 1000 + k, 5) })),
  };
}

type Scores = Awaited<ReturnType<Engine['score']>>;

function maxDiff(a: Scores, b: Scores): number {
  let d = 0;
  a.forEach((g, i) =>
    g.forEach((score, s) => {
      const other = b[i]![s]!;
      score.labelLogits.forEach((v, k) => (d = Math.max(d, Math.abs(v - other.labelLogits[k]!))));
      d = Math.max(d, Math.abs(score.logSumExp - other.logSumExp));
    }),
  );
  return d;
}

function labelProbabilities(logits: Float32Array): number[] {
  const max = Math.max(...logits);
  const exps = Array.from(logits, (v) => Math.exp(v - max));
  const sum = exps.reduce((x, y) => x + y, 0);
  return exps.map((e) => e / sum);
}

describe('packed suffix rows', () => {
  let referenceDir: string;
  let packed: Engine;
  let forked: Engine;

  beforeAll(async () => {
    referenceDir = await tinyModelDir();
    const packedDir = await tinyModelDir({ segmentIds: true });
    packed = await Engine.load({ modelDir: packedDir, prefixCacheBytes: 0 });
    // The same graph and weights, packing switched off: today's one row per question.
    forked = await Engine.load({ modelDir: packedDir, prefixCacheBytes: 0, packSuffixes: false });
  });
  afterAll(() => {
    packed?.close();
    forked?.close();
  });

  it('packing is on for the segment-id graph and can be switched off', () => {
    expect(packed.info.packsSuffixes).toBe(true);
    expect(forked.info.packsSuffixes).toBe(false);
  });

  it("gives today's forked answers (1e-5) and copies the state's KV once per state instead of once per question", async () => {
    const groups = [group(1, 120, [9, 14, 3, 20]), group(2, 45, [7]), group(3, 300, [11, 11, 25, 6, 18, 2, 9, 13])];
    const copied = (engine: Engine, run: () => Promise<Scores>) => {
      const before = engine.counters().pastTokensCopied;
      return run().then((scores) => ({ scores, copied: engine.counters().pastTokensCopied - before }));
    };
    const a = await copied(packed, () => packed.score(groups));
    const b = await copied(forked, () => forked.score(groups));
    expect(maxDiff(a.scores, b.scores)).toBeLessThan(1e-5);
    // No prefix cache: the prefix stage computes from an empty past, so every copy is the suffix stage's.
    const states = groups.reduce((n, g) => n + g.prefix.length, 0);
    const perQuestion = groups.reduce((n, g) => n + g.prefix.length * g.suffixes.length, 0);
    expect(a.copied).toBe(states);
    expect(b.copied).toBe(perQuestion);
  });

  it('a question gets the same answer alone, beside other questions of its state, and in another order (logits 1e-5, probabilities 1e-6)', async () => {
    const full = group(4, 80, [12, 30, 5, 17]);
    const [together] = await packed.score([full]);
    const reversed = (await packed.score([{ prefix: full.prefix, suffixes: [...full.suffixes].reverse() }]))[0]!.reverse();
    for (let s = 0; s < full.suffixes.length; s++) {
      const [alone] = await packed.score([{ prefix: full.prefix, suffixes: [full.suffixes[s]!] }]);
      expect(maxDiff([alone!], [[together![s]!]]), `question ${s} alone`).toBeLessThan(1e-5);
      // What the service returns: the options' probabilities (a softmax over the label logits).
      const a = labelProbabilities(alone![0]!.labelLogits);
      const b = labelProbabilities(together![s]!.labelLogits);
      a.forEach((p, k) => expect(Math.abs(p - b[k]!), `question ${s} option ${k}`).toBeLessThan(1e-6));
      expect(maxDiff([reversed.slice(s, s + 1)], [[together![s]!]]), `question ${s} reordered`).toBeLessThan(1e-5);
    }
  });

  it("a state whose questions outgrow one row splits them over several rows, each with the state's KV once", async () => {
    // A 10-token state packs at most 64 question tokens per row: 40 + 40 + 40 needs three rows.
    const long = group(5, 10, [40, 40, 40]);
    const before = packed.counters();
    const [scores] = await packed.score([long]);
    const after = packed.counters();
    expect(after.pastTokensCopied - before.pastTokensCopied).toBe(3 * long.prefix.length);
    // Each answer is its fresh full-sequence row's (the stock graph, same weights).
    for (let s = 0; s < long.suffixes.length; s++) {
      const suffix = long.suffixes[s]!;
      const reference = await lastPositionLogits(referenceDir, Int32Array.from([...long.prefix, ...suffix.tokens]));
      suffix.labels.forEach((label, k) => expect(Math.abs(scores![s]!.labelLogits[k]! - reference[label]!)).toBeLessThan(1e-4));
    }
  });

  it('short questions of a short state still share a row (at least 64 question tokens per row)', async () => {
    const short = group(6, 5, [10, 10, 10, 10, 10, 10]);
    const before = packed.counters();
    await packed.score([short]);
    const after = packed.counters();
    expect(after.pastTokensCopied - before.pastTokensCopied).toBe(short.prefix.length);
    expect(after.suffixTokens - before.suffixTokens).toBe(60);
  });
});
