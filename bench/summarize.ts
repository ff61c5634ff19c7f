/** From timed repetitions to the reported result of a workload: medians, rates, FLOPs and MFU. */
import { modelFlops, mfu } from './flops.js';
import type { CheckResult } from './agreement.js';
import type { SystemResult, WorkloadResult } from './report.js';
import { stat } from './stat.js';
import type { BaselineRun, EngineRun } from './systems.js';
import type { Workload } from './workloads.js';

export function summarize(
  w: Workload,
  engineRuns: EngineRun[],
  baselineRuns: BaselineRun[],
  enginePeak: number,
  baselinePeak: number,
  check: CheckResult,
  bodyParams: number,
  headFlopParams: number,
  peakGflops: number,
  twinRuns: EngineRun[] = [],
): WorkloadResult {
  const t = w.tokens;
  const c = engineRuns[0]!.counters;
  const engineComputed = c.prefixTokensComputed + c.suffixTokens;
  const engineFlops = modelFlops(bodyParams, headFlopParams, engineComputed, t.decisions);
  const bs = baselineRuns[0]!.stats;
  const baselineFlops = modelFlops(bodyParams, headFlopParams, bs.computedTokens, t.decisions);
  const system = (runs: (EngineRun | BaselineRun)[], computed: number, padded: number, passes: number, flops: number, peakRss: number): SystemResult => {
    const secs = runs.map((r) => r.seconds);
    return {
      seconds: stat(secs),
      decisionsPerSecond: stat(secs.map((s) => t.decisions / s)),
      tokensPerSecondComputed: stat(secs.map((s) => computed / s)),
      tokensPerSecondEffective: stat(secs.map((s) => t.freshTokens / s)),
      mfu: stat(secs.map((s) => mfu(flops, s, peakGflops))),
      probeGflops: stat(runs.map((r) => r.probeGflops)),
      coresBusy: stat(runs.map((r) => r.coresBusy)),
      computedTokens: computed,
      paddedTokens: padded,
      forwardPasses: passes,
      modelFlops: flops,
      peakRssBytes: peakRss,
      maxEventLoopDelayMs: Math.max(...runs.map((r) => r.maxEventLoopDelayMs)),
    };
  };
  const engine = {
    ...system(engineRuns, engineComputed, c.paddedTokens, c.prefixPasses + c.suffixPasses, engineFlops, enginePeak),
    counters: c,
  };
  const baseline = {
    ...system(baselineRuns, bs.computedTokens, bs.paddedTokens, bs.passes, baselineFlops, baselinePeak),
    stats: bs,
  };
  const speedupStat = stat(engineRuns.map((e, i) => baselineRuns[i]!.seconds / e.seconds));
  const twin =
    twinRuns.length === 0
      ? undefined
      : {
          decisionsPerSecond: stat(twinRuns.map((r) => t.decisions / r.seconds)),
          speedup: stat(engineRuns.map((e, i) => twinRuns[i]!.seconds / e.seconds)),
        };
  return {
    workload: w.spec.name,
    description: w.spec.description,
    tokens: t,
    engineCalls: w.calls.length,
    speedup: speedupStat.median,
    speedupStat,
    idealSpeedup: t.idealSpeedup,
    fractionOfIdeal: speedupStat.median / t.idealSpeedup,
    mfu: engine.mfu.median,
    decisionsPerSecond: engine.decisionsPerSecond.median,
    engine,
    baseline,
    ...(twin === undefined ? {} : { fp32Twin: twin }),
    check: {
      rows: check.rows,
      topAgreeing: check.topAgreeing,
      reference: check.plan.reference,
      maxAbsLogitDiff: check.maxAbsLogitDiff,
      maxAbsProbDiff: check.maxAbsProbDiff,
      ...(check.plan.logitTolerance === undefined ? {} : { logitTolerance: check.plan.logitTolerance }),
      tolerance: check.plan.probTolerance,
      ...(check.baseline === undefined ? {} : { baselineMaxAbsProbDiff: check.baseline.maxAbsProbDiff }),
    },
  };
}

export function notesFor(results: WorkloadResult[]): string[] {
  const notes = [
    'Speedup = baseline seconds / engine seconds per repetition (repetitions alternate which system runs first); the median is reported with min and max.',
    'Engine repetitions start with an empty prefix cache (clearPrefixCache), so each repetition pays for its prefixes once.',
  ];
  const delays = results.map((r) => `${r.workload}: engine ${r.engine.maxEventLoopDelayMs.toFixed(0)} ms, baseline ${r.baseline.maxEventLoopDelayMs.toFixed(0)} ms`);
  if (delays.length > 0) {
    notes.push(`Longest event-loop stall while scoring (the engine runs passes on a libuv worker; onnxruntime-node's session.run holds the main thread): ${delays.join('; ')}.`);
  }
  return notes;
}

