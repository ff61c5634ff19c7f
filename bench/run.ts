/**
 * `npm run bench` / `decide bench`: in one process, on one generated model and the same inputs,
 *   1. the engine (prefix reuse, batched suffix pass), prefix cache cleared before each repetition;
 *   2. the fresh-scoring baseline (bench/baseline.ts) on the same graph file;
 *   3. the ideal speedup (fresh tokens / perfect-reuse tokens);
 *   4. the machine's limit (bench/peak.ts), from which the MFU of both systems follows.
 * The baseline's answers are checked against the engine's (1e-4) before anything is timed; a
 * mismatch ends the run without a report. Repetitions alternate which system runs first, so bursts
 * of noise on a shared machine hit both; the speedup is the median of per-repetition ratios.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

import { answerFromLogits, loadCalibration, type Calibration } from '../src/engine/calibrate.js';
import type { Engine, ScoreGroup, SuffixScore } from '../src/engine/engine.js';
import { LabelSet } from '../src/engine/labels.js';
import { ModelRuntime } from '../src/engine/model-runtime.js';
import type { NativeCounters } from '../src/engine/native.js';
import { PromptRenderer } from '../src/engine/prompt.js';
import { TextTokenizer } from '../src/engine/tokenizer.js';
import { GRAPH_VERSION, makeModel, paramCount, PRESETS, type ModelShape } from '../src/models/builder/index.js';
import { FreshBaseline, type BaselineRow, type BaselineStats } from './baseline.js';
import { runMicro, type MicroResult } from './micro.js';
import { measurePeak, peakShapes, type PeakProbe } from './peak.js';
import {
  evaluateTargets,
  formatMicro,
  formatProfile,
  formatTargets,
  formatWorkload,
  stat,
  table,
  writeReport,
  type BenchReport,
  type EngineCountersSummary,
  type ProfileResult,
  type SystemResult,
  type WorkloadResult,
} from './report.js';
import { BENCH_MODEL_ID, buildWorkload, freshRows, groupsOf, WORKLOAD_NAMES, workloadSpecs, type BenchItem, type Workload, type WorkloadName } from './workloads.js';

export interface BenchOptions {
  /** Builder preset of the generated model; default 'small'. */
  preset?: string;
  provider?: 'cpu' | 'cuda';
  /** Intra-op threads for the engine, the baseline and the peak probe; default: all cores. */
  threads?: number;
  /** Fewer states and repetitions (about 2 minutes instead of about 6). */
  quick?: boolean;
  workloads?: WorkloadName[];
  /** Timed repetitions per workload and system (after one untimed check pass); default 3, quick 2. */
  repetitions?: number;
  /** Seed of the generated text; default 1. */
  seed?: number;
  /** A model directory to use as it is (never built or replaced); default <package>/models/bench-<preset>, built when missing. */
  modelDir?: string;
  /** Where the JSON goes; default <package>/bench/results. */
  resultsDir?: string;
  /** Also time the engine's prefix pass and suffix pass separately (tickets, document). */
  profile?: boolean;
  /** Run the TypeScript micro-benchmarks; default true. */
  micro?: boolean;
  /** Progress lines (default: stderr). The report itself goes to stdout. */
  log?: (line: string) => void;
  out?: (text: string) => void;
}

/** The check failed: the benchmark does not report numbers for systems that disagree. */
export class BenchRefusedError extends Error {
  override name = 'BenchRefusedError';
}

/** Logits tolerance between the engine and the baseline (the engine's tested invariant). */
const CHECK_TOLERANCE = 1e-4;
/**
 * Padded tokens per baseline forward pass: the engine's default tokenBudget (its bound on padded
 * new tokens per pass), applied to the baseline's rows, whose tokens are all new.
 */
const BASELINE_PASS_TOKENS = 8192;
const MODEL_SEED = 1;

const MFU_DEFINITION =
  'MFU = model FLOPs / wall time / measured peak. Model FLOPs = 2 x (body params x tokens computed + LM-head params x decisions). ' +
  'Body params: the transformer layers and final norm (embedding excluded: it is a lookup). Tokens computed: real tokens run through the ' +
  'body (engine: prefix tokens not served from the prefix cache + every suffix token; baseline: every row\'s full prefix + suffix), padding ' +
  'excluded. LM-head params (hidden x vocab) count once per decision: both systems gather one position per row before the LM head. ' +
  'Attention score FLOPs (QK^T, softmax, PV) are not counted, as in the usual 2·N·D accounting; they grow with context, so long states ' +
  'lower the MFU of both systems. Peak: fp32 MatMul throughput of ONNX Runtime on this machine at the same threads (bench/peak.ts): the best ' +
  'median of two shapes measured at the start, and of the short probes taken right before every timed run (on a shared machine the ' +
  'capacity drifts; the probes show it, and the best of them is the machine\'s limit).';

const BASELINE_DEFINITION =
  'Fresh scoring through the onnxruntime-node JS API: every (state, question) is one full sequence (prefix + suffix ids) with an empty past, ' +
  `rows sorted by length and right-padded, batched per engine call in passes of at most ${BASELINE_PASS_TOKENS} padded tokens (the engine's ` +
  'default tokenBudget), label logits read at each row\'s last real position. It runs the SAME graph file as the engine (the LM-head-gathered ' +
  'rewrite, decide_logits_index = each row\'s last real position), so the speedup measured is prefix reuse and batching, not the LM-head rewrite.';

function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json')) || !existsSync(path.join(dir, 'CMakeLists.txt'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('bench: cannot find the package root');
    dir = parent;
  }
  return dir;
}

function gitInfo(root: string): { commit: string; dirty: boolean | null } {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return { commit, dirty: status.trim().length > 0 };
  } catch {
    return { commit: 'unknown', dirty: null };
  }
}

/** Identity of the native addon the engine loaded (the tree is shared: it may be rebuilt mid-run). */
function addonInfo(root: string): { path: string; sha256: string; mtime: string } {
  const file = path.join(root, 'build', 'Release', 'decide_native.node');
  try {
    return { path: file, sha256: createHash('sha256').update(readFileSync(file)).digest('hex'), mtime: statSync(file).mtime.toISOString() };
  } catch {
    return { path: file, sha256: 'unknown', mtime: 'unknown' };
  }
}

/** Builds the bench's own model directory unless it already holds this preset (fp32, seed MODEL_SEED). */
async function ensureModel(preset: string, dir: string, log: (s: string) => void): Promise<void> {
  if (PRESETS[preset] === undefined) throw new Error(`bench: unknown preset '${preset}' (known: ${Object.keys(PRESETS).join(', ')})`);
  try {
    const decision = JSON.parse(readFileSync(path.join(dir, 'decision.json'), 'utf8')) as { builder?: Record<string, unknown> };
    const b = decision.builder ?? {};
    const graph = path.join(dir, 'onnx', 'model.onnx');
    if (b.preset === preset && b.seed === MODEL_SEED && b.graphVersion === GRAPH_VERSION && (b.dtype ?? 'fp32') === 'fp32' && b.shapeOverrides === undefined && existsSync(graph)) return;
  } catch {
    // missing or unreadable: build
  }
  const started = performance.now();
  log(`building model preset '${preset}' into ${dir} ...`);
  await makeModel({ preset, outDir: dir, seed: MODEL_SEED, dtype: 'fp32' });
  log(`  built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

function shapeOf(raw: Record<string, unknown>): ModelShape {
  const n = (key: string) => Number(raw[key]);
  return {
    numLayers: n('num_hidden_layers'),
    hiddenSize: n('hidden_size'),
    numHeads: n('num_attention_heads'),
    numKvHeads: n('num_key_value_heads'),
    headDim: n('head_dim'),
    intermediateSize: n('intermediate_size'),
    vocabSize: n('vocab_size'),
    maxPositionEmbeddings: n('max_position_embeddings'),
    ropeTheta: n('rope_theta'),
    rmsNormEps: n('rms_norm_eps'),
    tieWordEmbeddings: raw.tie_word_embeddings === true,
  };
}

/**
 * Highest RSS of the process, sampled every 5 ms by a worker thread: onnxruntime-node's
 * session.run blocks the main thread, so a main-thread timer would miss the baseline's peaks.
 */
class RssSampler {
  private readonly shared = new BigInt64Array(new SharedArrayBuffer(16)); // [peak bytes, stop flag]
  private readonly worker: Worker;

  constructor() {
    this.worker = new Worker(
      `const { workerData } = require('node:worker_threads');
       const v = new BigInt64Array(workerData);
       const tick = () => {
         const rss = BigInt(process.memoryUsage.rss());
         let cur = Atomics.load(v, 0);
         while (rss > cur) {
           const prev = Atomics.compareExchange(v, 0, cur, rss);
           if (prev === cur) break;
           cur = prev;
         }
         if (Atomics.load(v, 1) === 0n) setTimeout(tick, 5);
       };
       tick();`,
      { eval: true, workerData: this.shared.buffer },
    );
    this.worker.unref();
  }

  reset(): void {
    Atomics.store(this.shared, 0, BigInt(process.memoryUsage.rss()));
  }

  peak(): number {
    return Math.max(Number(Atomics.load(this.shared, 0)), process.memoryUsage.rss());
  }

  async stop(): Promise<void> {
    Atomics.store(this.shared, 1, 1n);
    await this.worker.terminate();
  }
}

function zeroCounters(): EngineCountersSummary {
  return { prefixTokensComputed: 0, prefixTokensReused: 0, suffixTokens: 0, prefixPasses: 0, suffixPasses: 0, paddedTokens: 0 };
}

function addCounters(into: EngineCountersSummary, c: NativeCounters): void {
  into.prefixTokensComputed += c.prefixTokensComputed;
  into.prefixTokensReused += c.prefixTokensReused;
  into.suffixTokens += c.suffixTokens;
  into.prefixPasses += c.prefixPasses;
  into.suffixPasses += c.suffixPasses;
  into.paddedTokens += c.paddedTokens;
}

interface EngineRun {
  seconds: number;
  /** Process CPU seconds / wall seconds during the run: below the thread count when the CPU was shared. */
  coresBusy: number;
  /** Peak probe right before this run, GFLOP/s (0 for untimed runs). */
  probeGflops: number;
  scores: SuffixScore[][];
  counters: EngineCountersSummary;
  maxEventLoopDelayMs: number;
}

interface BaselineRun {
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
async function runEngine(engine: Engine, workload: Workload): Promise<EngineRun> {
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
async function runBaseline(baseline: FreshBaseline, workload: Workload): Promise<BaselineRun> {
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
function compare(workload: Workload, engine: EngineRun, baseline: BaselineRun, calibration: Calibration) {
  let maxAbsLogitDiff = 0;
  let maxAbsProbDiff = 0;
  let worst = '';
  let row = 0;
  workload.items.forEach((item, g) => {
    item.normalized.questions.forEach((q, i) => {
      const a = engine.scores[g]![i]!.labelLogits;
      const b = baseline.labelLogits[row]!;
      for (let k = 0; k < a.length; k++) {
        const d = Math.abs(a[k]! - b[k]!);
        if (!(d <= maxAbsLogitDiff)) {
          maxAbsLogitDiff = Number.isNaN(d) ? Infinity : d;
          worst = `state ${g}, question '${q.id}', option ${k}: engine ${a[k]}, baseline ${b[k]}`;
        }
      }
      const t = calibration.temperature[q.type];
      const pa = answerFromLogits(q, a, t).probs;
      const pb = answerFromLogits(q, b, t).probs;
      for (const key of Object.keys(pa)) maxAbsProbDiff = Math.max(maxAbsProbDiff, Math.abs(pa[key]! - pb[key]!));
      row += 1;
    });
  });
  return { rows: row, maxAbsLogitDiff, maxAbsProbDiff, worst };
}

export async function runBench(options: BenchOptions = {}): Promise<BenchReport> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  const startedAt = new Date();
  const t0 = performance.now();
  const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(0)} s`;
  const root = packageRoot();
  const preset = options.preset ?? 'small';
  const provider = options.provider ?? 'cpu';
  const threads = options.threads ?? os.availableParallelism();
  const quick = options.quick ?? false;
  const repetitions = options.repetitions ?? (quick ? 2 : 3);
  const seed = options.seed ?? 1;
  const names = options.workloads ?? [...WORKLOAD_NAMES];
  const modelDir = path.resolve(options.modelDir ?? path.join(root, 'models', `bench-${preset}`));
  const resultsDir = options.resultsDir ?? path.join(root, 'bench', 'results');
  if (!Number.isInteger(threads) || threads < 1) throw new Error('bench: threads must be a positive integer');
  if (!Number.isInteger(repetitions) || repetitions < 1) throw new Error('bench: repetitions must be a positive integer');
  const loadAverageAtStart = os.loadavg();
  if (loadAverageAtStart[0]! > 0.5 * os.availableParallelism()) {
    log(`warning: 1-minute load average ${loadAverageAtStart[0]!.toFixed(2)} on ${os.availableParallelism()} cores: something else ran recently or is running; timings may be noisy`);
  }

  log(`decide bench: preset ${preset}, ${provider}, ${threads} thread(s), ${quick ? 'quick' : 'default'} sizes, ${repetitions} timed repetition(s), workloads ${names.join(', ')}`);
  if (options.modelDir === undefined) {
    await ensureModel(preset, modelDir, log);
  } else if (!existsSync(path.join(modelDir, 'config.json'))) {
    throw new Error(`bench: ${modelDir} is not a model directory (no config.json)`);
  }

  const tokenizer = await TextTokenizer.load(modelDir);
  const addon = addonInfo(root);
  const runtime = await ModelRuntime.load(BENCH_MODEL_ID, modelDir, { engine: { threads, provider } });
  const sampler = new RssSampler();
  const rssAfterLoad = process.memoryUsage.rss();
  let probe: PeakProbe | undefined;
  try {
    const engine = runtime.engine;
    const shape = shapeOf(engine.config.raw);
    const params = paramCount(shape);
    const headFlopParams = shape.hiddenSize * shape.vocabSize;
    const calibration = await loadCalibration(modelDir);
    log(`model ${modelDir}: ${shape.numLayers} layers, hidden ${shape.hiddenSize}, ${(params.total / 1e6).toFixed(1)}M params (body ${(params.body / 1e6).toFixed(1)}M); graph ${path.basename(engine.info.graphFile)}, gathered LM head: ${engine.info.hasLogitsIndex}`);

    log(`[${elapsed()}] measuring the fp32 MatMul peak ...`);
    const measured = await measurePeak({ threads, provider, quick }, peakShapes(shape.hiddenSize, shape.intermediateSize));
    const peak = measured.result;
    probe = measured.probe;
    log(`  peak ${peak.gflops.toFixed(1)} GFLOP/s (${peak.shapes.map((s) => `${s.label}: ${s.medianGflops.toFixed(1)}`).join('; ')})`);

    const baseline = await FreshBaseline.load({
      graphFile: engine.info.graphFile,
      threads,
      provider,
      numLayers: shape.numLayers,
      numKvHeads: shape.numKvHeads,
      headDim: shape.headDim,
      vocabSize: shape.vocabSize,
      passTokens: BASELINE_PASS_TOKENS,
    });

    try {
      const specs = workloadSpecs(quick);
      const countTokens = async (text: string) => (await tokenizer.encode(text)).length;
      const workloads: Workload[] = [];
      for (const name of names) {
        const w = await buildWorkload(specs[name], runtime, seed, countTokens);
        workloads.push(w);
        log(`workload ${name}: ${w.tokens.states} states, ${w.tokens.decisions} decisions, fresh ${w.tokens.freshTokens} tokens, ideal speedup ${w.tokens.idealSpeedup.toFixed(2)}x`);
      }

      // The check pass doubles as the warm-up of both systems; nothing is timed before it passes.
      const checks = new Map<Workload, ReturnType<typeof compare>>();
      const checkScores = new Map<Workload, SuffixScore[][]>();
      for (const w of workloads) {
        log(`[${elapsed()}] check ${w.spec.name}: engine vs baseline on all ${w.tokens.decisions} decisions ...`);
        const e = await runEngine(engine, w);
        const b = await runBaseline(baseline, w);
        const c = compare(w, e, b, calibration);
        log(`  max |logit diff| ${c.maxAbsLogitDiff.toExponential(2)}, max |prob diff| ${c.maxAbsProbDiff.toExponential(2)} (engine ${e.seconds.toFixed(1)} s, baseline ${b.seconds.toFixed(1)} s, untimed)`);
        if (!(c.maxAbsLogitDiff <= CHECK_TOLERANCE && c.maxAbsProbDiff <= CHECK_TOLERANCE)) {
          throw new BenchRefusedError(
            `the engine and the baseline disagree on ${w.spec.name} (max |logit diff| ${c.maxAbsLogitDiff}, max |prob diff| ${c.maxAbsProbDiff}, tolerance ${CHECK_TOLERANCE}; worst: ${c.worst}); refusing to report timings`,
          );
        }
        checks.set(w, c);
        checkScores.set(w, e.scores);
      }

      const timed: { w: Workload; engineRuns: EngineRun[]; baselineRuns: BaselineRun[]; enginePeak: number; baselinePeak: number }[] = [];
      for (const w of workloads) {
        const engineRuns: EngineRun[] = [];
        const baselineRuns: BaselineRun[] = [];
        let enginePeak = 0;
        let baselinePeak = 0;
        for (let r = 0; r < repetitions; r++) {
          const engineFirst = r % 2 === 0;
          for (const which of engineFirst ? ['engine', 'baseline'] : ['baseline', 'engine']) {
            const probeGflops = await probe.quickMedian(quick ? 0.2 : 0.3);
            sampler.reset();
            if (which === 'engine') {
              engineRuns.push({ ...(await runEngine(engine, w)), probeGflops });
              enginePeak = Math.max(enginePeak, sampler.peak());
            } else {
              baselineRuns.push({ ...(await runBaseline(baseline, w)), probeGflops });
              baselinePeak = Math.max(baselinePeak, sampler.peak());
            }
          }
          const e = engineRuns[r]!;
          const b = baselineRuns[r]!;
          log(`[${elapsed()}] ${w.spec.name} repetition ${r + 1}/${repetitions}: engine ${e.seconds.toFixed(2)} s (${e.coresBusy.toFixed(2)} cores busy, peak probe ${e.probeGflops.toFixed(0)} GFLOP/s), baseline ${b.seconds.toFixed(2)} s (${b.coresBusy.toFixed(2)} cores, probe ${b.probeGflops.toFixed(0)})`);
        }
        timed.push({ w, engineRuns, baselineRuns, enginePeak, baselinePeak });
      }
      const usedGflops = Math.max(peak.gflops, ...timed.flatMap((t) => [...t.engineRuns, ...t.baselineRuns].map((r) => r.probeGflops)));
      const results: WorkloadResult[] = timed.map((t) =>
        summarize(t.w, t.engineRuns, t.baselineRuns, t.enginePeak, t.baselinePeak, checks.get(t.w)!, params.body, headFlopParams, usedGflops),
      );

      const profile: ProfileResult[] = [];
      if (options.profile) {
        for (const w of workloads.filter((x) => x.spec.name !== 'single')) {
          log(`[${elapsed()}] profile ${w.spec.name}: prefix pass vs suffix pass ...`);
          profile.push(await profilePasses(engine, w, repetitions, params.body, headFlopParams));
        }
      }

      let micro: MicroResult[] = [];
      const tickets = workloads.find((w) => w.spec.name === 'tickets') ?? workloads.find((w) => w.spec.questionsPerState > 1) ?? workloads[0];
      if ((options.micro ?? true) && tickets) {
        log(`[${elapsed()}] micro-benchmarks (benchmark.js) ...`);
        const renderer = await PromptRenderer.load(modelDir);
        const labels = await LabelSet.build(tokenizer, { context: renderer.labelContext });
        micro = await runMicro({
          runtime,
          tokenizer,
          renderer,
          labels,
          calibration,
          item: tickets.items[0]!,
          scores: checkScores.get(tickets)![0]!,
          call: tickets.calls[0]!,
          quick,
        });
      }

      const targets = evaluateTargets(results);
      const addonAtEnd = addonInfo(root);
      if (addonAtEnd.sha256 !== addon.sha256) {
        log(`warning: ${addon.path} was rebuilt during the run (${addon.mtime} -> ${addonAtEnd.mtime}); this process kept the one it loaded, but other work (a build) shared the CPU`);
      }
      const report: BenchReport = {
        schema: 'decide-bench/1',
        startedAt: startedAt.toISOString(),
        durationSeconds: (performance.now() - t0) / 1000,
        options: { preset, provider, threads, quick, repetitions, seed, workloads: names, profile: options.profile ?? false, modelDir },
        rssAfterLoadBytes: rssAfterLoad,
        machine: {
          cpuModel: os.cpus()[0]?.model ?? 'unknown',
          cores: os.availableParallelism(),
          memoryBytes: os.totalmem(),
          platform: `${os.platform()} ${os.release()} ${os.arch()}`,
          node: process.version,
          loadAverageAtStart,
        },
        threads,
        provider,
        git: gitInfo(root),
        addon: { ...addon, changedDuringRun: addonAtEnd.sha256 !== addon.sha256 },
        model: {
          preset,
          dir: modelDir,
          graphFile: engine.info.graphFile,
          shape: { ...shape },
          params: { ...params, lmHeadFlopParams: headFlopParams },
        },
        peak: { ...peak, usedGflops },
        mfuDefinition: MFU_DEFINITION,
        baselineDefinition: BASELINE_DEFINITION,
        notes: notesFor(results),
        workloads: results,
        profile,
        micro,
        targets,
      };
      const file = await writeReport(report, resultsDir);
      out(formatReport(report, file));
      return report;
    } finally {
      await baseline.release();
    }
  } finally {
    await probe?.release();
    await sampler.stop();
    runtime.close();
  }
}

function summarize(
  w: Workload,
  engineRuns: EngineRun[],
  baselineRuns: BaselineRun[],
  enginePeak: number,
  baselinePeak: number,
  check: ReturnType<typeof compare>,
  bodyParams: number,
  headFlopParams: number,
  peakGflops: number,
): WorkloadResult {
  const t = w.tokens;
  const c = engineRuns[0]!.counters;
  const engineComputed = c.prefixTokensComputed + c.suffixTokens;
  const engineFlops = 2 * (bodyParams * engineComputed + headFlopParams * t.decisions);
  const bs = baselineRuns[0]!.stats;
  const baselineFlops = 2 * (bodyParams * bs.computedTokens + headFlopParams * t.decisions);
  const system = (runs: (EngineRun | BaselineRun)[], computed: number, padded: number, passes: number, flops: number, peakRss: number): SystemResult => {
    const secs = runs.map((r) => r.seconds);
    return {
      seconds: stat(secs),
      decisionsPerSecond: stat(secs.map((s) => t.decisions / s)),
      tokensPerSecondComputed: stat(secs.map((s) => computed / s)),
      tokensPerSecondEffective: stat(secs.map((s) => t.freshTokens / s)),
      mfu: stat(secs.map((s) => flops / s / (peakGflops * 1e9))),
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
    check: { rows: check.rows, maxAbsLogitDiff: check.maxAbsLogitDiff, maxAbsProbDiff: check.maxAbsProbDiff, tolerance: CHECK_TOLERANCE },
  };
}

/**
 * The engine's two passes timed apart: a call whose groups carry a 1-token suffix each (the prefix
 * pass, plus a negligible suffix pass), then the real call with every prefix cached (the suffix
 * pass alone).
 */
async function profilePasses(engine: Engine, w: Workload, repetitions: number, bodyParams: number, headFlopParams: number): Promise<ProfileResult> {
  const full: ScoreGroup[] = w.items.map((item) => item.prepared.group);
  const prefixOnly: ScoreGroup[] = full.map((g) => ({
    prefix: g.prefix,
    suffixes: [{ tokens: g.suffixes[0]!.tokens.subarray(g.suffixes[0]!.tokens.length - 1), labels: g.suffixes[0]!.labels }],
  }));
  const prefixSeconds: number[] = [];
  const suffixSeconds: number[] = [];
  let prefixCounters = zeroCounters();
  let suffixCounters = zeroCounters();
  for (let r = 0; r < repetitions + 1; r++) {
    engine.clearPrefixCache();
    const pc = zeroCounters();
    const sc = zeroCounters();
    let t = performance.now();
    for (const call of w.calls) {
      const groups = call.map((item) => prefixOnly[w.items.indexOf(item)]!);
      addCounters(pc, (await engine.scoreBatch(groups)).counters);
    }
    const p = (performance.now() - t) / 1000;
    t = performance.now();
    for (const call of w.calls) addCounters(sc, (await engine.scoreBatch(groupsOf(call))).counters);
    const s = (performance.now() - t) / 1000;
    if (r === 0) continue; // warm-up
    prefixSeconds.push(p);
    suffixSeconds.push(s);
    prefixCounters = pc;
    suffixCounters = sc;
  }
  const rows = w.tokens.decisions;
  const pastTokens = w.items.reduce((n, item) => n + item.prepared.group.prefix.length * item.prepared.group.suffixes.length, 0);
  const prefixStat = stat(prefixSeconds);
  const suffixStat = stat(suffixSeconds);
  return {
    workload: w.spec.name,
    prefixPassSeconds: prefixStat,
    suffixPassSeconds: suffixStat,
    prefixTokens: prefixCounters.prefixTokensComputed,
    suffixTokens: suffixCounters.suffixTokens,
    suffixRows: rows,
    meanPastTokens: pastTokens / rows,
    counters: { prefix: prefixCounters, suffix: suffixCounters },
    prefixGflops: (2 * bodyParams * prefixCounters.prefixTokensComputed) / prefixStat.median / 1e9,
    suffixGflops: (2 * (bodyParams * suffixCounters.suffixTokens + headFlopParams * rows)) / suffixStat.median / 1e9,
    suffixForkBytes: pastTokens * engine.info.kvBytesPerToken,
  };
}

function notesFor(results: WorkloadResult[]): string[] {
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

function formatReport(report: BenchReport, file: string): string {
  const lines: string[] = [];
  const m = report.model;
  lines.push('');
  lines.push(`decide bench  ${report.startedAt}  commit ${report.git.commit.slice(0, 12)}${report.git.dirty ? ' (dirty tree)' : ''}`);
  lines.push(`machine: ${report.machine.cpuModel}, ${report.machine.cores} cores, ${(report.machine.memoryBytes / 2 ** 30).toFixed(0)} GiB; ${report.provider}, ${report.threads} thread(s); load average at start ${report.machine.loadAverageAtStart.map((x) => x.toFixed(2)).join(' ')}`);
  lines.push(
    `model: preset ${m.preset} (${m.shape.numLayers} layers, hidden ${m.shape.hiddenSize}, ${m.shape.numHeads} heads / ${m.shape.numKvHeads} KV heads x ${m.shape.headDim}, MLP ${m.shape.intermediateSize}, vocab ${m.shape.vocabSize}), fp32; ` +
      `params ${(m.params.total / 1e6).toFixed(1)}M = body ${(m.params.body / 1e6).toFixed(1)}M + embedding ${(m.params.embedding / 1e6).toFixed(1)}M + LM head ${(m.params.lmHead / 1e6).toFixed(1)}M`,
  );
  lines.push(`addon: sha256 ${report.addon.sha256.slice(0, 12)} built ${report.addon.mtime}${report.addon.changedDuringRun ? ' (REBUILT during the run: timings shared the CPU with a build)' : ''}`);
  lines.push(`graph: ${m.graphFile}; RSS after loading the engine: ${(report.rssAfterLoadBytes / 2 ** 20).toFixed(0)} MiB (the baseline session and both ORT arenas stay resident for the whole run, so peak RSS is the process's, per phase)`);
  const probes = report.workloads.flatMap((w) => [...w.engine.probeGflops.samples, ...w.baseline.probeGflops.samples]);
  lines.push(
    `peak: ${report.peak.usedGflops.toFixed(1)} GFLOP/s fp32 MatMul via ONNX Runtime (at start: ${report.peak.shapes.map((s) => `${s.label}: median ${s.medianGflops.toFixed(1)}, max ${s.maxGflops.toFixed(1)}`).join('; ')}` +
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
  for (const note of report.notes) lines.push(`note: ${note}`);
  lines.push('');
  lines.push('targets (reported, not asserted):');
  lines.push(formatTargets(report.targets));
  lines.push('');
  lines.push(`wrote ${path.relative(process.cwd(), file) || file} in ${report.durationSeconds.toFixed(0)} s`);
  return `${lines.join('\n')}\n`;
}
