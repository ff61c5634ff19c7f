/**
 * Engine: the scoring engine for one model directory. C++ does the work (native/); this class
 * reads the model directory, prepares the graph, and converts between the structured form used in
 * TypeScript and the flat typed arrays that cross into C++.
 */
import { EngineError, isEngineErrorCode } from '../errors/engine-error.js';
import {
  loadNativeModule,
  noteLoadedOrtLibrary,
  resolveOrtLibrary,
  type NativeCounters,
  type NativeEngine,
  type NativeEngineCounters,
  type NativeModelInfo,
} from './native.js';
import { findGraphFile, readModelConfig, type ModelConfig } from './model-dir.js';
import { missingCudaPieces } from './cuda-runtime.js';
import { flatten, type ScoreGroup } from './score-groups.js';
import { prepareScoringGraph, type LmHeadChoice, type ScoringGraph } from './scoring-graph.js';
import { checkEngineOptions, checkLoadOptionsGiven, ENGINE_DEFAULTS, resolveLoadOptions, resolveProvider, withEnvironment, type EngineLoadOptions } from './engine-options.js';
import { prepareInt8Graph, type Int8Info } from './int8-graph.js';
import { chooseAttentionGraph, cudaGraphsProblem, type AttentionChoice } from './attention-graph.js';

export type { ScoreGroup, ScoreSuffix } from './score-groups.js';

export type { EngineLoadOptions, EngineOptions, Provider } from './engine-options.js';
export type { AttentionChoice, GraphDeriver } from './attention-graph.js';
export type { LmHeadChoice } from './scoring-graph.js';

/**
 * One suffix's result: softmax over `labelLogits` gives the options' probabilities among themselves.
 * @example
 * const p = Array.from(score.labelLogits, (l) => Math.exp(l - score.logSumExp)); // over the whole vocabulary
 */
export interface SuffixScore {
  /** Logits of the suffix's label tokens at its last position, in label order. */
  labelLogits: Float32Array;
  /** log-sum-exp of all logits at that position: exp(logit - logSumExp) is a token's probability. */
  logSumExp: number;
}

/**
 * What {@link Engine.scoreBatch} returns: the scores, per group how many prefix tokens came from the
 * cache, and the call's own counters.
 * @example
 * const { groups, cachedTokens } = await engine.scoreBatch([{ prefix, suffixes }]);
 */
export interface ScoreBatchResult {
  /** Per group, per suffix, in input order. */
  groups: SuffixScore[][];
  /** Per group: prefix tokens served from the prefix cache (or an identical group of the call). */
  cachedTokens: Int32Array;
  /** This call's counters. */
  counters: NativeCounters;
}

/**
 * The engine's running totals (calls, forward passes, computed and cached prefix tokens, prefix
 * cache bytes and entries, ...), what /metrics exports per model.
 * @example
 * const { forwardPasses, cachedTokens } = engine.counters();
 */
export type EngineCounters = NativeEngineCounters;

/**
 * What was loaded: the native model info plus the directory, the graph file used, whether the
 * LM-head rewrite applies (and why not) and the context length.
 * @example
 * if (engine.info.lmHead.graph === 'stock') console.warn(engine.info.lmHead.reason);
 */
export interface EngineInfo extends NativeModelInfo {
  modelDir: string;
  graphFile: string;
  /**
   * Which graph computes the logits and why: the LM-head rewrite, or the stock graph because it
   * gathers by itself, because gatherLogits is false, or as a fallback (`detail` says why; such an
   * engine computes every position's logits and is slower).
   */
  lmHead: LmHeadChoice;
  /**
   * The decoder graph that runs: the model's own (standard-op or fused), or on CUDA the fused
   * graph derived from it (fusedAttention: src/engine/attention-graph.ts chooses, and
   * src/models/fused-graph.ts derives); `reason` says why one asked for was not derived.
   */
  attention: AttentionChoice;
  maxContext: number;
  /** int8 models: which integer GEMM path runs on this CPU, and why (src/engine/int8-path.ts). */
  int8?: Int8Info;
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

/**
 * Throws the EngineError Engine.load would throw for `provider` on this host (a CUDA piece
 * missing, no CUDA-capable ONNX Runtime), so that a caller can refuse before building anything for it.
 */
export function assertProviderReady(options: Pick<EngineLoadOptions, 'provider' | 'ortLibrary'>): void {
  const provider = resolveProvider(options);
  if (provider === 'cuda') assertCudaReady(resolveOrtLibrary(options.ortLibrary, provider));
}

function asEngineError(err: unknown, stackFrom: Error): EngineError {
  const e = err as { code?: string; message?: string };
  // Only the engine's own codes pass through: a system error (ENOENT, ...) is the engine's runtime failure.
  const wrapped = new EngineError(isEngineErrorCode(e?.code) ? e.code : 'ERR_RUNTIME', e?.message ?? String(err), { cause: err });
  // Point at the caller, not at the promise machinery.
  wrapped.stack = `${wrapped.name} [${wrapped.code}]: ${wrapped.message}\n${stackFrom.stack?.split('\n').slice(1).join('\n') ?? ''}`;
  return wrapped;
}

/**
 * The token-level engine over one model directory: token ids in, each label's logit out. Prefixes
 * are computed once and kept in a byte-bounded prefix cache; questions are batched into few forward
 * passes on ONNX Runtime's threads, never on the JavaScript thread. Errors are {@link EngineError}s.
 * @example
 * const engine = await Engine.load({ modelDir: 'models/tiny', threads: 2 });
 * const [[refund]] = await engine.score([{ prefix, suffixes: [{ tokens, labels: new Int32Array([no, yes]) }] }]);
 * console.log(refund.labelLogits, engine.counters().cachedTokens);
 * engine.close();
 */
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
  static async load(given: EngineLoadOptions): Promise<Engine> {
    const callSite = new Error();
    try {
      checkLoadOptionsGiven(given);
      const options = withEnvironment(given);
      checkEngineOptions(options);
      const config = readModelConfig(options.modelDir);
      const { graphFile: storedGraph, int8 } = await prepareInt8Graph(options.modelDir, findGraphFile(options.modelDir), options);
      const maxContext = config.maxPositionEmbeddings;
      const provider = resolveProvider(options);
      const ortLibrary = resolveOrtLibrary(options.ortLibrary, provider);
      if (provider === 'cuda') assertCudaReady(ortLibrary);
      const loadOptions = resolveLoadOptions(options, config, ortLibrary);
      const { graphFile: stockGraph, attention } = await chooseAttentionGraph(
        options.modelDir,
        storedGraph,
        options.fusedAttention ?? ENGINE_DEFAULTS.fusedAttention,
        provider,
        options.graphDeriver,
        loadOptions,
        { controlFlow: !(options.cudaGraphs ?? ENGINE_DEFAULTS.cudaGraphs), ownKernels: options.ownKernels ?? ENGINE_DEFAULTS.ownKernels },
      );
      const graphsProblem = provider === 'cuda' && (options.cudaGraphs ?? ENGINE_DEFAULTS.cudaGraphs) ? cudaGraphsProblem(attention) : undefined;
      if (graphsProblem !== undefined) throw new EngineError('ERR_INPUT', graphsProblem);
      const { graphFile, lmHead }: ScoringGraph =
        (options.gatherLogits ?? ENGINE_DEFAULTS.gatherLogits) === false
          ? { graphFile: stockGraph, lmHead: { graph: 'stock', reason: 'off' } }
          : await prepareScoringGraph(stockGraph, loadOptions);
      const { NativeEngine } = loadNativeModule();
      const native = new NativeEngine();
      await native.load({ ...loadOptions, modelPath: graphFile });
      noteLoadedOrtLibrary(native.info().ortLibrary);
      const info: EngineInfo = { ...native.info(), modelDir: options.modelDir, graphFile, lmHead, attention, maxContext, ...(int8 === undefined ? {} : { int8 }) };
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
   * token, past-bytes, attention and logits budgets, where a cost model finds that padding would
   * cost more than another pass (native/scorer.h).
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
