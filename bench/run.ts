/**
 * `npm run bench` / `decide bench`: in one process, on one generated model and the same inputs,
 *   1. the engine (prefix reuse, batched suffix pass), prefix cache cleared before each repetition;
 *   2. the fresh-scoring baseline (bench/baseline.ts) on the same graph file;
 *   3. the ideal speedup (fresh tokens / perfect-reuse tokens);
 *   4. the machine's limit (bench/peak.ts), from which the MFU of both systems follows;
 *   5. the latency of one POST /v1/decide over real HTTP (bench/http-latency.ts).
 * This file orchestrates: the order of work, the options and the output; each piece has its own
 * file (README, "Where things are").
 * Both systems' answers are checked before anything is timed (bench/agreement.ts: fp32 on the CPU,
 * engine against baseline within 1e-4; otherwise both against the fp32 CPU engine, in probabilities,
 * within the dtype's tolerance); a mismatch ends the run without a report. Repetitions alternate which system runs first, so bursts
 * of noise on a shared machine hit both; the speedup is the median of per-repetition ratios.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { loadCalibration } from '../src/runtime/calibrate.js';
import { cpuInt8Support, int8SpeedNote } from '../src/engine/cpu-int8.js';
import { Engine, type EngineOptions, type SuffixScore } from '../src/engine/engine.js';
import { LabelSet } from '../src/runtime/labels.js';
import { ModelRuntime } from '../src/runtime/model-runtime.js';
import { PromptRenderer } from '../src/runtime/prompt.js';
import { TextTokenizer } from '../src/runtime/tokenizer.js';
import { computeDtype, MODEL_DTYPES, paramCount, type ModelDtype } from '../src/models/builder/index.js';
import { deriveFusedGraph } from '../src/models/fused-graph.js';
import { agreementPlan, agrees, baselineRows, compareRows, engineRows, type CheckResult } from './agreement.js';
import { FreshBaseline } from './baseline.js';
import { ensureModel } from './bench-model.js';
import { MFU_DEFINITION, shapeOf } from './flops.js';
import { measureHttpLatency } from './http-latency.js';
import type { MicroResult } from './micro.js';
import { measurePeak, peakShapes, type PeakProbe } from './peak.js';
import { profilePasses } from './profile.js';
import { addonInfo, gitInfo, machineInfo, packageRoot } from './provenance.js';
import { evaluateTargets, formatReport, writeReport, type BenchReport, type ProfileResult, type WorkloadResult } from './report.js';
import { RssSampler } from './rss-sampler.js';
import { notesFor, summarize } from './summarize.js';
import { BASELINE_DEFINITION, BASELINE_PASS_TOKENS, runBaseline, runEngine, type BaselineRun, type EngineRun } from './systems.js';
import { BENCH_MODEL_ID, buildWorkload, WORKLOAD_NAMES, workloadSpecs, type Workload, type WorkloadName } from './workloads.js';

export interface BenchOptions {
  /** Builder preset of the generated model; default 'small'. */
  preset?: string;
  provider?: 'cpu' | 'cuda';
  /**
   * Weights and activations of the generated model; default 'fp32'. 'int8' (int8 weights, fp32
   * activations) also times the fp32 twin's engine in every repetition and reports the int8
   * engine's decisions/s against it, with the agreement of their answers.
   */
  dtype?: ModelDtype;
  /**
   * The engine's question layout on the packing graph (the bench model is built with segment ids,
   * as make-model and import-model write by default): true packs a state's questions into rows,
   * false forks the state's KV into a row per question; default the engine's own (packed on CUDA,
   * forked on the CPU; EngineLoadOptions.packSuffixes).
   */
  packing?: boolean;
  /** The other engine options (`decide bench`'s engine flags) for the engine under test; provider, threads and packing above win. */
  engine?: EngineOptions;
  /**
   * The fp32 twin the check compares a non-fp32 or CUDA run with (see agreement.ts); default
   * <package>/models/bench-<preset>, built when missing. Needed with modelDir in such runs.
   */
  referenceModelDir?: string;
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
  /** Measure the latency of one POST /v1/decide over real HTTP; default true. */
  latency?: boolean;
  /** Progress lines (default: stderr). The report itself goes to stdout. */
  log?: (line: string) => void;
  out?: (text: string) => void;
}

/** The check failed: the benchmark does not report numbers for systems that disagree. */
export class BenchRefusedError extends Error {
  override name = 'BenchRefusedError';
}

/**
 * On CUDA the baseline (onnxruntime-node, whose CUDA options are the device id alone) would run its
 * fp32 MatMuls in TF32, ONNX Runtime's default there: 10-bit mantissas, logits ~5e-3 from the fp32
 * CPU engine on the 0.6B model, and the agreement check refuses to time it. The engine turns TF32
 * off itself (use_tf32 0). NVIDIA's libraries read NVIDIA_TF32_OVERRIDE=0 as TF32 off whatever a
 * caller asked, so both sides compute fp32 as fp32; set before any CUDA library starts (a value the
 * caller gave is kept). fp16 runs do not use TF32 and are not affected.
 */
function disableTf32(): void {
  process.env.NVIDIA_TF32_OVERRIDE ??= '0';
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
  const dtype = options.dtype ?? 'fp32';
  if (!MODEL_DTYPES.includes(dtype)) throw new Error(`bench: dtype must be ${MODEL_DTYPES.join(', ')}, got '${String(dtype)}'`);
  const packing = options.packing;
  if (provider === 'cuda') disableTf32();
  const fp32Dir = path.join(root, 'models', `bench-${preset}`);
  const modelDir = path.resolve(options.modelDir ?? (dtype === 'fp32' ? fp32Dir : `${fp32Dir}-${dtype}`));
  const plan = agreementPlan(dtype, provider);
  const referenceDir =
    plan.reference === 'baseline' ? undefined : path.resolve(options.referenceModelDir ?? (options.modelDir === undefined ? fp32Dir : ''));
  if (referenceDir === '' || referenceDir === path.resolve('')) {
    throw new Error(`bench: a ${dtype} run on ${provider} is checked against the fp32 CPU engine on the model's fp32 twin: give it with --reference-dir`);
  }
  const resultsDir = options.resultsDir ?? path.join(root, 'bench', 'results');
  if (!Number.isInteger(threads) || threads < 1) throw new Error('bench: threads must be a positive integer');
  if (!Number.isInteger(repetitions) || repetitions < 1) throw new Error('bench: repetitions must be a positive integer');
  const loadAverageAtStart = os.loadavg();
  if (loadAverageAtStart[0]! > 0.5 * os.availableParallelism()) {
    log(`warning: 1-minute load average ${loadAverageAtStart[0]!.toFixed(2)} on ${os.availableParallelism()} cores: something else ran recently or is running; timings may be noisy`);
  }

  log(`decide bench: preset ${preset} ${dtype}, ${provider}, ${threads} thread(s), ${quick ? 'quick' : 'default'} sizes, ${repetitions} timed repetition(s), workloads ${names.join(', ')}`);
  if (dtype === 'int8' && provider === 'cpu') {
    const note = int8SpeedNote(cpuInt8Support());
    if (note !== undefined) log(`note: ${note}`);
  }
  if (options.modelDir === undefined) {
    await ensureModel(preset, modelDir, dtype, log);
  } else if (!existsSync(path.join(modelDir, 'config.json'))) {
    throw new Error(`bench: ${modelDir} is not a model directory (no config.json)`);
  }

  if (referenceDir !== undefined && options.referenceModelDir === undefined) await ensureModel(preset, referenceDir, 'fp32', log);

  const tokenizer = await TextTokenizer.load(modelDir);
  const addon = addonInfo(root);
  const runtime = await ModelRuntime.load(BENCH_MODEL_ID, modelDir, {
    engine: { ...options.engine, threads, provider, graphDeriver: deriveFusedGraph, ...(packing === undefined ? {} : { packSuffixes: packing }) },
  });
  const sampler = new RssSampler();
  const rssAfterLoad = process.memoryUsage.rss();
  let probe: PeakProbe | undefined;
  try {
    const engine = runtime.engine;
    const shape = shapeOf(engine.config.raw);
    const params = paramCount(shape);
    const headFlopParams = shape.hiddenSize * shape.vocabSize;
    const calibration = await loadCalibration(modelDir);
    log(`model ${modelDir}: ${shape.numLayers} layers, hidden ${shape.hiddenSize}, ${(params.total / 1e6).toFixed(1)}M params (body ${(params.body / 1e6).toFixed(1)}M); graph ${path.basename(engine.info.graphFile)}, gathered LM head: ${engine.info.hasLogitsIndex}, packed suffix rows: ${engine.info.packsSuffixes}, decoder graph: ${engine.info.attention.graph} (${engine.info.attention.source})`);
    if (engine.info.int8 !== undefined) log(`int8 path: ${engine.info.int8.path} (${engine.info.int8.reason})`);

    log(`[${elapsed()}] measuring the ${computeDtype(dtype)} MatMul peak ...`);
    const measured = await measurePeak({ threads, provider, dtype: computeDtype(dtype), quick }, peakShapes(shape.hiddenSize, shape.intermediateSize));
    const peak = measured.result;
    probe = measured.probe;
    log(`  peak ${peak.gflops.toFixed(1)} GFLOP/s (${peak.shapes.map((s) => `${s.label}: ${s.medianGflops.toFixed(1)}`).join('; ')})`);

    const baseline = await FreshBaseline.load({
      graphFile: engine.info.graphFile,
      hasEngineOps: engine.info.int8?.path === 'u8s8',
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
      const checks = new Map<Workload, CheckResult>();
      const checkScores = new Map<Workload, SuffixScore[][]>();
      const reference = referenceDir === undefined ? undefined : await Engine.load({ modelDir: referenceDir, provider: 'cpu', threads });
      // int8: the fp32 twin's engine is timed beside the int8 one (same threads, same calls).
      const twin = dtype === 'int8' ? reference : undefined;
      try {
        for (const w of workloads) {
          log(`[${elapsed()}] check ${w.spec.name}: engine and baseline on all ${w.tokens.decisions} decisions, against the ${plan.reference} ...`);
          const e = await runEngine(engine, w);
          const b = await runBaseline(baseline, w);
          let c: CheckResult;
          if (reference === undefined) {
            c = { ...compareRows(w, engineRows(e), baselineRows(b), calibration), plan };
          } else {
            const r = engineRows(await runEngine(reference, w));
            const vsEngine = compareRows(w, engineRows(e), r, calibration);
            const vsBaseline = compareRows(w, baselineRows(b), r, calibration);
            c = { ...vsEngine, plan, baseline: vsBaseline };
            log(`  baseline vs the fp32 CPU engine: max |prob diff| ${vsBaseline.maxAbsProbDiff.toExponential(2)}`);
          }
          log(`  max |logit diff| ${c.maxAbsLogitDiff.toExponential(2)}, max |prob diff| ${c.maxAbsProbDiff.toExponential(2)}, top option agrees on ${c.topAgreeing}/${c.rows} rows (engine ${e.seconds.toFixed(1)} s, baseline ${b.seconds.toFixed(1)} s, untimed)`);
          const failed = !agrees(c, plan) ? 'the engine' : c.baseline !== undefined && !agrees(c.baseline, plan) ? 'the baseline' : undefined;
          if (failed !== undefined) {
            const worst = failed === 'the engine' ? c : c.baseline!;
            throw new BenchRefusedError(
              `${failed} disagrees with the ${plan.reference} on ${w.spec.name} (max |logit diff| ${worst.maxAbsLogitDiff}, max |prob diff| ${worst.maxAbsProbDiff}, ` +
                `tolerance: ${plan.logitTolerance === undefined ? '' : `logits ${plan.logitTolerance}, `}probabilities ${plan.probTolerance}; worst: ${worst.worst}); refusing to report timings`,
            );
          }
          checks.set(w, c);
          checkScores.set(w, e.scores);
        }
      } catch (err) {
        reference?.close();
        throw err;
      }
      if (twin === undefined) reference?.close();

      const timed: { w: Workload; engineRuns: EngineRun[]; baselineRuns: BaselineRun[]; twinRuns: EngineRun[]; enginePeak: number; baselinePeak: number }[] = [];
      try {
      for (const w of workloads) {
        const engineRuns: EngineRun[] = [];
        const baselineRuns: BaselineRun[] = [];
        const twinRuns: EngineRun[] = [];
        let enginePeak = 0;
        let baselinePeak = 0;
        for (let r = 0; r < repetitions; r++) {
          const engineFirst = r % 2 === 0;
          const order = engineFirst ? ['engine', 'baseline'] : ['baseline', 'engine'];
          // The twin runs right after (or before) the int8 engine, so both see the same machine.
          if (twin !== undefined) order.splice(order.indexOf('engine') + (engineFirst ? 1 : 0), 0, 'twin');
          for (const which of order) {
            const probeGflops = await probe.quickMedian(quick ? 0.2 : 0.3);
            sampler.reset();
            if (which === 'twin') {
              twinRuns.push({ ...(await runEngine(twin!, w)), probeGflops });
            } else if (which === 'engine') {
              engineRuns.push({ ...(await runEngine(engine, w)), probeGflops });
              enginePeak = Math.max(enginePeak, sampler.peak());
            } else {
              baselineRuns.push({ ...(await runBaseline(baseline, w)), probeGflops });
              baselinePeak = Math.max(baselinePeak, sampler.peak());
            }
          }
          const e = engineRuns[r]!;
          const b = baselineRuns[r]!;
          const tw = twinRuns[r];
          log(
            `[${elapsed()}] ${w.spec.name} repetition ${r + 1}/${repetitions}: engine ${e.seconds.toFixed(2)} s (${e.coresBusy.toFixed(2)} cores busy, peak probe ${e.probeGflops.toFixed(0)} GFLOP/s), baseline ${b.seconds.toFixed(2)} s (${b.coresBusy.toFixed(2)} cores, probe ${b.probeGflops.toFixed(0)})` +
              (tw === undefined ? '' : `, fp32 twin engine ${tw.seconds.toFixed(2)} s`),
          );
        }
        timed.push({ w, engineRuns, baselineRuns, twinRuns, enginePeak, baselinePeak });
      }
      } finally {
        twin?.close();
      }
      const usedGflops = Math.max(peak.gflops, ...timed.flatMap((t) => [...t.engineRuns, ...t.baselineRuns].map((r) => r.probeGflops)));
      const results: WorkloadResult[] = timed.map((t) =>
        summarize(t.w, t.engineRuns, t.baselineRuns, t.enginePeak, t.baselinePeak, checks.get(t.w)!, params.body, headFlopParams, usedGflops, t.twinRuns),
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
        // Loaded only when run: benchmark.js is a devDependency, and --no-micro runs without it.
        const { runMicro } = await import('./micro.js');
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

      let latency: BenchReport['latency'] = [];
      if (options.latency ?? true) {
        const requests = quick ? 30 : 100;
        log(`[${elapsed()}] latency of POST /v1/decide over HTTP (${requests} sequential requests per shape) ...`);
        latency = await measureHttpLatency({ modelDir, threads, provider, requests });
      }

      const targets = evaluateTargets(results, dtype);
      const addonAtEnd = addonInfo(root);
      if (addonAtEnd.sha256 !== addon.sha256) {
        log(`warning: ${addon.path} was rebuilt during the run (${addon.mtime} -> ${addonAtEnd.mtime}); this process kept the one it loaded, but other work (a build) shared the CPU`);
      }
      const report: BenchReport = {
        schema: 'decide-bench/1',
        startedAt: startedAt.toISOString(),
        durationSeconds: (performance.now() - t0) / 1000,
        options: { preset, dtype, packing: packing ?? 'engine default', provider, threads, quick, repetitions, seed, workloads: names, profile: options.profile ?? false, modelDir },
        rssAfterLoadBytes: rssAfterLoad,
        machine: machineInfo(loadAverageAtStart),
        threads,
        provider,
        git: gitInfo(root),
        addon: { ...addon, changedDuringRun: addonAtEnd.sha256 !== addon.sha256 },
        model: {
          preset,
          dir: modelDir,
          graphFile: engine.info.graphFile,
          packsSuffixes: engine.info.packsSuffixes,
          ...(engine.info.int8 === undefined ? {} : { int8: engine.info.int8 }),
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
        latency,
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

