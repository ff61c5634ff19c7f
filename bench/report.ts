/**
 * The benchmark's results: their shape (also the JSON written to bench/results/<timestamp>.json),
 * the text tables, and the targets (reported as PASS / MISS, never asserted).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

import type { CounterValues } from '../src/engine/engine-counters.js';
import { makeDirectories } from '../src/models/make-directories.js';
import type { BaselineStats } from './baseline.js';
import type { LatencyResult } from './http-latency.js';
import type { MicroResult } from './micro.js';
import type { PeakResult } from './peak.js';
import type { Stat } from './stat.js';
import type { WorkloadTokens } from './workloads.js';

export interface SystemResult {
  seconds: Stat;
  decisionsPerSecond: Stat;
  /** Tokens the system actually ran through the model (no padding) per second. */
  tokensPerSecondComputed: Stat;
  /** Fresh-scoring tokens (every decision's prefix + suffix) per second: the work done, as the baseline counts it. */
  tokensPerSecondEffective: Stat;
  /** Model FLOPs utilization against the machine's peak (see mfuDefinition). */
  mfu: Stat;
  /** MatMul peak probed right before each run, GFLOP/s: shows how much of the machine was available. */
  probeGflops: Stat;
  /** Process CPU seconds per wall second during each run (threads spinning included); well below the thread count when the CPU was shared. */
  coresBusy: Stat;
  /** Per repetition. */
  computedTokens: number;
  paddedTokens: number;
  forwardPasses: number;
  /** 2 x params x tokens per repetition (see mfuDefinition). */
  modelFlops: number;
  /** Highest resident set size of the process during this system's timed repetitions. */
  peakRssBytes: number;
  /** Longest stall of the Node event loop while this system scored (monitorEventLoopDelay). */
  maxEventLoopDelayMs: number;
}

/** Every engine counter (src/engine/engine-counters.ts ENGINE_COUNTERS), summed over a repetition's calls. */
export type EngineCountersSummary = CounterValues;

export interface WorkloadResult {
  workload: string;
  description: string;
  tokens: WorkloadTokens;
  engineCalls: number;
  /** Baseline time / engine time, paired by repetition: the median of the pairs. */
  speedup: number;
  speedupStat: Stat;
  /** Fresh tokens / perfect-reuse tokens (bench/workloads.ts). */
  idealSpeedup: number;
  /** speedup / idealSpeedup. */
  fractionOfIdeal: number;
  /** The engine's MFU (median). */
  mfu: number;
  /** The engine's decisions per second (median). */
  decisionsPerSecond: number;
  engine: SystemResult & { counters: EngineCountersSummary };
  baseline: SystemResult & { stats: BaselineStats };
  /**
   * With --dtype int8: the fp32 twin's engine, timed in the same repetitions. `speedup` is twin
   * seconds / int8 engine seconds, paired by repetition.
   */
  fp32Twin?: { decisionsPerSecond: Stat; speedup: Stat };
  /**
   * The check before timing (bench/agreement.ts): the engine against `reference` (and the baseline
   * too when the reference is the fp32 CPU engine). `tolerance` is the probability tolerance.
   */
  check: {
    rows: number;
    /** Rows whose most probable option is the reference's. */
    topAgreeing: number;
    reference: 'baseline' | 'fp32 CPU engine';
    maxAbsLogitDiff: number;
    maxAbsProbDiff: number;
    logitTolerance?: number;
    tolerance: number;
    baselineMaxAbsProbDiff?: number;
  };
}

export interface ProfileResult {
  workload: string;
  /** Prefix pass (with a 1-token suffix per state) and suffix pass (prefixes cached), seconds, median. */
  prefixPassSeconds: Stat;
  suffixPassSeconds: Stat;
  prefixTokens: number;
  suffixTokens: number;
  suffixRows: number;
  meanPastTokens: number;
  counters: { prefix: EngineCountersSummary; suffix: EngineCountersSummary };
  /** Body params x tokens FLOPs of each pass / its time, GFLOP/s. */
  prefixGflops: number;
  suffixGflops: number;
  /** Forked past KV bytes the suffix pass copies in (rows x past x bytes per token). */
  suffixForkBytes: number;
}

export interface TargetResult {
  name: string;
  value: number;
  threshold: number;
  pass: boolean;
  text: string;
}

export interface BenchReport {
  schema: 'decide-bench/1';
  startedAt: string;
  durationSeconds: number;
  options: Record<string, unknown>;
  rssAfterLoadBytes: number;
  machine: {
    cpuModel: string;
    /** The CPU's int8 dot-product flags (src/engine/cpu-int8.ts); null where they cannot be read. */
    int8DotProduct?: string[] | null;
    cores: number;
    memoryBytes: number;
    platform: string;
    node: string;
    loadAverageAtStart: number[];
  };
  threads: number;
  provider: string;
  git: { commit: string; dirty: boolean | null };
  /** The native addon this process loaded. */
  addon: { path: string; sha256: string; mtime: string; changedDuringRun: boolean };
  model: {
    preset: string;
    dir: string;
    graphFile: string;
    /** The engine scored a state's questions in one packed row (a packing graph). */
    packsSuffixes: boolean;
    /** int8 models: the integer GEMM path the engine ran and why (EngineInfo.int8, src/engine/int8-path.ts). */
    int8?: { path: string; forced: boolean; reason: string };
    shape: Record<string, number | boolean | undefined>;
    params: { body: number; embedding: number; lmHead: number; total: number; lmHeadFlopParams: number };
  };
  peak: PeakResult & {
    /** What MFU is taken against: the best of the start measurement and every probe, GFLOP/s. */
    usedGflops: number;
  };
  mfuDefinition: string;
  baselineDefinition: string;
  notes: string[];
  workloads: WorkloadResult[];
  profile: ProfileResult[];
  micro: MicroResult[];
  /** Latency of one POST /v1/decide over loopback HTTP, requests sent one after another. */
  latency: LatencyResult[];
  targets: TargetResult[];
}

/** int8 weights against the fp32 engine (issue 21): decisions/s ratio on these workloads, and the probability bound. */
export const INT8_SPEEDUP_TARGET = 1.8;
export const INT8_PROB_TARGET = 2e-2;

export function evaluateTargets(workloads: WorkloadResult[], dtype = 'fp32'): TargetResult[] {
  const out: TargetResult[] = [];
  const by = new Map(workloads.map((w) => [w.workload, w]));
  if (dtype === 'int8') {
    for (const name of ['document', 'tickets']) {
      const twin = by.get(name)?.fp32Twin;
      if (!twin) continue;
      out.push({
        name: `${name}: int8 engine >= ${INT8_SPEEDUP_TARGET}x the fp32 engine's decisions/s`,
        value: twin.speedup.median,
        threshold: INT8_SPEEDUP_TARGET,
        pass: twin.speedup.median >= INT8_SPEEDUP_TARGET,
        text: `${fx(twin.speedup.median)} (min ${fx(twin.speedup.min)}, max ${fx(twin.speedup.max)})`,
      });
    }
    for (const w of workloads) {
      out.push({
        name: `${w.workload}: int8 max |prob diff| against fp32 <= ${INT8_PROB_TARGET}`,
        value: w.check.maxAbsProbDiff,
        threshold: INT8_PROB_TARGET,
        pass: w.check.maxAbsProbDiff <= INT8_PROB_TARGET,
        text: `${w.check.maxAbsProbDiff.toExponential(2)}; top option agrees on ${w.check.topAgreeing}/${w.check.rows} rows`,
      });
    }
  }
  for (const name of ['document', 'tickets']) {
    const w = by.get(name);
    if (!w) continue;
    out.push({
      name: `${name} speedup >= 0.9 of ideal`,
      value: w.fractionOfIdeal,
      threshold: 0.9,
      pass: w.fractionOfIdeal >= 0.9,
      text: `${fx(w.speedup)} of ideal ${fx(w.idealSpeedup)} = ${w.fractionOfIdeal.toFixed(3)}`,
    });
  }
  const single = by.get('single');
  if (single) {
    out.push({
      name: 'single speedup >= 0.95x baseline',
      value: single.speedup,
      threshold: 0.95,
      pass: single.speedup >= 0.95,
      text: `${fx(single.speedup)} (min ${fx(single.speedupStat.min)}, max ${fx(single.speedupStat.max)})`,
    });
  }
  const doc = by.get('document');
  if (doc) {
    out.push({
      name: 'engine MFU on document >= 40% of measured peak',
      value: doc.mfu,
      threshold: 0.4,
      pass: doc.mfu >= 0.4,
      text: `${pct(doc.mfu)} (min ${pct(doc.engine.mfu.min)}, max ${pct(doc.engine.mfu.max)})`,
    });
  }
  return out;
}

const fx = (x: number) => `${x.toFixed(2)}x`;
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const int = (x: number) => Math.round(x).toLocaleString('en-US');
const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
/** Bytes in the unit that keeps 3 significant digits readable (B, KiB, MiB, GiB). */
const bytes = (b: number) => {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) [b, i] = [b / 1024, i + 1];
  return `${b.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
};

function num(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1000) return int(x);
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

function range(s: Stat, f: (x: number) => string = num): string {
  return `${f(s.median)} (${f(s.min)}-${f(s.max)})`;
}

/** Left-aligned first column, right-aligned others. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ').trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export function formatWorkload(w: WorkloadResult): string {
  const t = w.tokens;
  const e = w.engine;
  const b = w.baseline;
  const head =
    `${w.workload}: ${w.description}\n` +
    `  ${t.states} states, ${t.decisions} decisions, ${w.engineCalls} engine call(s); mean prefix ${num(t.meanPrefixTokens)} tokens, mean suffix ${num(t.meanSuffixTokens)} tokens; ` +
    `prefix tokens ${int(t.prefixTokens)} (${int(t.prefixTokensDistinct)} distinct), suffix tokens ${int(t.suffixTokens)}\n` +
    `  tokens per repetition: fresh ${int(t.freshTokens)} | perfect reuse ${int(t.idealTokens)} | engine computed ${int(e.computedTokens)} (+${int(e.paddedTokens)} padding, ${e.forwardPasses} passes) | baseline computed ${int(b.computedTokens)} (+${int(b.paddedTokens)} padding, ${b.forwardPasses} passes of <= ${b.stats.maxRowsPerPass} rows)\n` +
    `  engine host work per repetition: ${int(e.counters.deviceCopies)} device copies, ${bytes(e.counters.hostToDeviceBytes)} to the device, ${bytes(e.counters.deviceToHostBytes)} back; ` +
    `${int(e.counters.runMillis)} ms inside ONNX Runtime runs, ${int(e.counters.hostMillis)} ms outside`;
  const rows = [
    ['engine', range(e.seconds), range(e.decisionsPerSecond), range(e.tokensPerSecondComputed), range(e.tokensPerSecondEffective), range(e.mfu, pct), mib(e.peakRssBytes), e.coresBusy.median.toFixed(2)],
    ['baseline', range(b.seconds), range(b.decisionsPerSecond), range(b.tokensPerSecondComputed), range(b.tokensPerSecondEffective), range(b.mfu, pct), mib(b.peakRssBytes), b.coresBusy.median.toFixed(2)],
  ];
  if (w.fp32Twin) rows.push(['fp32 twin engine', '', range(w.fp32Twin.decisionsPerSecond), '', '', '', '', '']);
  const body = table(
    ['  system', 'seconds', 'decisions/s', 'tokens/s computed', 'tokens/s effective', 'MFU', 'peak RSS', 'cores busy'],
    rows.map((r) => [`  ${r[0]}`, ...r.slice(1)]),
  );
  const tail =
    `  speedup ${range(w.speedupStat, fx)} | ideal ${fx(w.idealSpeedup)} | ${w.fractionOfIdeal.toFixed(2)} of ideal` +
    ` | check against the ${w.check.reference}: ${w.check.rows} rows, max |logit diff| ${w.check.maxAbsLogitDiff.toExponential(1)}, max |prob diff| ${w.check.maxAbsProbDiff.toExponential(1)}` +
    (w.check.baselineMaxAbsProbDiff === undefined ? '' : ` (baseline ${w.check.baselineMaxAbsProbDiff.toExponential(1)})`) +
    ` <= ${w.check.tolerance}, top option agrees on ${w.check.topAgreeing}/${w.check.rows} rows` +
    (w.fp32Twin ? `\n  int8 engine vs the fp32 twin engine: ${range(w.fp32Twin.speedup, fx)} the decisions/s` : '');
  return `${head}\n${body}\n${tail}`;
}

export function formatProfile(p: ProfileResult): string {
  return (
    `${p.workload}: prefix pass ${range(p.prefixPassSeconds)} s for ${int(p.prefixTokens)} tokens (${int(p.prefixTokens / p.prefixPassSeconds.median)} tok/s, ${num(p.prefixGflops)} GFLOP/s body) in ${p.counters.prefix.prefixPasses} pass(es)` +
    ` | suffix pass ${range(p.suffixPassSeconds)} s for ${p.suffixRows} rows x ${num(p.suffixTokens / p.suffixRows)} tokens over ~${int(p.meanPastTokens)} past (${int(p.suffixTokens / p.suffixPassSeconds.median)} tok/s, ${num(p.suffixGflops)} GFLOP/s body+head) in ${p.counters.suffix.suffixPasses} pass(es), padding ${int(p.counters.suffix.paddedTokens)}, forked past ${mib(p.suffixForkBytes)}`
  );
}

export function formatMicro(micro: MicroResult[], engineSecondsPerDecision: number | undefined): string {
  const rows = micro.map((m) => {
    const perDecision = m.meanUs / m.decisionsPerOp;
    return [
      `  ${m.name}`,
      m.description,
      `${num(m.meanUs)} us`,
      `±${m.rme.toFixed(1)}%`,
      `${num(perDecision)} us`,
      engineSecondsPerDecision ? `${((perDecision / 1e6 / engineSecondsPerDecision) * 100).toPrecision(2)}%` : '-',
    ];
  });
  return table(['  case', 'what', 'per op', 'rme', 'per decision', 'of engine time/decision'], rows);
}

export function formatTargets(targets: TargetResult[]): string {
  return targets.map((t) => `  ${t.pass ? 'PASS' : 'MISS'}  ${t.name}: ${t.text}`).join('\n');
}

/** Writes the report as JSON into `dir` (created if missing); returns the file path. */
/** The q-quantile of samples (nearest rank). */
function quantile(samples: number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

export function formatLatency(latency: LatencyResult[]): string {
  return table(
    ['request', 'n', 'p50', 'p90', 'max'],
    latency.map((l) => [l.scenario, String(l.requests), l.ms.median.toFixed(2), quantile(l.ms.samples, 0.9).toFixed(2), l.ms.max.toFixed(2)]),
  );
}

export async function writeReport(report: BenchReport, dir: string): Promise<string> {
  makeDirectories(dir);
  const stamp = report.startedAt.replace(/[:.]/g, '-');
  const file = path.join(dir, `${stamp}.json`);
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}

export function formatReport(report: BenchReport, file: string): string {
  const lines: string[] = [];
  const m = report.model;
  lines.push('');
  lines.push(`decide bench  ${report.startedAt}  commit ${report.git.commit.slice(0, 12)}${report.git.dirty ? ' (dirty tree)' : ''}`);
  const dot = report.machine.int8DotProduct;
  const int8Flags = dot === undefined || dot === null ? '' : ` (int8 dot product: ${dot.length > 0 ? dot.join(', ') : 'none'})`;
  lines.push(`machine: ${report.machine.cpuModel}${int8Flags}, ${report.machine.cores} cores, ${(report.machine.memoryBytes / 2 ** 30).toFixed(0)} GiB; ${report.provider}, ${report.threads} thread(s); load average at start ${report.machine.loadAverageAtStart.map((x) => x.toFixed(2)).join(' ')}`);
  lines.push(
    `model: preset ${m.preset} (${m.shape.numLayers} layers, hidden ${m.shape.hiddenSize}, ${m.shape.numHeads} heads / ${m.shape.numKvHeads} KV heads x ${m.shape.headDim}, MLP ${m.shape.intermediateSize}, vocab ${m.shape.vocabSize}), ${String(report.options.dtype ?? 'fp32')}; ` +
      `params ${(m.params.total / 1e6).toFixed(1)}M = body ${(m.params.body / 1e6).toFixed(1)}M + embedding ${(m.params.embedding / 1e6).toFixed(1)}M + LM head ${(m.params.lmHead / 1e6).toFixed(1)}M`,
  );
  lines.push(`addon: sha256 ${report.addon.sha256.slice(0, 12)} built ${report.addon.mtime}${report.addon.changedDuringRun ? ' (REBUILT during the run: timings shared the CPU with a build)' : ''}`);
  lines.push(`graph: ${m.graphFile}${m.packsSuffixes ? ' (suffix rows packed per state)' : ' (one suffix row per question)'}; RSS after loading the engine: ${(report.rssAfterLoadBytes / 2 ** 20).toFixed(0)} MiB (the baseline session and both ORT arenas stay resident for the whole run, so peak RSS is the process's, per phase)`);
  if (m.int8 !== undefined) lines.push(`int8 path: ${m.int8.path}${m.int8.forced ? ' (forced)' : ''}: ${m.int8.reason}`);
  const probes = report.workloads.flatMap((w) => [...w.engine.probeGflops.samples, ...w.baseline.probeGflops.samples]);
  lines.push(
    `peak: ${report.peak.usedGflops.toFixed(1)} GFLOP/s ${report.peak.dtype ?? 'fp32'} MatMul via ONNX Runtime (at start: ${report.peak.shapes.map((s) => `${s.label}: median ${s.medianGflops.toFixed(1)}, max ${s.maxGflops.toFixed(1)}`).join('; ')}` +
      (probes.length > 0 ? `; probes before the ${probes.length} timed runs: ${Math.min(...probes).toFixed(0)}-${Math.max(...probes).toFixed(0)}` : '') +
      ')',
  );
  lines.push('');
  lines.push(`baseline: ${report.baselineDefinition}`);
  lines.push(`MFU: ${report.mfuDefinition}`);
  lines.push('');
  for (const w of report.workloads) {
    lines.push(formatWorkload(w));
    lines.push('');
  }
  if (report.workloads.some((w) => w.fp32Twin)) {
    lines.push(
      table(
        ['int8 vs fp32', 'int8 engine decisions/s', 'fp32 twin decisions/s', 'int8 / fp32', 'max |prob diff|', 'top option agrees'],
        report.workloads.map((w) => [
          w.workload,
          w.engine.decisionsPerSecond.median.toFixed(2),
          w.fp32Twin ? w.fp32Twin.decisionsPerSecond.median.toFixed(2) : '-',
          w.fp32Twin ? fx(w.fp32Twin.speedup.median) : '-',
          w.check.maxAbsProbDiff.toExponential(2),
          `${w.check.topAgreeing}/${w.check.rows}`,
        ]),
      ),
    );
    lines.push('');
  }
  if (report.workloads.length > 1) {
    lines.push(
      table(
        ['summary', 'engine decisions/s', 'baseline decisions/s', 'speedup', 'ideal', 'of ideal', 'engine MFU', 'baseline MFU'],
        report.workloads.map((w) => [
          w.workload,
          w.engine.decisionsPerSecond.median.toFixed(2),
          w.baseline.decisionsPerSecond.median.toFixed(2),
          `${w.speedup.toFixed(2)}x`,
          `${w.idealSpeedup.toFixed(2)}x`,
          w.fractionOfIdeal.toFixed(2),
          `${(w.mfu * 100).toFixed(1)}%`,
          `${(w.baseline.mfu.median * 100).toFixed(1)}%`,
        ]),
      ),
    );
    lines.push('');
  }
  if (report.profile.length > 0) {
    lines.push('engine passes (--profile):');
    for (const p of report.profile) lines.push(`  ${formatProfile(p)}`);
    lines.push('');
  }
  if (report.micro.length > 0) {
    const tickets = report.workloads.find((w) => w.workload === 'tickets');
    lines.push('TypeScript hot paths (benchmark.js; per decision vs the engine\'s time per decision on tickets):');
    lines.push(formatMicro(report.micro, tickets ? 1 / tickets.engine.decisionsPerSecond.median : undefined));
    lines.push('');
  }
  if (report.latency.length > 0) {
    lines.push(`POST /v1/decide over loopback HTTP, one request at a time (client side, ms):`);
    lines.push(formatLatency(report.latency));
    lines.push('');
  }
  for (const note of report.notes) lines.push(`note: ${note}`);
  lines.push('');
  lines.push('targets (reported, not asserted):');
  lines.push(formatTargets(report.targets));
  lines.push('');
  lines.push(`wrote ${path.relative(process.cwd(), file) || file} in ${report.durationSeconds.toFixed(0)} s`);
  return `${lines.join('\n')}\n`;
}
