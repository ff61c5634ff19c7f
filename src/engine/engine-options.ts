/**
 * The engine's load options, declared once in ENGINE_OPTIONS: each option's name, its `decide`
 * flag, its DECIDE_* environment variable, its default and its check. The CLI flags of every
 * command that loads an engine (src/cli/engine-flags.ts), the environment, the validation below
 * and the README's table (test/unit/engine-tables-docs.test.ts) all derive from that table. The
 * native binding requires every field and refuses a missing, non-finite, negative or out-of-range
 * value (ERR_INPUT). It sets every field of the engine's C++ option structs from them (their
 * initialisers are placeholders it always overwrites), so a default changed here is the default
 * everywhere; so is the floor of an attention budget sized on a device (HOST_ATTENTION_BUDGET),
 * which is sent with them.
 */
import os from 'node:os';

import { EngineError } from '../errors/engine-error.js';
import { checkFolderOption, checkFunctionOption, checkOptionNames } from '../support/option-checks.js';
import { attentionWeight } from './attention-weight.js';
import type { ModelConfig } from './model-dir.js';
import type { NativeLoadOptions } from './native.js';
import { FUSED_ATTENTION_REQUESTS, type FusedAttentionRequest, type GraphDeriver } from './attention-graph.js';
import { INT8_KERNEL_ENV, INT8_PATHS, type Int8PathRequest } from './int8-path.js';
import { accepts, parseText, ruleOf, type OptionCheck, type OptionValue } from './option-checks.js';

export type Provider = 'cpu' | 'cuda';

/**
 * How {@link Engine.load} loads a model; only `modelDir` is required. An option left out is taken
 * from its DECIDE_* variable where that is set, else its default (ENGINE_OPTIONS below).
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
  /**
   * Bytes of prefix KV kept across calls (LRU); default 1 GiB on 'cpu', 8 GiB on 'cuda'. 0 keeps none. Counted as the memory
   * kept alive: a state cached straight from the forward pass that computed it holds that pass's
   * KV, counted once for all the pass's states in the cache.
   */
  prefixCacheBytes?: number;
  /** Padded new tokens per forward pass before a pass is split; default 8192 on 'cpu', 65536 on 'cuda' (a GPU-size call of 64 states is one pass). */
  tokenBudget?: number;
  /** Bytes of forked prefix KV per forward pass before a pass is split; default 1 GiB on 'cpu', 8 GiB on 'cuda'. */
  pastBudgetBytes?: number;
  /**
   * Bytes of a forward pass's logits before the pass is split; default 512 MiB on 'cpu', 4 GiB on
   * 'cuda'. The scoring head computes the whole vocabulary's logits at each question's answer
   * position (about 12 bytes per vocabulary entry with its temporaries: 1.8 MB a question at
   * Qwen3's 151,936), so many short questions in one pass would hold gigabytes. A graph without the
   * scoring head (`gatherLogits` off) returns every position's logits (4 bytes an entry): the
   * budget bounds those.
   */
  logitsBudgetBytes?: number;
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
  /**
   * Pad every forward pass to one of a few fixed shapes (rows, past and new tokens rounded up to
   * 1..8, 10, 12, 14, 16, 20, ...: at most 25% per dimension) and run it on buffers reused at fixed
   * addresses, the precondition of CUDA graphs. Answers are unchanged (within 1e-6); padding is
   * computed. Default off.
   */
  shapeBuckets?: boolean;
  /**
   * Round every forward pass's total length (past + new tokens) up to a multiple of this, with
   * masked past columns where the past is padded already, else masked new tokens (a past every row
   * fills stays one copy per layer to fork: native/shape_buckets.h). Default 1 on 'cpu', 8 on
   * 'cuda': ONNX Runtime's CUDA attention runs its fused memory-efficient kernel with a mask only
   * when the mask's rows are aligned, and an unfused one otherwise. Answers are unchanged.
   */
  passLengthMultiple?: number;
  /**
   * 'cuda' only: capture each fixed pass shape's run as a CUDA graph once and replay it after,
   * which removes the kernel launches' host time (implies shapeBuckets; needs the scoring head and
   * the fused graph without control flow: a standard-op graph is refused with ERR_INPUT). Default
   * off: its replays have not yet run right on a GPU.
   */
  cudaGraphs?: boolean;
  /**
   * Which decoder graph runs: 'auto' (default) runs a fused graph derived from a standard-op model
   * on 'cuda' (cached beside the model, checked once against it) and the model's own graph on
   * 'cpu'; 'on' derives it on either provider; 'off' always runs the model's own graph. Deriving
   * needs `graphDeriver`. EngineInfo.attention says which ran and why (src/engine/attention-graph.ts).
   */
  fusedAttention?: FusedAttentionRequest;
  /**
   * The fused graph this engine derives (fusedAttention) with the engine's own operators where a
   * layer has what they fuse: the q and k norms with rotary in one HeadNormRotary, SiLU(gate) * up
   * in one SiluMul (12 nodes per Qwen3 layer instead of 20). On CUDA their kernels are compiled by
   * NVRTC for the card at load; where that fails the fused graph without them runs and
   * EngineInfo.attention.reason says why. Default off: not yet measured on a GPU.
   */
  ownKernels?: boolean;
  /**
   * What derives the fused graph for `fusedAttention`: `deriveFusedGraph` (exported beside Engine),
   * which the decision service and the `decide` commands pass. Without it the model's own graph runs.
   * @example
   * const engine = await Engine.load({ modelDir, provider: 'cuda', graphDeriver: deriveFusedGraph });
   */
  graphDeriver?: GraphDeriver;
  /**
   * Path of the ONNX Runtime library; default DECIDE_ORT_LIBRARY, else (on the CPU) the one this
   * process has loaded already, else an installed build (see resolveOrtLibrary). A process holds
   * one: naming another after it is ERR_ORT_LOAD.
   */
  ortLibrary?: string;
  /**
   * ONNX Runtime's log severity for the session, 0 (verbose) to 4 (fatal); default DECIDE_ORT_LOG_LEVEL,
   * else 3 (errors). Below 3 it also lowers the process's ONNX Runtime environment to it (kernels
   * log there, e.g. which attention kernel CUDA picked), for every later session of the process.
   */
  ortLogLevel?: number;
  /** CUDA device ordinal; default 0. */
  deviceId?: number;
  /**
   * How much lower than the process's the scheduling priority of the threads that compute is (a
   * Linux nice increment, 0 to 19; a no-op elsewhere). Default 10: when the engine keeps every core
   * busy, the JavaScript thread (request handling, the health probes) still gets a core first. 0
   * leaves them equal.
   */
  computeNice?: number;
  /**
   * Gather each row's answer position before the LM head (a graph rewrite cached beside the
   * model and verified against the stock graph). Default true; falls back to the stock graph
   * when the rewrite does not apply (EngineInfo.lmHead says why).
   */
  gatherLogits?: boolean;
  /**
   * With a graph that takes segment ids (`--segment-ids on`, the default of make-model and
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

/**
 * Every load option but the model directory and the graph deriver (a function, not a setting):
 * what a command or a service passes to each engine it loads, one row each in ENGINE_OPTIONS.
 */
export type EngineOptions = Omit<EngineLoadOptions, 'modelDir' | 'graphDeriver'>;

/** The defaults of the options above that do not depend on the provider, the host or the model. */
export const ENGINE_DEFAULTS = {
  provider: 'cpu' as Provider,
  deviceId: 0,
  /** Measured on a 2-core host under 50 concurrent requests: /healthz median ~350 ms at 0, ~30 ms at 10. */
  computeNice: 10,
  gatherLogits: true,
  /** Errors only. */
  ortLogLevel: 3,
  /** From the CPU's flags (src/engine/int8-path.ts). */
  int8Path: 'auto' as Int8PathRequest,
  /** The fused graph measured faster on an H100, no faster on the CPU (docs/models.md). */
  fusedAttention: 'auto' as FusedAttentionRequest,
  shapeBuckets: false,
  /** Off until a GPU measures it faster (docs/models.md, "The engine's own kernels"). */
  ownKernels: false,
  /** Off until a GPU measures it faster (docs/models.md, "CUDA graphs"). */
  cudaGraphs: false,
} as const;

/**
 * Attention scores (rows x new x (past + new)) per pass on the CPU; also the least a budget sized
 * from a device's free memory gets, and all it gets where the device cannot tell its free memory.
 */
const HOST_ATTENTION_BUDGET = 8 * 2 ** 20;

/**
 * The defaults that differ by provider: how a call is cut into forward passes, and how much of
 * them the prefix cache may keep. On the CPU a pass costs little beyond its arithmetic, so passes
 * stay small and long states are chunked; on a GPU each pass costs its kernel launches, so a call
 * is one or two large passes, and the cache has room for one whole.
 */
export const PROVIDER_DEFAULTS = {
  cpu: {
    prefixCacheBytes: 2 ** 30,
    tokenBudget: 8192,
    pastBudgetBytes: 2 ** 30,
    logitsBudgetBytes: 512 * 2 ** 20,
    /** Attention scores (rows x new x (past + new)) per pass: keeps long prefixes' score tensors bounded. */
    attentionBudget: HOST_ATTENTION_BUDGET as number | 'device',
    passOverheadTokens: 32,
    packSuffixes: false,
    prefillChunks: true,
    passLengthMultiple: 1,
  },
  cuda: {
    /** Room for the whole pass of a GPU-size call's states (64 x 390 tokens of qwen3-0.6b in fp16: about 3.9 GB), kept as views of it with no copy. */
    prefixCacheBytes: 8 * 2 ** 30,
    tokenBudget: 65536,
    pastBudgetBytes: 8 * 2 ** 30,
    logitsBudgetBytes: 4 * 2 ** 30,
    /** 'device': sized at load from the device's free memory (the score tensors of a pass fit a quarter of it). */
    attentionBudget: 'device' as number | 'device',
    passOverheadTokens: 2048,
    packSuffixes: true,
    prefillChunks: false,
    /** ONNX Runtime's CUDA memory-efficient attention takes a mask only with rows aligned to 4 elements (ONNX's Attention) or 4 x the element size (its contrib ops: 8 in fp16). */
    passLengthMultiple: 8,
  },
} satisfies Record<Provider, unknown>;

/** One engine option, declared once: everything else (flags, environment, checks, docs) derives from it. */
export interface EngineOptionSpec {
  /** The flag of every `decide` command that loads an engine: the option's name in kebab case. */
  flag: `--${string}`;
  /** The environment variable read when neither the caller nor a flag gives the option. */
  env: `DECIDE_${string}`;
  check: OptionCheck;
  /** The default on a provider; undefined where it is worked out at load (`defaultText` says how). */
  default: (provider: Provider) => OptionValue | undefined;
  /** The default in words, where it is not one plain value. */
  defaultText?: string;
  /** One sentence for --help and the docs. */
  help: string;
}

const MAX_INT32 = 2 ** 31 - 1;
const perProvider = (key: keyof (typeof PROVIDER_DEFAULTS)['cpu']) => (provider: Provider) => PROVIDER_DEFAULTS[provider][key] as OptionValue;

/**
 * Every engine option, in the order --help and the docs list them. Flags are the option's name
 * in kebab case and variables DECIDE_ + its name in capitals, except DECIDE_INT8_KERNEL (the name
 * users have). Keyed by EngineOptions, so an option cannot be added without its row.
 */
export const ENGINE_OPTIONS: { readonly [K in keyof Required<EngineOptions>]: EngineOptionSpec } = {
  provider: {
    flag: '--provider', env: 'DECIDE_PROVIDER', check: { kind: 'choice', values: ['cpu', 'cuda'] },
    default: () => ENGINE_DEFAULTS.provider,
    help: "where the forward passes run: cpu, or cuda (after `npx decide setup-cuda`)",
  },
  threads: {
    flag: '--threads', env: 'DECIDE_THREADS', check: { kind: 'integer', min: 1, max: 1024 },
    default: () => os.availableParallelism(), defaultText: 'every core',
    help: 'ONNX Runtime intra-op threads per forward pass; set it where several engine processes share a host',
  },
  deviceId: {
    flag: '--device-id', env: 'DECIDE_DEVICE_ID', check: { kind: 'integer', min: 0, max: MAX_INT32 },
    default: () => ENGINE_DEFAULTS.deviceId,
    help: 'CUDA device ordinal',
  },
  computeNice: {
    flag: '--compute-nice', env: 'DECIDE_COMPUTE_NICE', check: { kind: 'integer', min: 0, max: 19 },
    default: () => ENGINE_DEFAULTS.computeNice,
    help: "how much lower than the process's the compute threads' scheduling priority is (Linux nice increment), so that request handling and the health probes get a core first; 0 leaves them equal",
  },
  prefixCacheBytes: {
    flag: '--prefix-cache-bytes', env: 'DECIDE_PREFIX_CACHE_BYTES', check: { kind: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER },
    default: perProvider('prefixCacheBytes'),
    help: "bytes of states' prefix KV kept across calls, as the memory they keep alive (least recently used out first); 0 keeps none",
  },
  tokenBudget: {
    flag: '--token-budget', env: 'DECIDE_TOKEN_BUDGET', check: { kind: 'integer', min: 1, max: Number.MAX_SAFE_INTEGER },
    default: perProvider('tokenBudget'),
    help: 'padded new tokens per forward pass before a pass is split',
  },
  pastBudgetBytes: {
    flag: '--past-budget-bytes', env: 'DECIDE_PAST_BUDGET_BYTES', check: { kind: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER },
    default: perProvider('pastBudgetBytes'),
    help: 'bytes of forked prefix KV per forward pass before a pass is split',
  },
  logitsBudgetBytes: {
    flag: '--logits-budget-bytes', env: 'DECIDE_LOGITS_BUDGET_BYTES', check: { kind: 'integer', min: 1, max: Number.MAX_SAFE_INTEGER },
    default: perProvider('logitsBudgetBytes'),
    help: "bytes of a forward pass's logits over the whole vocabulary (each question's answer position; every position on a graph without the scoring head) before a pass is split",
  },
  passOverheadTokens: {
    flag: '--pass-overhead-tokens', env: 'DECIDE_PASS_OVERHEAD_TOKENS', check: { kind: 'number', min: 0 },
    default: perProvider('passOverheadTokens'),
    help: 'the cost of one more forward pass in tokens: rows are cut into passes where padding would cost more; Infinity keeps one pass per budget',
  },
  prefillChunks: {
    flag: '--prefill-chunks', env: 'DECIDE_PREFILL_CHUNKS', check: { kind: 'boolean' },
    default: perProvider('prefillChunks'),
    help: 'prefill a long state in several passes, each after the KV of the ones before',
  },
  packSuffixes: {
    flag: '--pack-suffixes', env: 'DECIDE_PACK_SUFFIXES', check: { kind: 'boolean' },
    default: perProvider('packSuffixes'),
    help: "the question layout on a graph with segment ids (make-model's `--segment-ids on`): on packs a state's questions into rows, off forks the state's KV into a row per question",
  },
  fusedAttention: {
    flag: '--fused-attention', env: 'DECIDE_FUSED_ATTENTION', check: { kind: 'choice', values: [...FUSED_ATTENTION_REQUESTS] },
    default: () => ENGINE_DEFAULTS.fusedAttention,
    help: "auto runs a fused graph derived from a standard-op model on cuda (cached beside the model), the model's own on cpu; on derives it on either; off keeps the model's own",
  },
  ownKernels: {
    flag: '--own-kernels', env: 'DECIDE_OWN_KERNELS', check: { kind: 'boolean' },
    default: () => ENGINE_DEFAULTS.ownKernels,
    help: "the fused graph this engine derives uses the engine's own operators (q/k norms with rotary, SiLU x up: one pass each); on cuda they are compiled by NVRTC at load; off until measured on a GPU",
  },
  shapeBuckets: {
    flag: '--shape-buckets', env: 'DECIDE_SHAPE_BUCKETS', check: { kind: 'boolean' },
    default: () => ENGINE_DEFAULTS.shapeBuckets,
    help: 'pad every forward pass to a few fixed shapes (at most 25% more rows and tokens each) on buffers at fixed addresses, as CUDA graphs need',
  },
  passLengthMultiple: {
    flag: '--pass-length-multiple', env: 'DECIDE_PASS_LENGTH_MULTIPLE', check: { kind: 'integer', min: 1, max: 256 },
    default: perProvider('passLengthMultiple'),
    help: "round each forward pass's past + new length up to a multiple of this with masked padding, so that a GPU's fused attention kernel takes the mask",
  },
  cudaGraphs: {
    flag: '--cuda-graphs', env: 'DECIDE_CUDA_GRAPHS', check: { kind: 'boolean' },
    default: () => ENGINE_DEFAULTS.cudaGraphs,
    help: 'cuda only: capture each fixed pass shape as a CUDA graph once and replay it (implies --shape-buckets; the fused graph only; its replays have not yet run right on a GPU, so off)',
  },
  gatherLogits: {
    flag: '--gather-logits', env: 'DECIDE_GATHER_LOGITS', check: { kind: 'boolean' },
    default: () => ENGINE_DEFAULTS.gatherLogits,
    help: "compute the LM head at each row's answer position only (a graph rewrite cached beside the model); off runs the stock graph",
  },
  ortLibrary: {
    flag: '--ort-library', env: 'DECIDE_ORT_LIBRARY', check: { kind: 'path' },
    default: () => undefined,
    defaultText: "the runtime `decide setup-cuda` assembled, else onnxruntime-node's build when installed, else the one shipped in `prebuilds/<platform>-<arch>/`",
    help: 'the ONNX Runtime library to load',
  },
  ortLogLevel: {
    flag: '--ort-log-level', env: 'DECIDE_ORT_LOG_LEVEL', check: { kind: 'integer', min: 0, max: 4 },
    default: () => ENGINE_DEFAULTS.ortLogLevel,
    help: "ONNX Runtime's log severity for the session (and, below 3, for the process's kernels too): 0 verbose, 3 errors, 4 fatal only",
  },
  ortProfilePrefix: {
    flag: '--ort-profile-prefix', env: 'DECIDE_ORT_PROFILE_PREFIX', check: { kind: 'prefix' },
    default: () => undefined, defaultText: 'none',
    help: "diagnostics: ONNX Runtime's profiler writes every node's kernel time to `<prefix>_<date>.json` when the engine closes (slows every call a little)",
  },
  int8Path: {
    flag: '--int8-path', env: INT8_KERNEL_ENV as `DECIDE_${string}`, check: { kind: 'choice', values: ['auto', ...INT8_PATHS] },
    default: () => ENGINE_DEFAULTS.int8Path,
    help: "int8 models: the integer GEMM path; auto picks by the CPU's flags (u8s8 with VNNI or AMX; docs/models.md)",
  },
};

/** The option names, in the table's order. */
export const ENGINE_OPTION_NAMES = Object.keys(ENGINE_OPTIONS) as Array<keyof EngineOptions>;

/** What an "Infinity" pass overhead becomes: fewest passes, still finite so that costs add up. */
const FEWEST_PASSES_OVERHEAD = 1e12;

function invalid(name: string, rule: string, value: unknown): never {
  throw new EngineError('ERR_INPUT', `options.${name} must be ${rule} (got ${typeof value === 'string' ? `'${value}'` : String(value)})`);
}

/**
 * The options given, with each one missing taken from its DECIDE_* variable where that is set
 * (the caller's value wins). A variable the option's check refuses is ERR_INPUT naming it.
 */
export function withEnvironment<T extends EngineOptions>(options: T, env: NodeJS.ProcessEnv = process.env): T {
  const out: Record<string, unknown> = { ...options };
  for (const name of ENGINE_OPTION_NAMES) {
    const spec = ENGINE_OPTIONS[name];
    const text = env[spec.env];
    if (out[name] !== undefined || text === undefined || text.trim() === '') continue;
    const value = parseText(spec.check, text);
    if (value === undefined) throw new EngineError('ERR_INPUT', `${spec.env} must be ${ruleOf(spec.check)}, got '${text}'`);
    out[name] = value;
  }
  return out as T;
}

/** Engine.load's option names: every engine option, modelDir and graphDeriver. */
const LOAD_OPTION_NAMES: readonly string[] = [...ENGINE_OPTION_NAMES, 'modelDir', 'graphDeriver'];

/**
 * Refuses Engine.load options that are not an object, that name an option there is none of (a
 * typo such as `thread` would otherwise be ignored and the default used), whose modelDir is not a
 * path or whose graphDeriver is not a function: ERR_INPUT naming it. The engine options' values
 * are checkEngineOptions()'s.
 */
export function checkLoadOptionsGiven(given: unknown): void {
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new EngineError('ERR_INPUT', 'Engine.load(options): options must be an object with at least modelDir');
  }
  checkOptionNames(given, LOAD_OPTION_NAMES, 'Engine.load');
  // An empty path would be read as the current directory.
  checkFolderOption((given as { modelDir?: unknown }).modelDir, 'modelDir', 'Engine.load');
  checkFunctionOption((given as { graphDeriver?: unknown }).graphDeriver, 'graphDeriver', 'Engine.load');
}

/** The options of an engine that a caller passes on (DecisionService's runtime.engine): all but modelDir. */
export const ENGINE_PASS_OPTION_NAMES: readonly string[] = [...ENGINE_OPTION_NAMES, 'graphDeriver'];

/** Checks every option given against its row (ERR_INPUT naming the first refused). */
export function checkEngineOptions(options: EngineOptions): void {
  for (const name of ENGINE_OPTION_NAMES) {
    const value = options[name];
    const { check } = ENGINE_OPTIONS[name];
    if (value === undefined || accepts(check, value)) continue;
    // "at least N" leaves out the top: an integer a double cannot hold exactly is refused too.
    const unsafe = check.kind === 'integer' && check.max === Number.MAX_SAFE_INTEGER && typeof value === 'number' && value > check.max;
    invalid(name, check.kind === 'boolean' ? 'true or false' : unsafe ? `${ruleOf(check)} and at most ${Number.MAX_SAFE_INTEGER} (2^53 - 1)` : ruleOf(check), value);
  }
}

/**
 * Options each valid alone that cannot go together (after the DECIDE_* variables), as a sentence
 * starting with the option's name; undefined when none conflict. The library refuses them at load
 * (ERR_INPUT), the commands as a usage error before any model loads.
 */
export function optionConflict(options: EngineOptions): string | undefined {
  const provider = options.provider ?? ENGINE_DEFAULTS.provider;
  if (options.cudaGraphs === true && provider !== 'cuda') {
    return "cudaGraphs needs provider 'cuda' (CUDA graphs are a CUDA feature; shapeBuckets alone runs anywhere)";
  }
  return undefined;
}

/** The provider named, checked; the default when none is. */
export function resolveProvider(options: Pick<EngineLoadOptions, 'provider'>): Provider {
  const provider = options.provider ?? ENGINE_DEFAULTS.provider;
  if (!accepts(ENGINE_OPTIONS.provider.check, provider)) invalid('provider', ruleOf(ENGINE_OPTIONS.provider.check), provider);
  return provider;
}

/** One option as an engine loaded with `given` runs it: the caller's, else its DECIDE_* variable's, else its provider's default. */
export function effectiveOption<K extends keyof EngineOptions>(given: EngineOptions, name: K, env: NodeJS.ProcessEnv = process.env): NonNullable<EngineOptions[K]> {
  const options = withEnvironment(given, env);
  return (options[name] ?? ENGINE_OPTIONS[name].default(resolveProvider(options))) as NonNullable<EngineOptions[K]>;
}

/**
 * Every native load option but the graph path, each the caller's, else its DECIDE_* variable's,
 * else its default; each checked against its ENGINE_OPTIONS row (ERR_INPUT names the option).
 */
export function resolveLoadOptions(
  given: EngineLoadOptions,
  config: ModelConfig,
  ortLibrary: string,
): Omit<NativeLoadOptions, 'modelPath'> {
  const options = withEnvironment(given);
  checkEngineOptions(options);
  const provider = resolveProvider(options);
  const conflict = optionConflict(options);
  if (conflict !== undefined) throw new EngineError('ERR_INPUT', `options.${conflict}`);
  const value = <K extends keyof EngineOptions>(name: K) => (options[name] ?? ENGINE_OPTIONS[name].default(provider)) as NonNullable<EngineOptions[K]>;
  const defaults = PROVIDER_DEFAULTS[provider];
  return {
    ortLibrary,
    provider,
    threads: value('threads'),
    deviceId: value('deviceId'),
    computeNice: value('computeNice'),
    numKvHeads: config.numKvHeads,
    headDim: config.headDim,
    vocabSize: config.vocabSize,
    prefixCacheBytes: value('prefixCacheBytes'),
    tokenBudget: value('tokenBudget'),
    pastBudgetBytes: value('pastBudgetBytes'),
    logitsBudgetBytes: value('logitsBudgetBytes'),
    // 0 asks the native engine to size it from the device's free memory.
    attentionBudget: defaults.attentionBudget === 'device' ? 0 : defaults.attentionBudget,
    attentionBudgetFloor: HOST_ATTENTION_BUDGET,
    numHeads: config.numHeads,
    maxContext: config.maxPositionEmbeddings,
    attentionWeight: attentionWeight(config),
    passOverheadTokens: Math.min(value('passOverheadTokens'), FEWEST_PASSES_OVERHEAD),
    packSuffixes: value('packSuffixes'),
    prefillChunks: value('prefillChunks'),
    // cudaGraphs implies shape buckets: the native decoder applies that (it holds for every caller).
    shapeBuckets: value('shapeBuckets'),
    cudaGraphs: value('cudaGraphs'),
    passLengthMultiple: value('passLengthMultiple'),
    ortLogSeverity: value('ortLogLevel'),
    ortProfilePrefix: options.ortProfilePrefix ?? '',
  };
}
