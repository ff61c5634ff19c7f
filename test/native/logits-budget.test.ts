/**
 * The `logitsBudgetBytes` engine option (native/pass_planner.h): the scoring head computes the whole
 * vocabulary's logits at every wanted position, so a pass of many short questions is split where its
 * positions x vocabulary (about 12 bytes an entry with the head's temporaries) would pass the budget.
 * A split changes no answer (probabilities 1e-6, logits 1e-5), on forked and packed rows; a call
 * that reads no logits (states alone) runs as one pass whatever the budget, and its head gathers one
 * dummy token in all rather than one per row. On a graph without the scoring head (`gatherLogits`
 * off) every position's logits count.
 */
import { afterAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import type { EngineOptions } from '../../src/engine/engine-options.js';
import { randomGroups } from '../helpers/random-groups.js';
import { expectSamePaddedAnswers } from '../helpers/score-compare.js';
import { tinyModelDir, type TinyVariant } from '../helpers/tiny-model.js';

const engines: Engine[] = [];
afterAll(() => engines.forEach((e) => e.close()));

async function load(variant: TinyVariant, options: EngineOptions): Promise<Engine> {
  const engine = await Engine.load({ modelDir: await tinyModelDir(variant), threads: 1, prefixCacheBytes: 0, ...options });
  engines.push(engine);
  return engine;
}

describe.each<[string, TinyVariant, EngineOptions]>([
  ['forked rows', {}, {}],
  ['packed rows', { segmentIds: true }, { packSuffixes: true }],
])('logits budget, %s', (_name, variant, options) => {
  it('splits the questions into passes the budget holds, with the same answers', async () => {
    const whole = await load(variant, options);
    const vocab = whole.info.vocabSize;
    // Room for about four questions' logits a pass.
    const split = await load(variant, { ...options, logitsBudgetBytes: 4 * 12 * vocab + 1 });
    const groups = randomGroups(11, 12, { prefixTokens: 9, suffixes: 4, suffixTokens: 3, labels: 6 });
    const questions = groups.reduce((n, g) => n + g.suffixes.length, 0);
    const a = await whole.scoreBatch(groups);
    const b = await split.scoreBatch(groups);
    expectSamePaddedAnswers(a, b);
    // Forked rows: one question a row, at most four a pass. Packed rows: a row holds a state's
    // questions (up to four here) and is split from the others.
    expect(b.counters.forwardPasses).toBeGreaterThan(a.counters.forwardPasses);
    if (!options.packSuffixes) expect(b.counters.suffixPasses).toBeGreaterThanOrEqual(Math.ceil(questions / 4));
  });
});

describe('logits budget, a graph without the scoring head', () => {
  it('bounds every position of a pass, with the same answers', async () => {
    const whole = await load({}, { gatherLogits: false });
    const vocab = whole.info.vocabSize;
    // The stock graph returns every new position's logits (4 bytes an entry): room for 8 tokens a pass.
    const split = await load({}, { gatherLogits: false, logitsBudgetBytes: 8 * 4 * vocab });
    const groups = randomGroups(12, 6, { prefixTokens: 6, suffixes: 3, suffixTokens: 3, labels: 4 });
    const a = await whole.scoreBatch(groups);
    const b = await split.scoreBatch(groups);
    expectSamePaddedAnswers(a, b);
    // The default budget takes every question in one pass; 8 tokens' logits a pass need more.
    expect(a.counters.suffixPasses).toBe(1);
    expect(b.counters.suffixPasses).toBeGreaterThanOrEqual(Math.max(2, Math.ceil(b.counters.suffixTokens / 8)));
  });
});

describe('a call that reads no logits', () => {
  it('runs the passes it runs without a budget, whatever the logits budget', async () => {
    const tight = await load({}, { logitsBudgetBytes: 1 });
    const roomy = await load({}, {});
    const states = randomGroups(3, 40, { prefixTokens: 5, suffixes: 1, suffixTokens: 2, labels: 2 }).map((g) => ({ prefix: g.prefix, suffixes: [] }));
    const passes = (await roomy.scoreBatch(states)).counters.prefixPasses;
    expect((await tight.scoreBatch(states)).counters).toMatchObject({ prefixPasses: passes, suffixPasses: 0 });
    expect(passes).toBeLessThan(states.length / 4);
  });
});
