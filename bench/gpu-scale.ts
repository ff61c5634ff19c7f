/**
 * `decide bench --size gpu`: the engine at the sizes that load a GPU, the same workloads and
 * packing as the PyTorch peer (bench/torch_peer.py), so the two print side by side:
 *   tickets  64 states x 390 tokens, 8 questions x 18 tokens each
 *   document 16 states x 1,600 tokens, 13 questions x 22 tokens
 *   single   128 states x 300 tokens, 1 question x 20 tokens
 * Token ids are random (the model's weights are too): these figures are about speed, not answers.
 * For each workload, the engine with packed and with forked question rows, best of N calls with
 * the prefix cache cleared before each (every state computed), plus fresh rows (each question its
 * own state) for tokens/s; each with the call's host-side counters. `scale` shrinks the states for
 * a quick run on a CPU. Asserts nothing; writes JSON beside the other bench results.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { assertProviderReady, Engine, type ScoreGroup, type SuffixScore } from '../src/engine/engine.js';
import type { EngineOptions, Provider } from '../src/engine/engine-options.js';
import { readModelConfig } from '../src/engine/model-dir.js';
import type { NativeCounters } from '../src/engine/native.js';
import type { ModelDtype } from '../src/models/builder/index.js';
import { deriveFusedGraph } from '../src/models/fused-graph.js';
import { makeDirectories } from '../src/models/make-directories.js';
import { gitInfo, machineInfo, packageRoot } from './provenance.js';
import { ensureModel, type BenchGraph } from './bench-model.js';
import { table } from './report.js';

/** [states, state tokens, questions per state, question tokens], the peer's sizes. */
export const GPU_WORKLOADS = {
  tickets: [64, 390, 8, 18],
  document: [16, 1600, 13, 22],
  single: [128, 300, 1, 20],
} as const satisfies Record<string, readonly [number, number, number, number]>;
export type GpuWorkloadName = keyof typeof GPU_WORKLOADS;
/** Labels per question: choice questions of 4 options. */
const LABELS = 4;

export interface GpuScaleOptions {
  provider?: Provider;
  preset?: string;
  dtype?: ModelDtype;
  /**
   * The graph of the model it builds: default the fused decoder graph with causal states on cuda (the
   * faster there; without them when engine.cudaGraphs is on), ops on cpu.
   */
  attention?: BenchGraph;
  modelDir?: string;
  workloads?: GpuWorkloadName[];
  /** Timed calls per layout (the best counts); default 3. */
  repetitions?: number;
  /** Multiplies the number of states (at least 1 each); default 1. */
  scale?: number;
  threads?: number;
  /** The other engine options (`decide bench`'s engine flags); provider, threads and the layout (both are run) win. */
  engine?: EngineOptions;
  /** Skip the fresh-rows run. */
  noFresh?: boolean;
  resultsDir?: string;
  log?: (line: string) => void;
}

export interface LayoutResult {
  layout: 'packed' | 'forked' | 'fresh';
  seconds: number;
  decisionsPerSecond: number;
  /** Tokens the call had to compute (states and questions, each once), per second. */
  tokensPerSecond: number;
  counters: NativeCounters;
}

export interface GpuWorkloadResult {
  workload: GpuWorkloadName;
  states: number;
  stateTokens: number;
  questions: number;
  questionTokens: number;
  decisions: number;
  layouts: LayoutResult[];
  /** Largest |label logit| difference between the packed and forked answers. */
  packedVsForked: number;
}

export interface GpuScaleReport {
  kind: 'gpu-scale';
  createdAt: string;
  git: ReturnType<typeof gitInfo>;
  machine: ReturnType<typeof machineInfo>;
  provider: Provider;
  modelDir: string;
  dtype: ModelDtype;
  engineInfo: Record<string, unknown>;
  workloads: GpuWorkloadResult[];
}

/** Deterministic ids in [lo, hi) (an LCG), so every run and the peer see the same kind of input. */
function idStream(seed: number, lo: number, hi: number): (n: number) => Int32Array {
  let s = seed >>> 0;
  return (n) =>
    Int32Array.from({ length: n }, () => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return lo + Math.floor((s / 2 ** 32) * (hi - lo));
    });
}

/** A GPU-size workload's groups (states scaled by `scale`), the same ids on every call: also what `--ort-profile --size gpu` profiles. */
export function gpuScaleGroups(name: GpuWorkloadName, scale: number, vocab: number): ScoreGroup[] {
  const [states, stateTokens, questions, questionTokens] = GPU_WORKLOADS[name];
  const hi = Math.min(100_000, vocab - 1);
  const ids = idStream(12345, Math.min(1000, Math.floor(hi / 4)), hi);
  return Array.from({ length: Math.max(1, Math.round(states * scale)) }, () => ({
    prefix: ids(stateTokens),
    suffixes: Array.from({ length: questions }, () => ({ tokens: ids(questionTokens), labels: ids(LABELS) })),
  }));
}

/** Each question its own state: the state's first token made unique so nothing is shared. */
function freshGroups(groups: ScoreGroup[]): ScoreGroup[] {
  let unique = 1;
  return groups.flatMap((g) =>
    g.suffixes.map((s) => {
      const prefix = g.prefix.slice();
      prefix[0] = unique++;
      return { prefix, suffixes: [s] };
    }),
  );
}

async function best(engine: Engine, groups: ScoreGroup[], repetitions: number): Promise<{ seconds: number; counters: NativeCounters; scores: SuffixScore[][] }> {
  engine.clearPrefixCache();
  let result = await engine.scoreBatch(groups); // warm-up: sessions, allocators, kernels chosen
  let out = { seconds: Infinity, counters: result.counters, scores: result.groups };
  for (let i = 0; i < repetitions; i++) {
    engine.clearPrefixCache();
    const start = process.hrtime.bigint();
    result = await engine.scoreBatch(groups);
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (seconds < out.seconds) out = { seconds, counters: result.counters, scores: result.groups };
  }
  return out;
}

function maxLogitDiff(a: SuffixScore[][], b: SuffixScore[][]): number {
  let max = 0;
  a.forEach((group, i) => group.forEach((s, j) => s.labelLogits.forEach((v, k) => (max = Math.max(max, Math.abs(v - b[i]![j]!.labelLogits[k]!))))));
  return max;
}

/**
 * The GPU-size run's default graph: on cuda the fused graph with causal states, or without them with
 * CUDA graphs (causal states put the layers in an If, which ONNX Runtime does not capture); ops on cpu.
 */
export function gpuScaleGraph(provider: Provider, cudaGraphs: boolean): BenchGraph {
  if (provider !== 'cuda') return 'ops';
  return cudaGraphs ? 'fused' : 'causal';
}

/**
 * The GPU-size run's model, by the run's defaults (qwen3-0.6b; fp16 and the fused graph with causal
 * states on cuda), built into the package's models folder when missing: the run and `decide bench
 * --size gpu --ort-profile` use the same one.
 */
export async function gpuScaleModel(
  options: Pick<GpuScaleOptions, 'provider' | 'preset' | 'dtype' | 'attention' | 'modelDir' | 'engine'>,
  log: (line: string) => void,
): Promise<{ provider: Provider; preset: string; dtype: ModelDtype; attention: BenchGraph; modelDir: string }> {
  const provider = options.provider ?? 'cuda';
  const dtype = options.dtype ?? (provider === 'cuda' ? 'fp16' : 'fp32');
  const preset = options.preset ?? 'qwen3-0.6b';
  const attention = options.attention ?? gpuScaleGraph(provider, options.engine?.cudaGraphs === true);
  // --own-kernels on (the engine option): the bench builds its fused model with them, as a derived graph would have them.
  const ownKernels = options.engine?.ownKernels === true && attention !== 'ops';
  const name = `bench-${preset}${dtype === 'fp32' ? '' : `-${dtype}`}${attention === 'ops' ? '' : `-${attention}`}${ownKernels ? '-own-kernels' : ''}`;
  const modelDir = options.modelDir ?? path.join(packageRoot(), 'models', name);
  // A host that cannot run the provider is told so before a model is built for it (minutes for qwen3-0.6b).
  assertProviderReady({ provider, ortLibrary: options.engine?.ortLibrary });
  if (!options.modelDir) await ensureModel(preset, modelDir, dtype, log, attention, ownKernels);
  return { provider, preset, dtype, attention, modelDir };
}

export async function runGpuScale(options: GpuScaleOptions = {}): Promise<GpuScaleReport> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const { provider, dtype, attention, modelDir } = await gpuScaleModel(options, log);
  const root = packageRoot();
  const vocab = readModelConfig(modelDir).vocabSize;
  const scale = options.scale ?? 1;
  const repetitions = options.repetitions ?? 3;
  const names = options.workloads ?? (Object.keys(GPU_WORKLOADS) as GpuWorkloadName[]);

  const loadAverage = os.loadavg();
  // The graph asked for runs as built: a standard-op model is not swapped for its derived fused graph.
  const fusedAttention = options.engine?.fusedAttention ?? (attention === 'ops' ? 'off' : 'auto');
  const load = (packSuffixes: boolean) =>
    Engine.load({ ...options.engine, modelDir, provider, packSuffixes, fusedAttention, graphDeriver: deriveFusedGraph, ...(options.threads ? { threads: options.threads } : {}) });
  const engines = { packed: await load(true), forked: await load(false) };
  const results: GpuWorkloadResult[] = [];
  try {
    for (const name of names) {
      const [, stateTokens, questions, questionTokens] = GPU_WORKLOADS[name];
      const groups = gpuScaleGroups(name, scale, vocab);
      const decisions = groups.length * questions;
      const computed = groups.length * (stateTokens + questions * questionTokens);
      const layouts: LayoutResult[] = [];
      const scores: Partial<Record<'packed' | 'forked', SuffixScore[][]>> = {};
      for (const layout of ['packed', 'forked'] as const) {
        const r = await best(engines[layout], groups, repetitions);
        scores[layout] = r.scores;
        layouts.push({ layout, seconds: r.seconds, decisionsPerSecond: decisions / r.seconds, tokensPerSecond: computed / r.seconds, counters: r.counters });
      }
      if (!options.noFresh) {
        // A quarter of the states' questions as fresh rows: tokens/s of plain full sequences.
        const fresh = freshGroups(groups.slice(0, Math.max(1, Math.ceil(groups.length / 4))));
        const r = await best(engines.packed, fresh, Math.max(1, repetitions - 1));
        layouts.push({
          layout: 'fresh',
          seconds: r.seconds,
          decisionsPerSecond: fresh.length / r.seconds,
          tokensPerSecond: (fresh.length * (stateTokens + questionTokens)) / r.seconds,
          counters: r.counters,
        });
      }
      const result: GpuWorkloadResult = {
        workload: name,
        states: groups.length,
        stateTokens,
        questions,
        questionTokens,
        decisions,
        layouts,
        packedVsForked: maxLogitDiff(scores.packed!, scores.forked!),
      };
      results.push(result);
      log(formatGpuWorkload(result));
    }
  } finally {
    engines.packed.close();
    engines.forked.close();
  }
  const info = engines.packed.info;
  const report: GpuScaleReport = {
    kind: 'gpu-scale',
    createdAt: new Date().toISOString(),
    git: gitInfo(root),
    machine: machineInfo(loadAverage),
    provider,
    modelDir,
    dtype,
    engineInfo: { ...info },
    workloads: results,
  };
  const dir = options.resultsDir ?? path.join(root, 'bench', 'results');
  makeDirectories(dir);
  const file = path.join(dir, `gpu-scale-${report.createdAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log(
    `engine: ${provider}, ${dtype}, graph ${JSON.stringify(info.attention)}, pass shapes ${info.passShapes}, lm head ${JSON.stringify(info.lmHead)}, ` +
      `scoring head ${info.hasLabelHead}, KV copies ${info.deviceCopyPath}, attention budget ${info.attentionBudget}`,
  );
  log(`wrote ${file}`);
  return report;
}

export function formatGpuWorkload(w: GpuWorkloadResult): string {
  const rows = w.layouts.map((l) => [
    `  ${l.layout}`,
    l.seconds.toFixed(3),
    l.decisionsPerSecond.toFixed(1),
    `${(l.tokensPerSecond / 1000).toFixed(1)}k`,
    String(l.counters.forwardPasses),
    String(l.counters.deviceCopies),
    `${(l.counters.hostToDeviceBytes / 2 ** 20).toFixed(2)} MiB`,
    `${(l.counters.deviceToHostBytes / 2 ** 10).toFixed(1)} KiB`,
    l.counters.runMillis.toFixed(0),
    l.counters.hostMillis.toFixed(0),
  ]);
  return (
    `${w.workload} (${w.states} x ${w.stateTokens} tokens, ${w.questions} x ${w.questionTokens}): ${w.decisions} decisions, packed vs forked max |logit diff| ${w.packedVsForked.toExponential(1)}\n` +
    table(['  layout', 'seconds', 'decisions/s', 'tokens/s', 'passes', 'device copies', 'to device', 'to host', 'run ms', 'host ms'], rows)
  );
}
