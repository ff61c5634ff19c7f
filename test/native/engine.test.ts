/**
 * The native engine against an independent reference: every label logit it reports must equal a
 * full-sequence forward of the same ids with an empty past, run through the onnxruntime-node JS
 * API on a copy of the stock graph that computes the last position's logits only
 * (test/helpers/last-position-reference.ts), whatever the prefix cache and the batch layout did.
 * Every property runs on three graphs with the same weights: the stock graph (one suffix row per
 * question, the state's KV forked into each), the packing graph with packing on (a state's
 * questions in rows of their own, or in the state's prefill row), and the packing graph with
 * fused attention (fused contrib ops and ONNX's Attention).
 */
import { mkdtemp, writeFile, mkdir, cp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, type ScoreGroup } from '../../src/engine/engine.js';
import { EngineError } from '../../src/errors/engine-error.js';
import { PRESETS } from '../../src/models/builder/presets.js';
import { lastPositionLogits } from '../helpers/last-position-reference.js';
import { maxLogitDiff, randomGroups, randomIds, rng } from '../helpers/random-groups.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

/** The sizes of the random groups these tests score. */
const SIZES = { prefixTokens: 300, suffixes: 8, suffixTokens: 40, labels: 26 };

async function expectMatchesFreshRows(modelDir: string, groups: ScoreGroup[], scores: Awaited<ReturnType<Engine['score']>>) {
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g]!;
    for (let s = 0; s < group.suffixes.length; s++) {
      const suffix = group.suffixes[s]!;
      const full = new Int32Array(group.prefix.length + suffix.tokens.length);
      full.set(group.prefix);
      full.set(suffix.tokens, group.prefix.length);
      const reference = await lastPositionLogits(modelDir, full);
      const got = scores[g]![s]!;
      expect(got.labelLogits.length).toBe(suffix.labels.length);
      suffix.labels.forEach((label, k) => {
        expect(Math.abs(got.labelLogits[k]! - reference[label]!)).toBeLessThan(1e-4);
      });
      let max = -Infinity;
      for (const v of reference) max = Math.max(max, v);
      let sum = 0;
      for (const v of reference) sum += Math.exp(v - max);
      expect(Math.abs(got.logSumExp - (max + Math.log(sum)))).toBeLessThan(1e-3);
    }
  }
}


describe.each([
  { layout: 'one row per question', variant: {} },
  // Packing is the engine's default on CUDA only: asked for here.
  { layout: 'questions packed per state', variant: { segmentIds: true } },
  // What a GPU host would run: packed rows on the fused-attention graph (ONNX's Attention).
  { layout: 'questions packed per state, fused attention', variant: { segmentIds: true, attention: 'fused' as const } },
])('Engine on the tiny model, $layout', ({ variant }) => {
  const load = (options: Omit<Parameters<typeof Engine.load>[0], 'modelDir'> = {}) =>
    Engine.load({ modelDir, ...(variant.segmentIds ? { packSuffixes: true } : {}), ...options });
  let modelDir: string;
  /** The stock graph with the same weights: the reference runs it. */
  let referenceDir: string;
  let engine: Engine;

  beforeAll(async () => {
    referenceDir = await tinyModelDir();
    modelDir = await tinyModelDir(variant);
    engine = await load();
  });
  afterAll(() => engine?.close());
  const expectMatchesReference = (groups: ScoreGroup[], scores: Awaited<ReturnType<Engine['score']>>) =>
    expectMatchesFreshRows(referenceDir, groups, scores);

  it('reads the model shape from config.json and the graph', () => {
    expect(engine.info.numLayers).toBe(2);
    expect(engine.info.numKvHeads).toBe(2);
    expect(engine.info.headDim).toBe(16);
    expect(engine.info.vocabSize).toBe(PRESETS.tiny!.vocabSize);
    expect(engine.info.hasLogitsIndex).toBe(true);
    expect(engine.info.packsSuffixes).toBe(variant.segmentIds === true);
  });

  it('prefix reuse equals an independent fresh full-sequence run (random groups)', async () => {
    for (const seed of [1, 2, 3]) {
      engine.clearPrefixCache();
      const groups = randomGroups(seed, 4, SIZES);
      const scores = await engine.score(groups);
      await expectMatchesReference(groups, scores);
    }
  });

  it('a group scores the same alone and inside a batch of other lengths', async () => {
    const [target, ...others] = randomGroups(11, 5, SIZES);
    engine.clearPrefixCache();
    const alone = await engine.score([target!]);
    engine.clearPrefixCache();
    const mixed = await engine.score([others[0]!, others[1]!, target!, others[2]!, others[3]!]);
    alone[0]!.forEach((score, s) => {
      expect(maxLogitDiff(score.labelLogits, mixed[2]![s]!.labelLogits)).toBeLessThan(1e-5);
    });
  });

  it('a prefix-cache hit gives the same logits as a miss, and counts as reused', async () => {
    const groups = randomGroups(21, 2, SIZES);
    engine.clearPrefixCache();
    const before = engine.counters();
    const miss = await engine.score(groups);
    const afterMiss = engine.counters();
    const hit = await engine.score(groups);
    const afterHit = engine.counters();
    const prefixTokens = groups.reduce((n, g) => n + g.prefix.length, 0);
    expect(afterMiss.prefixTokensComputed - before.prefixTokensComputed).toBe(prefixTokens);
    expect(afterHit.prefixTokensComputed - afterMiss.prefixTokensComputed).toBe(0);
    expect(afterHit.cachedTokens - afterMiss.cachedTokens).toBe(prefixTokens);
    expect(afterHit.prefixPasses - afterMiss.prefixPasses).toBe(0);
    miss.forEach((group, g) => group.forEach((score, s) => expect(maxLogitDiff(score.labelLogits, hit[g]![s]!.labelLogits)).toBeLessThan(1e-5)));
  });

  it('a cached prefix is reused only by groups of its own cache scope, within a call and across calls', async () => {
    const next = rng(41);
    const prefix = randomIds(next, 60);
    const question = { tokens: randomIds(next, 10), labels: randomIds(next, 4) };
    const group = (cacheScope?: number) => ({ prefix, suffixes: [question], ...(cacheScope === undefined ? {} : { cacheScope }) });
    engine.clearPrefixCache();
    const first = await engine.scoreBatch([group(1), group(2), group(1)]);
    // The third group shares the first one's computation; the second, of another scope, does not.
    expect(Array.from(first.cachedTokens)).toEqual([0, 0, prefix.length]);
    const again = await engine.scoreBatch([group(3), group(2), group()]);
    expect(Array.from(again.cachedTokens)).toEqual([0, prefix.length, 0]);
    const shared = await engine.scoreBatch([group(0)]);
    expect(Array.from(shared.cachedTokens)).toEqual([prefix.length]); // scope 0 is the default's
    for (const g of [...first.groups, ...again.groups, ...shared.groups]) {
      expect(maxLogitDiff(g[0]!.labelLogits, first.groups[0]![0]!.labelLogits)).toBeLessThan(1e-5);
    }
    for (const bad of [-1, 1.5, 2 ** 31, Number.NaN]) {
      await expect(engine.score([group(bad)])).rejects.toMatchObject({ code: 'ERR_INPUT', message: expect.stringMatching(/cacheScope/) });
    }
    // A misspelt scope would silently share the default scope: refused, as any field the engine does not read.
    const { cacheScope: _, ...unscoped } = group(3);
    await expect(engine.score([{ ...unscoped, cache_scope: 3 } as never])).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: "groups[0]: unknown field 'cache_scope' (fields: prefix, suffixes, cacheScope)",
    });
    await expect(engine.score([{ ...unscoped, suffixes: [{ ...unscoped.suffixes[0]!, label: 1 }] } as never])).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: "groups[0].suffixes[0]: unknown field 'label' (fields: tokens, labels)",
    });
  });

  it('reuses a shared leading part (system prompt) of a different cached prefix', async () => {
    const next = rng(31);
    const system = randomIds(next, 120);
    const stateA = randomIds(next, 40);
    const stateB = randomIds(next, 55);
    const concat = (a: Int32Array, b: Int32Array) => Int32Array.from([...a, ...b]);
    const question = { tokens: randomIds(next, 12), labels: randomIds(next, 4) };
    engine.clearPrefixCache();
    await engine.score([{ prefix: concat(system, stateA), suffixes: [question] }]);
    const before = engine.counters();
    const groups = [{ prefix: concat(system, stateB), suffixes: [question] }];
    const scores = await engine.score(groups);
    const after = engine.counters();
    expect(after.cachedTokens - before.cachedTokens).toBe(system.length);
    expect(after.prefixTokensComputed - before.prefixTokensComputed).toBe(stateB.length);
    await expectMatchesReference(groups, scores);
  });

  it('computes identical prefixes within one call once', async () => {
    const [group] = randomGroups(41, 1, SIZES);
    engine.clearPrefixCache();
    const before = engine.counters();
    const scores = await engine.score([group!, { ...group! }]);
    const after = engine.counters();
    expect(after.prefixTokensComputed - before.prefixTokensComputed).toBe(group!.prefix.length);
    scores[0]!.forEach((score, s) => expect(maxLogitDiff(score.labelLogits, scores[1]![s]!.labelLogits)).toBe(0));
  });

  it('a cache bounded to about one prefix evicts the older one and counts the eviction', async () => {
    const perToken = engine.info.kvBytesPerToken;
    const small = await load({ prefixCacheBytes: perToken * 150 });
    try {
      const next = rng(71);
      const question = { tokens: randomIds(next, 8), labels: randomIds(next, 3) };
      const first = { prefix: randomIds(next, 100), suffixes: [question] };
      const second = { prefix: randomIds(next, 100), suffixes: [question] };
      await small.score([first]);
      expect(small.counters()).toMatchObject({ prefixCacheEntries: 1, prefixCacheEvictions: 0 });
      await small.score([second]);
      expect(small.counters()).toMatchObject({ prefixCacheEntries: 1, prefixCacheEvictions: 1 });
      const before = small.counters();
      await small.score([first]);
      expect(small.counters().prefixTokensComputed - before.prefixTokensComputed).toBe(first.prefix.length);
    } finally {
      small.close();
    }
  });

  it('with pass splitting off, uses one prefix pass and one suffix pass per call within the token budget', async () => {
    const onePass = await load({ passOverheadTokens: Infinity });
    try {
      const groups = randomGroups(51, 3, SIZES).map((g) => ({ ...g, prefix: g.prefix.slice(0, 50) }));
      await onePass.score(groups);
      const counters = onePass.counters();
      expect(counters.prefixPasses).toBe(1);
      expect(counters.suffixPasses).toBe(1);
    } finally {
      onePass.close();
    }
  });

  it('splitting passes to avoid padding computes less padding and gives the same logits', async () => {
    const onePass = await load({ passOverheadTokens: Infinity });
    try {
      const groups = randomGroups(52, 6, SIZES);
      engine.clearPrefixCache();
      const before = engine.counters();
      const split = await engine.score(groups);
      const after = engine.counters();
      const merged = await onePass.score(groups);
      expect(after.forwardPasses - before.forwardPasses).toBeGreaterThan(2);
      expect(after.paddedTokens - before.paddedTokens).toBeLessThan(onePass.counters().paddedTokens);
      split.forEach((group, g) => group.forEach((score, s) => expect(maxLogitDiff(score.labelLogits, merged[g]![s]!.labelLogits)).toBeLessThan(1e-5)));
    } finally {
      onePass.close();
    }
  });

  it('a small token budget splits passes without changing results', async () => {
    const small = await load({ tokenBudget: 40, passOverheadTokens: Infinity });
    try {
      const groups = randomGroups(61, 4, SIZES);
      engine.clearPrefixCache();
      const reference = await engine.score(groups);
      const split = await small.score(groups);
      expect(small.counters().forwardPasses).toBeGreaterThan(2);
      reference.forEach((group, g) => group.forEach((score, s) => expect(maxLogitDiff(score.labelLogits, split[g]![s]!.labelLogits)).toBeLessThan(1e-5)));
    } finally {
      small.close();
    }
  });

  it('the stock graph (no LM-head rewrite) gives the same logits as the rewritten one', async () => {
    const stock = await load({ gatherLogits: false });
    try {
      expect(stock.info.hasLogitsIndex).toBe(false);
      const groups = randomGroups(71, 2, SIZES);
      engine.clearPrefixCache();
      const a = await engine.score(groups);
      const b = await stock.score(groups);
      a.forEach((group, g) => group.forEach((score, s) => expect(maxLogitDiff(score.labelLogits, b[g]![s]!.labelLogits)).toBeLessThan(1e-5)));
    } finally {
      stock.close();
    }
  });

  describe('bad input gives a typed error and the engine keeps working', () => {
    const good = () => randomGroups(81, 1, SIZES);
    const expectCode = async (promise: Promise<unknown>, code: string, message?: RegExp) => {
      const err = await promise.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(EngineError);
      expect((err as EngineError).code).toBe(code);
      if (message) expect((err as Error).message).toMatch(message);
    };

    it('empty prefix', async () => {
      await expectCode(engine.score([{ prefix: new Int32Array(0), suffixes: good()[0]!.suffixes }]), 'ERR_INPUT', /empty prefix/);
    });
    it('empty suffix', async () => {
      await expectCode(engine.score([{ prefix: Int32Array.of(1, 2), suffixes: [{ tokens: new Int32Array(0), labels: Int32Array.of(3) }] }]), 'ERR_INPUT', /empty/);
    });
    it('label outside the vocabulary', async () => {
      await expectCode(
        engine.score([{ prefix: Int32Array.of(1, 2), suffixes: [{ tokens: Int32Array.of(3), labels: Int32Array.of(PRESETS.tiny!.vocabSize) }] }]),
        'ERR_INPUT',
        /outside the vocabulary/,
      );
      await expectCode(
        engine.score([{ prefix: Int32Array.of(-1, 2), suffixes: [{ tokens: Int32Array.of(3), labels: Int32Array.of(1) }] }]),
        'ERR_INPUT',
        /outside the vocabulary/,
      );
    });
    it('a sequence over the model context', async () => {
      const long = new Int32Array(engine.info.maxContext).fill(5);
      await expectCode(engine.score([{ prefix: long, suffixes: [{ tokens: Int32Array.of(1), labels: Int32Array.of(1) }] }]), 'ERR_INPUT', /exceeds the model's context/);
    });
    it('arrays that are not Int32Array', async () => {
      await expectCode(engine.score([{ prefix: [1, 2] as unknown as Int32Array, suffixes: [] }]), 'ERR_INPUT', /Int32Array/);
      await expectCode(engine.score('nope' as unknown as ScoreGroup[]), 'ERR_INPUT');
    });
    it('still scores correctly after all of the above', async () => {
      const groups = good();
      await expectMatchesReference(groups, await engine.score(groups));
    });
    it('a closed engine rejects calls; close is idempotent', async () => {
      const other = await load({ threads: 1 });
      other.close();
      other.close();
      await expectCode(other.score(good()), 'ERR_ENGINE_CLOSED');
      expect(() => other.counters()).toThrow(/closed/);
    });
  });
});

describe('Engine.load failures', () => {
  let modelDir: string;
  let scratch: string;
  beforeAll(async () => {
    modelDir = await tinyModelDir();
    scratch = await mkdtemp(path.join(os.tmpdir(), 'decide-engine-'));
  });
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  const expectLoadError = async (options: Parameters<typeof Engine.load>[0], code: string, message: RegExp) => {
    const err = await Engine.load(options).then(
      (e) => {
        e.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).code).toBe(code);
    expect((err as Error).message).toMatch(message);
  };

  it('a missing directory', async () => {
    await expectLoadError({ modelDir: path.join(scratch, 'nope') }, 'ERR_MODEL_LOAD', /config\.json|does not exist/);
  });

  it('a malformed config.json names the file and the field', async () => {
    const dir = path.join(scratch, 'bad-config');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'config.json'), '{"hidden_size": "wide"}');
    await expectLoadError({ modelDir: dir }, 'ERR_MODEL_LOAD', /config\.json: "hidden_size"/);
    await writeFile(path.join(dir, 'config.json'), '{not json');
    await expectLoadError({ modelDir: dir }, 'ERR_MODEL_LOAD', /config\.json: not valid JSON/);
  });

  it('a missing or corrupt graph names the file', async () => {
    const dir = path.join(scratch, 'bad-graph');
    await mkdir(path.join(dir, 'onnx'), { recursive: true });
    await cp(path.join(modelDir, 'config.json'), path.join(dir, 'config.json'));
    await expectLoadError({ modelDir: dir }, 'ERR_MODEL_LOAD', /no decoder graph found/);
    await writeFile(path.join(dir, 'onnx', 'model.onnx'), 'this is not a protobuf');
    await expectLoadError({ modelDir: dir }, 'ERR_MODEL_LOAD', /model\.onnx/);
  });

  it('the CUDA provider on a CPU-only runtime says how to install it', async () => {
    await expectLoadError({ modelDir, provider: 'cuda' }, 'ERR_PROVIDER_UNAVAILABLE', /CUDA.*(install|DECIDE_ORT_LIBRARY|setup-cuda)/is);
  });
});
