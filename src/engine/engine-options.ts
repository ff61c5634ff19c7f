/**
 * The engine's load options: their defaults and their validation live here and nowhere else. The
 * native binding requires every field and refuses a missing, non-finite, negative or out-of-range
 * value (ERR_INPUT), and the C++ structs carry no defaults of their own, so a default changed here
 * is the default everywhere.
 */
import os from 'node:os';

import { EngineError } from '../errors/engine-error.js';
import type { ModelConfig } from './model-dir.js';
import type { NativeLoadOptions } from './native.js';
import type { Int8PathRequest } from './int8-path.js';

export type Provider = 'cpu' | 'cuda';

/**
 * How {@link Engine.load} loads a model; only `modelDir` is required.
 * @example
 * const engine = await Engine.load({ modelDir: 'models/svc-alpha-2026-10', provider: 'cpu', threads: 4 });
 */
export interface EngineLoadOptions {
  /** A Hugging Face model directory with an ONNX decoder-with-past export. */
  modelDir: string;
  /** 'cpu' (default) or 'cuda' (needs `npx decide setup-cuda` once, or DECIDE_ORT_LIBRARY; see the README's 'GPU hosts (CUDA)'). */
  provider?: Provider;
  /** Intra-op threads, 1 to 1024; default DECIDE_THREADS, else the number of CPU cores. */
  threads?: number;
  /** Bytes of prefix KV kept across calls (LRU); default 1 GiB. 0 keeps none. */
  prefixCacheBytes?: number;
  /** Padded new tokens per forward pass before a pass is split; default 8192 on 'cpu', 65536 on 'cuda' (a GPU-size call of 64 states is one pass). */
  tokenBudget?: number;
  /** Bytes of forked prefix KV per forward pass before a pass is split; default 1 GiB on 'cpu', 8 GiB on 'cuda'. */
  pastBudgetBytes?: number;
  /**
   * The cost of one more forward pass in token-equivalents (default 32 on 'cpu', 2048 on 'cuda',
   * where a run's fixed cost is kernel launches). Rows are cut into passes where the padding a
   * merged pass would compute costs more than this; Infinity keeps one pass per budget (the
   * padding is then computed).
   */
  passOverheadTokens?: number;
  /**
   * Prefill a long state in several passes, each after the KV of the ones before (a pass computes
   * attention over the causally hidden half too). Default on for 'cpu', where it measured faster
   * on long states, off for 'cuda', where a pass's fixed cost outweighs it.
   */
  prefillChunks?: boolean;
  /** Path of the ONNX Runtime library; default DECIDE_ORT_LIBRARY, else an installed CPU build (see resolveOrtLibrary). */
  ortLibrary?: string;
  /** CUDA device ordinal; default 0. */
  deviceId?: number;
  /**
   * Gather each row's answer position before the LM head (a graph rewrite cached beside the
   * model and verified against the stock graph). Default true; falls back to the stock graph
   * when the rewrite does not apply (EngineInfo.lmHead says why).
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
  /**
   * int8 models: the integer GEMM path, 'auto' (default: from the CPU's flags), 'u8u8' or 'u8s8'
   * (src/engine/int8-path.ts); default DECIDE_INT8_KERNEL, else 'auto'. EngineInfo.int8 says which ran.
   */
  int8Path?: Int8PathRequest;
}

/** The defaults of the options above that do not depend on the provider, the host or the model. */
export const ENGINE_DEFAULTS = {
  provider: 'cpu' as Provider,
  deviceId: 0,
  prefixCacheBytes: 2 ** 30,
  gatherLogits: true,
  /** Packing is a GPU win only (see packSuffixes). */
  packSuffixes: (provider: Provider) => PROVIDER_DEFAULTS[provider].packSuffixes,
} as const;

/**
 * The defaults that differ by provider: how a call is cut into forward passes. On the CPU a pass
 * costs little beyond its arithmetic, so passes stay small and long states are chunked; on a GPU
 * each pass costs its kernel launches, so a call is one or two large passes.
 */
export const PROVIDER_DEFAULTS = {
  cpu: {
    tokenBudget: 8192,
    pastBudgetBytes: 2 ** 30,
    /** Attention scores (rows x new x (past + new)) per pass: keeps long prefixes' score tensors bounded. */
    attentionBudget: 8 * 2 ** 20 as number | 'device',
    passOverheadTokens: 32,
    packSuffixes: false,
    prefillChunks: true,
  },
  cuda: {
    tokenBudget: 65536,
    pastBudgetBytes: 8 * 2 ** 30,
    /** 'device': sized at load from the device's free memory (the score tensors of a pass fit a quarter of it). */
    attentionBudget: 'device' as number | 'device',
    passOverheadTokens: 2048,
    packSuffixes: true,
    prefillChunks: false,
  },
} satisfies Record<Provider, unknown>;

/** ONNX Runtime's log severity for the engine's session: DECIDE_ORT_LOG_LEVEL (0 verbose .. 4 fatal), else 3 (errors). */
export function ortLogSeverity(): number {
  const value = process.env.DECIDE_ORT_LOG_LEVEL;
  if (value === undefined || value.trim() === '') return 3;
  if (!/^[0-4]$/.test(value.trim())) throw new EngineError('ERR_INPUT', `DECIDE_ORT_LOG_LEVEL must be 0 to 4, got '${value}'`);
  return Number(value);
}

/** What an "Infinity" pass overhead becomes: fewest passes, still finite so that costs add up. */
const FEWEST_PASSES_OVERHEAD = 1e12;
const MAX_INT32 = 2 ** 31 - 1;

function invalid(name: string, rule: string, value: unknown): never {
  throw new EngineError('ERR_INPUT', `options.${name} must be ${rule} (got ${String(value)})`);
}

function integerOption(name: string, value: number | undefined, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    invalid(name, `an integer from ${min} to ${max}`, value);
  }
  return value;
}

function booleanOption(name: string, value: boolean | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') invalid(name, 'true or false', value);
  return value;
}

/**
 * Threads per forward pass when the caller names none: DECIDE_THREADS (for hosts that run several
 * engine processes side by side, which would otherwise each spin a thread per core), else every core.
 */
export function defaultThreads(): number {
  const value = process.env.DECIDE_THREADS;
  if (value === undefined || value.trim() === '') return os.availableParallelism();
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > 1024) {
    throw new EngineError('ERR_INPUT', `DECIDE_THREADS must be an integer from 1 to 1024, got '${value}'`);
  }
  return n;
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

/** The provider named, checked; the default when none is. */
export function resolveProvider(options: Pick<EngineLoadOptions, 'provider'>): Provider {
  const provider = options.provider ?? ENGINE_DEFAULTS.provider;
  if (provider !== 'cpu' && provider !== 'cuda') invalid('provider', "'cpu' or 'cuda'", provider);
  return provider;
}

/**
 * Every native load option but the graph path, each either the caller's (validated: ERR_INPUT
 * names the option) or its default.
 */
export function resolveLoadOptions(
  options: EngineLoadOptions,
  config: ModelConfig,
  ortLibrary: string,
): Omit<NativeLoadOptions, 'modelPath'> {
  const provider = resolveProvider(options);
  const defaults = PROVIDER_DEFAULTS[provider];
  const passOverhead = options.passOverheadTokens ?? defaults.passOverheadTokens;
  if (typeof passOverhead !== 'number' || Number.isNaN(passOverhead) || passOverhead < 0) {
    invalid('passOverheadTokens', 'a number of at least 0 (Infinity: fewest passes)', passOverhead);
  }
  if (options.ortProfilePrefix !== undefined && (typeof options.ortProfilePrefix !== 'string' || options.ortProfilePrefix === '')) {
    invalid('ortProfilePrefix', 'a non-empty path prefix', options.ortProfilePrefix);
  }
  return {
    ortLibrary,
    provider,
    threads: options.threads === undefined ? defaultThreads() : integerOption('threads', options.threads, 0, 1, 1024),
    deviceId: integerOption('deviceId', options.deviceId, ENGINE_DEFAULTS.deviceId, 0, MAX_INT32),
    numKvHeads: config.numKvHeads,
    headDim: config.headDim,
    vocabSize: config.vocabSize,
    prefixCacheBytes: integerOption('prefixCacheBytes', options.prefixCacheBytes, ENGINE_DEFAULTS.prefixCacheBytes, 0),
    tokenBudget: integerOption('tokenBudget', options.tokenBudget, defaults.tokenBudget, 1),
    pastBudgetBytes: integerOption('pastBudgetBytes', options.pastBudgetBytes, defaults.pastBudgetBytes, 0),
    // 0 asks the native engine to size it from the device's free memory.
    attentionBudget: defaults.attentionBudget === 'device' ? 0 : defaults.attentionBudget,
    numHeads: config.numHeads,
    maxContext: config.maxPositionEmbeddings,
    attentionWeight: attentionWeight(config),
    passOverheadTokens: Math.min(passOverhead, FEWEST_PASSES_OVERHEAD),
    packSuffixes: booleanOption('packSuffixes', options.packSuffixes, defaults.packSuffixes),
    prefillChunks: booleanOption('prefillChunks', options.prefillChunks, defaults.prefillChunks),
    ortLogSeverity: ortLogSeverity(),
    ortProfilePrefix: options.ortProfilePrefix ?? '',
  };
}
