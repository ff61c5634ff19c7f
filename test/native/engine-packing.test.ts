/**
 * Packed question rows (issue 8, "no per-question copy of a state's KV"), on the CPU in fp32: with
 * a graph that takes segment ids the engine scores a state's questions in one row. A state being
 * computed takes its first row of questions into its own prefill row (no copy of its KV at all);
 * a cached state's rows, and the further rows of a state with many questions, each get one copy.
 * The properties shared with the forked layout (reuse == fresh, alone == batched, prefix cache)
 * run on every graph in engine.test.ts; this file checks what packing itself promises: the same
 * answers as today's forked rows on every path, the copies it saves, and rows that split when a
 * state's questions outgrow it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, type ScoreGroup } from '../../src/engine/engine.js';
import { PRESETS } from '../../src/models/builder/presets.js';
import { lastPositionLogits } from '../helpers/last-position-reference.js';
import { maxScoreDiff, optionProbabilities, tokenIds, type Scores } from '../helpers/score-compare.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

/** Deterministic ids, so a failure is reproducible. */
const ids = (seed: number, n: number) => Int32Array.from(tokenIds(seed, n, PRESETS.tiny!.vocabSize));

function group(seed: number, prefixLength: number, suffixLengths: number[]): ScoreGroup {
  return {
    prefix: ids(seed, prefixLength),
    suffixes: suffixLengths.map((n, k) => ({ tokens: ids(seed * 100 + k, n), labels: ids(seed * 1000 + k, 5) })),
  };
}

const maxDiff = (a: Scores, b: Scores) => maxScoreDiff(a, b, 'logits');

describe('packed suffix rows', () => {
  let referenceDir: string;
  let packed: Engine;
  let cached: Engine;
  let forked: Engine;

  beforeAll(async () => {
    referenceDir = await tinyModelDir();
    const packedDir = await tinyModelDir({ segmentIds: true });
    // No prefix cache: every call computes its states, so their questions ride in the prefill rows.
    packed = await Engine.load({ modelDir: packedDir, prefixCacheBytes: 0, packSuffixes: true });
    // With one: a repeated call finds its states cached, so its questions run after a copy of their KV.
    cached = await Engine.load({ modelDir: packedDir, packSuffixes: true });
    // The same graph and weights, packing off (the engine's default on the CPU): one row per question.
    forked = await Engine.load({ modelDir: packedDir, prefixCacheBytes: 0 });
  });
  afterAll(() => {
    packed?.close();
    cached?.close();
    forked?.close();
  });
  const copied = async (engine: Engine, groups: ScoreGroup[]) => {
    const before = engine.counters();
    const scores = await engine.score(groups);
    const after = engine.counters();
    return { scores, copied: after.pastTokensCopied - before.pastTokensCopied, passes: after.forwardPasses - before.forwardPasses };
  };

  it('packing is off by default on the CPU and can be switched on; a graph without segment ids cannot pack', async () => {
    expect(packed.info.packsSuffixes).toBe(true);
    expect(forked.info.packsSuffixes).toBe(false);
    const stock = await Engine.load({ modelDir: referenceDir, packSuffixes: true });
    try {
      expect(stock.info.packsSuffixes).toBe(false);
    } finally {
      stock.close();
    }
  });

  it("gives today's forked answers (1e-5) with the questions in the states' own rows, copying no KV", async () => {
    const groups = [group(1, 120, [9, 14, 3, 20]), group(2, 45, [7]), group(3, 300, [11, 11, 25, 6, 18, 2, 9, 13])];
    const a = await copied(packed, groups);
    const b = await copied(forked, groups);
    expect(maxDiff(a.scores, b.scores)).toBeLessThan(1e-5);
    // Forked: every question copies its state's KV (the prefix stage starts from an empty past).
    expect(b.copied).toBe(groups.reduce((n, g) => n + g.prefix.length * g.suffixes.length, 0));
    // Packed: each state and its questions are one prefill row, so nothing is copied.
    expect(a.copied).toBe(0);
    expect(a.passes).toBeLessThan(b.passes);
  });

  it("on cached states, the questions run after one copy of each state's KV, with the same answers (1e-5)", async () => {
    const groups = [group(7, 90, [12, 4, 30]), group(8, 200, [6, 6, 6, 6])];
    const fresh = await copied(cached, groups);
    const hit = await copied(cached, groups);
    expect(fresh.copied).toBe(0);
    expect(hit.copied).toBe(groups.reduce((n, g) => n + g.prefix.length, 0));
    expect(maxDiff(hit.scores, fresh.scores)).toBeLessThan(1e-5);
    expect(maxDiff(hit.scores, (await copied(forked, groups)).scores)).toBeLessThan(1e-5);
  });

  it('a question gets the same answer alone, beside other questions of its state, and in another order (logits 1e-5, probabilities 1e-6)', async () => {
    const full = group(4, 80, [12, 30, 5, 17]);
    const [together] = await packed.score([full]);
    const reversed = (await packed.score([{ prefix: full.prefix, suffixes: [...full.suffixes].reverse() }]))[0]!.reverse();
    for (let s = 0; s < full.suffixes.length; s++) {
      const [alone] = await packed.score([{ prefix: full.prefix, suffixes: [full.suffixes[s]!] }]);
      expect(maxDiff([alone!], [[together![s]!]]), `question ${s} alone`).toBeLessThan(1e-5);
      // What the service returns: the options' probabilities (a softmax over the label logits).
      const a = optionProbabilities(alone![0]!.labelLogits);
      const b = optionProbabilities(together![s]!.labelLogits);
      a.forEach((p, k) => expect(Math.abs(p - b[k]!), `question ${s} option ${k}`).toBeLessThan(1e-6));
      expect(maxDiff([reversed.slice(s, s + 1)], [[together![s]!]]), `question ${s} reordered`).toBeLessThan(1e-5);
    }
  });

  it("a state whose questions outgrow one row splits them over several rows, each further row with the state's KV once", async () => {
    // A 10-token state packs at most 64 question tokens per row: 40 + 40 + 40 needs three rows,
    // the first of them in the state's prefill row.
    const long = group(5, 10, [40, 40, 40]);
    const before = packed.counters();
    const [scores] = await packed.score([long]);
    const after = packed.counters();
    expect(after.pastTokensCopied - before.pastTokensCopied).toBe(2 * long.prefix.length);
    // Each answer is its fresh full-sequence row's (the stock graph, same weights).
    for (let s = 0; s < long.suffixes.length; s++) {
      const suffix = long.suffixes[s]!;
      const reference = await lastPositionLogits(referenceDir, Int32Array.from([...long.prefix, ...suffix.tokens]));
      suffix.labels.forEach((label, k) => expect(Math.abs(scores![s]!.labelLogits[k]! - reference[label]!)).toBeLessThan(1e-4));
    }
  });

  it('short questions of a short state still share a row (at least 64 question tokens per row)', async () => {
    const short = group(6, 5, [10, 10, 10, 10, 10, 10]);
    await cached.score([short]);
    // The state is cached now: one row of 60 question tokens after one copy of its 5 tokens.
    const again = await copied(cached, [short]);
    expect(again.copied).toBe(short.prefix.length);
    expect(again.passes).toBe(1);
  });

  it('the fused-attention packing graph (what a GPU host would run) gives the forked answers too (1e-4)', async () => {
    const fused = await Engine.load({ modelDir: await tinyModelDir({ segmentIds: true, attention: 'fused' }), prefixCacheBytes: 0, packSuffixes: true });
    try {
      expect(fused.info.packsSuffixes).toBe(true);
      const groups = [group(9, 150, [8, 21, 5]), group(10, 30, [40, 40, 3])];
      expect(maxDiff(await fused.score(groups), await forked.score(groups))).toBeLessThan(1e-4);
    } finally {
      fused.close();
    }
  });
});
