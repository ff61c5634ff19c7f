/**
 * `decide bench --ort-profile FILE`: ONNX Runtime's own profile of ONE engine call, the first call
 * of a benchmark workload (document by default: a long state and 13 questions, the case where
 * attention and the KV fork show), on the bench model; with `--size gpu`, one call of the GPU-size
 * workload instead (bench/gpu-scale.ts: 16 states of 1,600 tokens for document), the call a card
 * is timed on. The engine's decoder session runs with
 * ORT's profiler on; ORT writes its chrome-trace JSON when the engine closes. The same call runs
 * twice, the first to warm up (first-run allocations, kernel selection): FILE keeps only the
 * second call's ORT runs (its last `forwardPasses` "model_run" events) and the node events inside
 * them. bench/gpu-report.ts sums it by op type.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import type { EngineOptions } from '../src/engine/engine-options.js';
import type { ScoreGroup } from '../src/engine/engine.js';
import { readModelConfig } from '../src/engine/model-dir.js';
import type { ModelDtype } from '../src/models/builder/index.js';
import { deriveFusedGraph } from '../src/models/fused-graph.js';
import { ModelRuntime } from '../src/runtime/model-runtime.js';
import { TextTokenizer } from '../src/runtime/tokenizer.js';
import { ensureModel } from './bench-model.js';
import { gpuScaleGroups } from './gpu-scale.js';
import { makeScratch } from './scratch.js';
import { BENCH_MODEL_ID, buildWorkload, workloadSpecs, type WorkloadName } from './workloads.js';

export interface OrtProfileOptions {
  root: string;
  outFile: string;
  preset: string;
  dtype: ModelDtype;
  provider: 'cpu' | 'cuda';
  threads?: number;
  packing?: boolean;
  /** The other engine options; provider, threads, packing and the profile prefix above win. */
  engine?: EngineOptions;
  workload: WorkloadName;
  /** Profile the GPU-size call of the workload, its states scaled by this (0, 1], instead of the benchmark's. */
  gpuScale?: number;
  modelDir?: string;
  seed: number;
  log: (line: string) => void;
}

export async function profileEngineCall(options: OrtProfileOptions): Promise<{ file: string; decisions: number }> {
  const fp32Dir = path.join(options.root, 'models', `bench-${options.preset}`);
  const modelDir = path.resolve(options.modelDir ?? (options.dtype === 'fp32' ? fp32Dir : `${fp32Dir}-${options.dtype}`));
  if (options.modelDir === undefined) await ensureModel(options.preset, modelDir, options.dtype, options.log);
  const scratch = await makeScratch('ort-profile');
  try {
    const runtime = await ModelRuntime.load(BENCH_MODEL_ID, modelDir, {
      engine: {
        ...options.engine,
        provider: options.provider,
        // As the benchmark's own engine: on CUDA a standard-op model runs its fused graph, so the
        // profile is of the graph the benchmark timed (without it, the stored standard-op graph).
        graphDeriver: deriveFusedGraph,
        ortProfilePrefix: path.join(scratch, 'ort'),
        ...(options.threads === undefined ? {} : { threads: options.threads }),
        ...(options.packing === undefined ? {} : { packSuffixes: options.packing }),
      },
    });
    let decisions = 0;
    let passes = 0;
    try {
      const groups = options.gpuScale === undefined ? await benchCall(runtime, modelDir, options) : gpuScaleGroups(options.workload, options.gpuScale, readModelConfig(modelDir).vocabSize);
      decisions = groups.reduce((n, g) => n + g.suffixes.length, 0);
      await runtime.engine.score(groups);
      runtime.engine.clearPrefixCache();
      options.log(`profiling one ${options.workload} call: ${groups.length} states, ${decisions} questions`);
      passes = (await runtime.engine.scoreBatch(groups)).counters.forwardPasses;
    } finally {
      runtime.close();
    }
    const written = (await readdir(scratch)).filter((f) => f.endsWith('.json'));
    if (written.length !== 1) throw new Error(`bench: ONNX Runtime wrote ${written.length} profile files, expected 1`);
    const events = JSON.parse(await readFile(path.join(scratch, written[0]!), 'utf8')) as ProfileEvent[];
    await writeFile(options.outFile, JSON.stringify(lastRuns(events, passes)));
    return { file: options.outFile, decisions };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** The first call of the benchmark's workload (quick sizes). */
async function benchCall(runtime: ModelRuntime, modelDir: string, options: OrtProfileOptions): Promise<ScoreGroup[]> {
  const tokenizer = await TextTokenizer.load(modelDir);
  const spec = workloadSpecs(true)[options.workload];
  const workload = await buildWorkload(spec, runtime, options.seed, async (text) => (await tokenizer.encode(text)).length);
  return workload.calls[0]!.map((item) => item.prepared.group);
}

interface ProfileEvent {
  cat?: string;
  name?: string;
  ts?: number;
  dur?: number;
}

/**
 * The last `runs` "model_run" events and every node or kernel event that falls inside one of them
 * (on CUDA a provider built with its profiler adds "Kernel" events: the device's own times).
 */
export function lastRuns(events: ProfileEvent[], runs: number): ProfileEvent[] {
  const windows = events
    .filter((e) => e.cat === 'Session' && e.name === 'model_run' && typeof e.ts === 'number' && typeof e.dur === 'number')
    .sort((a, b) => a.ts! - b.ts!)
    .slice(-runs);
  const inside = (e: ProfileEvent) => typeof e.ts === 'number' && windows.some((w) => e.ts! >= w.ts! && e.ts! <= w.ts! + w.dur!);
  return events.filter((e) => windows.includes(e) || ((e.cat === 'Node' || e.cat === 'Kernel') && inside(e)));
}
