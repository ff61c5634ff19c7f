/**
 * Engine: the scoring engine for one model directory. C++ does the work (native/); this class
 * reads the model directory, prepares the graph, and converts between the structured form used in
 * TypeScript and the flat typed arrays that cross into C++.
 */
import os from 'node:os';

import { EngineError, type EngineErrorCode } from '../errors/engine-error.js';
import {
  loadNativeModule,
  resolveOrtLibrary,
  type NativeCounters,
  type NativeEngine,
  type NativeEngineCounters,
  type NativeModelInfo,
} from './native.js';
import { findGraphFile, readModelConfig, type ModelConfig } from './model-dir.js';
import { missingCudaPieces } from './cuda-runtime.js';
import { flatten, type ScoreGroup } from './score-groups.js';
import { prepareScoringGraph } from './scoring-graph.js';

export type { ScoreGroup, ScoreSuffix } from './score-groups.js';

export type Provider = 'cpu' | 'cuda';

export interface EngineLoadOptions {
  /** A Hugging Face model directory with an ONNX decoder-with-past export. */
  modelDir: string;
  /** 'cpu' (default) or 'cuda' (needs `npx decide setup-cuda` once, or DECIDE_ORT_LIBRARY; see the README's 'GPU hosts (CUDA)'). */
  provider?: Provider;
  /** Intra-op threads; default DECIDE_THREADS, else the number of CPU cores. */
  threads?: number;
  /** Bytes of prefix KV kept across calls (LRU); default 1 GiB. */
  prefixCacheBytes?: number;
  /** Padded new tokens per forward pass before a pass is split; default 8192. */
  tokenBudget?: number;
  /** Bytes of forked prefix KV per forward pass before a pass is split; default 1 GiB. */
  pastBudgetBytes?: number;
  /**
   * The cost of one more forward pass in token-equivalents (default 32). Rows are cut into passes
   * where the padding a merged pass would compute costs more than this; Infinity keeps one pass
   * per budget (the padding is then computed).
   */
  passOverheadTokens?: number;
  /** Path of the ONNX Runtime library; default DECIDE_ORT_LIBRARY, else an installed CPU build (see resolveOrtLibrary). */
  ortLibrary?: string;
  /** CUDA device ordinal. */
  deviceId?: number;
  /**
   * Gather each row's answer position before the LM head (a graph rewrite cached beside the
   * model and verified against the stock graph). Default true; falls back to the stock graph
   * when the rewrite does not apply.
   */
  gatherLogits?: boolean;
  /**
   * With a graph that takes segment ids (`--packing on`, the default of make-model and
   * import-model), score a group's questions packed into rows: in the state's own prefill row when
   * the call computes the state, else after one copy of its KV, instead of one row per question
   * with the state's KV forked into each. Default: on for 'cuda', off for 'cpu'. On the CPU the
   * forked rows measured faster (packed rows compute attention between all of a row's tokens;
   * docs/benchmark.md); on a GPU the forked copies are what packing removes (docs/models.md). No
   * effect on a graph without segment ids.
   */
  packSuffixes?: boolean;
  /**
   * Diagnostics: turn ONNX Runtime's profiler on for the decoder session. ORT writes one
   * chrome-trace JSON, `<ortProfilePrefix>_<date>.json`, with every node's kernel time when the
   * engine closes (`decide bench --ort-profile` uses it). Slows every call a little; off by default.
   */
  ortProfilePrefix?: string;
}

export interface SuffixScore {
  /** Logits of the suffix's label tokens at its last position, in label order. */
  labelLogits: Float32Array;
  /** log-sum-exp of all logits at that position: exp(logit - logSumExp) is a token's probability. */
  logSumExp: number;
}

export interface ScoreBatchResult {
  /** Per group, per suffix, in input order. */
  groups: SuffixScore[][];
  /** Per group: prefix tokens served from the prefix cache (or an identical group of the call). */
  cachedTokens: Int32Array;
  /** This call's counters. */
  counters: NativeCounters;
}

export type EngineCounters = NativeEngineCounters;

export interface EngineInfo extends NativeModelInfo {
  modelDir: string;
  graphFile: string;
  maxContext: number;
}

/**
 * Threads per forward pass when the caller names none: DECIDE_THREADS (for hosts that run several
 * engine processes side by side, which would otherwise each spin a thread per core), else every core.
 */
function defaultThreads(): number {
  const value = process.env.DECIDE_THREADS;
  if (value === undefined || value.trim() === '') return os.availableParallelism();
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > 1024) {
    throw new EngineError('ERR_INPUT', `DECIDE_THREADS must be an integer from 1 to 1024, got '${value}'`);
  }
  return n;
}

/**
 * Names every missing CUDA piece (provider library, driver, CUDA 13 libraries) with its fix, before
 * ONNX Runtime would fail on the first of them with a generic message.
 */
function assertCudaReady(ortLibrary: string): void {
  const missing = missingCudaPieces(ortLibrary, (name) => loadNativeModule().probeLibrary(name));
  if (missing.length > 0) {
    throw new EngineError('ERR_PROVIDER_UNAVAILABLE', `the CUDA provider cannot run on this host:\n${missing.map((m) => `  - ${m}`).join('\n')}`);
  }
}

function asEngineError(err: unknown, stackFrom: Error): EngineError {
  const e = err as { code?: string; message?: string };
  const wrapped = new EngineError((e?.code as EngineErrorCode) ?? 'ERR_RUNTIME', e?.message ?? String(err));
  // Point at the caller, not at the promise machinery.
  wrapped.stack = `${wrapped.name} [${wrapped.code}]: ${wrapped.message}\n${stackFrom.stack?.split('\n').slice(1).join('\n') ?? ''}`;
  return wrapped;
}

export class Engine {
  private closed = false;

  private constructor(
    private readonly native: NativeEngine,
    readonly config: ModelConfig,
    readonly info: EngineInfo,
  ) {}

  /**
   * Loads a model directory.
   * @example
   * const engine = await Engine.load({ modelDir: 'models/tiny' });
   */
  static async load(options: EngineLoadOptions): Promise<Engine> {
    const callSite = new Error();
    try {
      const config = readModelConfig(options.modelDir);
      const stockGraph = findGraphFile(options.modelDir);
      const maxContext = config.maxPositionEmbeddings;
      const provider = options.provider ?? 'cpu';
      const ortLibrary = resolveOrtLibrary(options.ortLibrary, provider);
      if (provider === 'cuda') assertCudaReady(ortLibrary);
      const loadOptions = {
        ortLibrary,
        provider,
        threads: options.threads ?? defaultThreads(),
        deviceId: options.deviceId ?? 0,
        numKvHeads: config.numKvHeads,
        headDim: config.headDim,
        vocabSize: config.vocabSize,
        prefixCacheBytes: options.prefixCacheBytes ?? 2 ** 30,
        tokenBudget: options.tokenBudget ?? 8192,
        pastBudgetBytes: options.pastBudgetBytes ?? 2 ** 30,
        maxContext,
        attentionWeight: attentionWeight(config),
        passOverheadTokens: options.passOverheadTokens ?? 32,
        packSuffixes: options.packSuffixes ?? provider === 'cuda',
      } as const;
      const graphFile =
        options.gatherLogits === false ? stockGraph : await prepareScoringGraph(stockGraph, loadOptions);
      const { NativeEngine } = loadNativeModule();
      const native = new NativeEngine();
      await native.load({ ...loadOptions, modelPath: graphFile, ...(options.ortProfilePrefix ? { ortProfilePrefix: options.ortProfilePrefix } : {}) });
      const info: EngineInfo = { ...native.info(), modelDir: options.modelDir, graphFile, maxContext };
      if (info.numLayers !== config.numLayers) {
        native.close();
        throw new EngineError(
          'ERR_MODEL_LOAD',
          `${graphFile}: the graph has ${info.numLayers} layers but config.json says ${config.numLayers}`,
        );
      }
      return new Engine(native, config, info);
    } catch (err) {
      throw asEngineError(err, callSite);
    }
  }

  /**
   * Scores every suffix of every group: a prefix stage over the prefixes not in the prefix cache,
   * then a suffix stage over all suffixes. Each stage is split into forward passes that fit the
   * token, past-bytes and attention budgets, where a cost model finds that padding would cost more
   * than another pass (native/scorer.h).
   * @example
   * const [[yesNo]] = await engine.score([{ prefix, suffixes: [{ tokens, labels: new Int32Array([no, yes]) }] }]);
   */
  async score(groups: ScoreGroup[]): Promise<SuffixScore[][]> {
    return (await this.scoreBatch(groups)).groups;
  }

  /** Like score(), plus per-group prefix reuse and the call's counters. */
  async scoreBatch(groups: ScoreGroup[]): Promise<ScoreBatchResult> {
    const callSite = new Error();
    if (this.closed) throw asEngineError({ code: 'ERR_ENGINE_CLOSED', message: 'the engine is closed' }, callSite);
    let batch;
    try {
      batch = flatten(groups);
    } catch (err) {
      throw asEngineError(err, callSite);
    }
    let result;
    try {
      result = await this.native.score(batch);
    } catch (err) {
      throw asEngineError(err, callSite);
    }
    const out: SuffixScore[][] = [];
    let suffixIndex = 0;
    for (const group of groups) {
      const scores: SuffixScore[] = [];
      for (let i = 0; i < group.suffixes.length; i++, suffixIndex++) {
        const begin = batch.labelOffsets[suffixIndex]!;
        const end = batch.labelOffsets[suffixIndex + 1]!;
        scores.push({
          labelLogits: result.labelLogits.slice(begin, end),
          logSumExp: result.logSumExp[suffixIndex]!,
        });
      }
      out.push(scores);
    }
    return { groups: out, cachedTokens: result.cachedTokens, counters: result.counters };
  }

  /**
   * Cumulative counters since load (a running call is counted when it ends), the prefix cache's
   * current size, and whether a call is computing. Never waits for a running call.
   */
  counters(): EngineCounters {
    if (this.closed) throw new EngineError('ERR_ENGINE_CLOSED', 'the engine is closed');
    return this.native.counters();
  }

  /**
   * Drops every cached prefix: the next calls compute their prefixes afresh. Never waits: while a
   * call is computing, the cache is emptied when that call ends (its own prefixes included).
   */
  clearPrefixCache(): void {
    if (this.closed) throw new EngineError('ERR_ENGINE_CLOSED', 'the engine is closed');
    this.native.clearPrefixCache();
  }

  /** Releases the session and the cache. Idempotent; calls already running finish first. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.native.close();
  }
}

/**
 * Attention FLOPs per (query token, key position) relative to the body FLOPs of one token:
 * QK^T and PV cost 4 x heads x head_dim per key and layer, the body 2 x its parameters. The
 * scorer uses it to weigh padded past positions when it splits rows into passes.
 */
export function attentionWeight(config: ModelConfig): number {
  const { numLayers: layers, hiddenSize: hidden, numHeads: heads, numKvHeads: kvHeads, headDim } = config;
  const intermediate = typeof config.raw.intermediate_size === 'number' ? config.raw.intermediate_size : 4 * hidden;
  const body = layers * (2 * hidden * heads * headDim + 2 * hidden * kvHeads * headDim + 3 * hidden * intermediate);
  return (4 * heads * headDim * layers) / (2 * body);
}
