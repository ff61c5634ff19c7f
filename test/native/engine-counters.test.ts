/**
 * The host-side counters (deviceCopies, hostToDeviceBytes, deviceToHostBytes, runMillis,
 * hostMillis), on the CPU provider, which counts the same operations as CUDA: what they promise
 * about the work a call puts on the host, whatever the provider.
 * - KV moves in a few batched operations per forward pass: copies per pass do not grow with the
 *   rows of a pass (8 states vs 64 states, forked and packed layouts).
 * - The vocabulary never leaves the device: a call reads back at most 8 bytes per label plus 8
 *   per wanted position plus a small constant (the scoring head's fp32 logits and log-sum-exps).
 * - Inputs cross once per pass; the time splits into time inside ONNX Runtime and the rest.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, type ScoreGroup } from '../../src/engine/engine.js';
import type { NativeCounters } from '../../src/engine/native.js';
import { counterWorkload as workload } from '../helpers/random-groups.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

const labelCount = (groups: ScoreGroup[]) => groups.reduce((n, g) => n + g.suffixes.reduce((m, s) => m + s.labels.length, 0), 0);
const questionCount = (groups: ScoreGroup[]) => groups.reduce((n, g) => n + g.suffixes.length, 0);

describe.each([
  ['forked rows', false],
  ['packed rows', true],
])('engine counters, %s', (_name, packSuffixes) => {
  let engine: Engine;

  beforeAll(async () => {
    const modelDir = await tinyModelDir({ segmentIds: true });
    // No prefix cache, so both calls compute their states; a token budget that holds 64 states'
    // questions in one pass, so the rows of a pass grow with the call.
    engine = await Engine.load({ modelDir, prefixCacheBytes: 0, packSuffixes, tokenBudget: 1 << 16, passOverheadTokens: Infinity });
  });
  afterAll(() => engine?.close());

  async function measure(states: number): Promise<{ groups: ScoreGroup[]; counters: NativeCounters }> {
    const groups = workload(states, states);
    const { counters } = await engine.scoreBatch(groups);
    return { groups, counters };
  }

  it('copies per forward pass do not grow with the rows of a pass (8 states vs 64)', async () => {
    const small = await measure(8);
    const large = await measure(64);
    for (const { counters } of [small, large]) {
      expect(counters.forwardPasses).toBeGreaterThan(0);
      // Per pass: the staged inputs (one copy), the fork of the past (one batch, with its padding)
      // and, after a prefix pass, the new KV into the states' blocks (one batch).
      expect(counters.deviceCopies).toBeLessThanOrEqual(3 * counters.forwardPasses);
    }
    expect(large.counters.forwardPasses).toBe(small.counters.forwardPasses);
    expect(large.counters.deviceCopies).toBe(small.counters.deviceCopies);
    // ... while the passes did grow: 8x the rows, 8x the past copied into them.
    expect(large.counters.suffixTokens).toBeGreaterThan(4 * small.counters.suffixTokens);
  });

  it("stores the states a pass computes with no copy: their slices of the pass's KV are the cached blocks", async () => {
    const { counters } = await measure(16);
    const first = await engine.scoreBatch(workload(99, 4));
    // Packed: each state's questions ride in its prefill row, so a call is prefix passes whose
    // only device operation is the staged inputs. Forked: the suffix passes also fork the past.
    if (packSuffixes) {
      expect(counters.deviceCopies).toBe(counters.forwardPasses);
      expect(first.counters.deviceCopies).toBe(first.counters.forwardPasses);
    } else {
      expect(counters.deviceCopies).toBe(counters.prefixPasses + 2 * counters.suffixPasses);
    }
  });

  it('reads back at most 8 bytes per label and per wanted position, plus a small constant', async () => {
    for (const states of [8, 64]) {
      const { groups, counters } = await measure(states);
      const labels = labelCount(groups);
      const positions = questionCount(groups);
      // The constant: a pass that wants no logits still reads one dummy label and position.
      expect(counters.deviceToHostBytes).toBeLessThanOrEqual(8 * labels + 8 * positions + 8 * counters.forwardPasses);
      // fp32 logits and log-sum-exps, nothing less.
      expect(counters.deviceToHostBytes).toBeGreaterThanOrEqual(4 * labels + 4 * positions);
    }
  });

  it('sends inputs once per pass and splits the call time into run and host time', async () => {
    const { groups, counters } = await measure(8);
    const tokens = groups.reduce((n, g) => n + g.prefix.length + g.suffixes.reduce((m, s) => m + s.tokens.length, 0), 0);
    // At least the token ids themselves crossed.
    expect(counters.hostToDeviceBytes).toBeGreaterThanOrEqual(4 * tokens);
    expect(counters.runMillis).toBeGreaterThan(0);
    expect(counters.hostMillis).toBeGreaterThanOrEqual(0);
  });

  it('the engine totals add up the calls', async () => {
    const before = engine.counters();
    const a = (await engine.scoreBatch(workload(3, 5))).counters;
    const b = (await engine.scoreBatch(workload(4, 7))).counters;
    const after = engine.counters();
    for (const key of ['deviceCopies', 'hostToDeviceBytes', 'deviceToHostBytes'] as const) {
      expect(after[key] - before[key], key).toBe(a[key] + b[key]);
    }
    expect(after.runMillis - before.runMillis).toBeCloseTo(a.runMillis + b.runMillis, 6);
  });
});

describe('a stock graph (no scoring head)', () => {
  it('reads the whole vocabulary of each wanted position back, and the counters say so', async () => {
    const modelDir = await tinyModelDir();
    const engine = await Engine.load({ modelDir, gatherLogits: false, prefixCacheBytes: 0 });
    try {
      expect(engine.info.hasLabelHead).toBe(false);
      const groups = workload(5, 2);
      const { counters } = await engine.scoreBatch(groups);
      expect(counters.deviceToHostBytes).toBeGreaterThanOrEqual(questionCount(groups) * engine.info.vocabSize * 4);
    } finally {
      engine.close();
    }
  });
});
