/**
 * The native binding keeps its own counter names (native/engine_binding.cc CountersObject); the
 * counter table (src/engine/engine-counters.ts) is what /metrics, the benchmark and the docs derive
 * from. Their keys must be the same set: a counter added in C++ without its row (or a row without
 * its counter) fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { addCounters, ENGINE_COUNTERS, ENGINE_GAUGES, zeroCounters } from '../../src/engine/engine-counters.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

let engine: Engine;

beforeAll(async () => {
  engine = await Engine.load({ modelDir: await tinyModelDir(), threads: 1 });
});
afterAll(() => engine?.close());

const names = (rows: ReadonlyArray<{ name: string }>) => rows.map((r) => r.name).sort();

describe("the native counters' keys are the table's", () => {
  it("a call's counters: exactly ENGINE_COUNTERS, each a number", async () => {
    const { counters } = await engine.scoreBatch([{ prefix: Int32Array.from([5, 6, 7]), suffixes: [{ tokens: Int32Array.from([8]), labels: Int32Array.from([1, 2]) }] }]);
    expect(Object.keys(counters).sort()).toEqual(names(ENGINE_COUNTERS));
    for (const [key, value] of Object.entries(counters)) expect(typeof value, key).toBe('number');
    expect(counters.calls).toBe(1);
  });

  it("engine.counters(): ENGINE_COUNTERS and ENGINE_GAUGES, nothing else", () => {
    expect(Object.keys(engine.counters()).sort()).toEqual(names([...ENGINE_COUNTERS, ...ENGINE_GAUGES]));
  });

  it('the sums over calls add every counter of the table', async () => {
    const sum = zeroCounters();
    const group = { prefix: Int32Array.from([9, 10, 11, 12]), suffixes: [{ tokens: Int32Array.from([13, 14]), labels: Int32Array.from([3, 4]) }] };
    const first = (await engine.scoreBatch([group])).counters;
    const second = (await engine.scoreBatch([group])).counters;
    addCounters(sum, first);
    addCounters(sum, second);
    for (const { name } of ENGINE_COUNTERS) expect(sum[name], name).toBe(first[name] + second[name]);
    expect(sum.calls).toBe(2);
  });
});
