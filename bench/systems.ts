/**
 * The two systems under test, one repetition at a time: the engine (prefix cache cleared first)
 * and the fresh-scoring baseline, on the same calls (bench/agreement.ts checks that they agree).
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

import type { Engine, SuffixScore } from '../src/engine/engine.js';
import { addCounters, zeroCounters } from '../src/engine/engine-counters.js';
import type { BaselineRow, BaselineStats, FreshBaseline } from './baseline.js';
import type { EngineCountersSummary } from './report.js';
import { freshRows, groupsOf, type BenchItem, type Workload } from './workloads.js';

/**
 * Padded tokens per baseline forward pass: the engine's default tokenBudget (its bound on padded
 * new tokens per pass), applied to the baseline's rows, whose tokens are all new.
 */
export const BASELINE_PASS_TOKENS = 8192;
export const BASELINE_DEFINITION =
  'Fresh scoring through the onnxruntime-node JS API: every (state, question) is one full sequence (prefix + suffix ids) with an empty past, ' +
  `rows sorted by length and right-padded, batched per engine call in passes of at most ${BASELINE_PASS_TOKENS} padded tokens (the engine's ` +
  'default tokenBudget), label logits read at each row\'s last real position. It runs the SAME graph file as the engine (the LM-head-gathered ' +
  'rewrite, decide_token_index = each row\'s last real token; the engine\'s own operators, in an int8 model\'s u8 x s8 graph, expanded into the ' +
  'standard ops that compute the same values), so the speedup measured is prefix reuse and batching, not the LM-head rewrite.';

/** The counter sums of a repetition start at 0 and add each call's counters (src/engine/engine-counters.ts). */
export { addCounters, zeroCounters } from '../src/engine/engine-counters.js';

export interface EngineRun {
  seconds: number;
  /** Process CPU seconds / wall seconds during the run: below the thread count when the CPU was shared. */
  coresBusy: number;
  /** Peak probe right before this run, GFLOP/s (0 for untimed runs). */
  probeGflops: number;
  scores: SuffixScore[][];
  counters: EngineCountersSummary;
  maxEventLoopDelayMs: number;
}

export interface BaselineRun {
  seconds: number;
  coresBusy: number;
  probeGflops: number;
  labelLogits: Float32Array[];
  stats: BaselineStats;
  maxEventLoopDelayMs: number;
}

function cpuSeconds(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1e6;
}

/** Lets the histogram's timer fire once more, so a stall that ended with the run is recorded. */
async function flushEventLoopDelay(delay: IntervalHistogram): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 25));
  delay.disable();
}

/** One repetition of the engine: prefix cache cleared, then every call of the workload. */
export async function runEngine(engine: Engine, workload: Workload): Promise<EngineRun> {
  engine.clearPrefixCache();
  const counters = zeroCounters();
  const scores: SuffixScore[][] = [];
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (const call of workload.calls) {
    const result = await engine.scoreBatch(groupsOf(call));
    addCounters(counters, result.counters);
    scores.push(...result.groups);
  }
  const seconds = (performance.now() - t0) / 1000;
  const coresBusy = cpuSeconds(process.cpuUsage(cpu0)) / seconds;
  await flushEventLoopDelay(delay);
  return { seconds, coresBusy, probeGflops: 0, scores, counters, maxEventLoopDelayMs: delay.max / 1e6 };
}

function baselineRows(call: BenchItem[]): BaselineRow[] {
  const rows = freshRows(call);
  const labels = call.flatMap((item) => item.prepared.group.suffixes.map((s) => s.labels));
  return rows.map((tokens, i) => ({ tokens, labels: labels[i]! }));
}

/** One repetition of the baseline: the same calls, each scored fresh. */
export async function runBaseline(baseline: FreshBaseline, workload: Workload): Promise<BaselineRun> {
  const labelLogits: Float32Array[] = [];
  const stats: BaselineStats = { passes: 0, rows: 0, computedTokens: 0, paddedTokens: 0, maxRowsPerPass: 0 };
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (const call of workload.calls) {
    const result = await baseline.score(baselineRows(call));
    labelLogits.push(...result.labelLogits);
    stats.passes += result.stats.passes;
    stats.rows += result.stats.rows;
    stats.computedTokens += result.stats.computedTokens;
    stats.paddedTokens += result.stats.paddedTokens;
    stats.maxRowsPerPass = Math.max(stats.maxRowsPerPass, result.stats.maxRowsPerPass);
  }
  const seconds = (performance.now() - t0) / 1000;
  const coresBusy = cpuSeconds(process.cpuUsage(cpu0)) / seconds;
  await flushEventLoopDelay(delay);
  return { seconds, coresBusy, probeGflops: 0, labelLogits, stats, maxEventLoopDelayMs: delay.max / 1e6 };
}

/** Compares every row's label logits and answers; returns the largest differences. */
