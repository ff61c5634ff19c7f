/**
 * The whole native surface, typed once. Everything that crosses into C++ goes through here:
 * tokens and offsets as Int32Array, results as Float32Array. No other file loads the addon.
 */
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { EngineError } from '../errors/engine-error.js';
import { assembledCoreLibrary, cudaRuntimeDir } from './cuda-runtime.js';
import type { CounterValues, EngineGaugeName } from './engine-counters.js';

/**
 * Every field is required: the defaults and the validation live in src/engine/engine-options.ts,
 * and the binding refuses a missing, non-finite, negative or out-of-range value with ERR_INPUT.
 */
export interface NativeLoadOptions {
  modelPath: string;
  ortLibrary: string;
  provider: 'cpu' | 'cuda';
  /** ONNX Runtime intra-op threads, at least 1. */
  threads: number;
  deviceId: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  prefixCacheBytes: number;
  tokenBudget: number;
  pastBudgetBytes: number;
  logitsBudgetBytes: number;
  /** 0: sized from the device's free memory at load. */
  attentionBudget: number;
  /** At least 1: the least that sizing gives, and all it gives where the device cannot tell its free memory. */
  attentionBudgetFloor: number;
  /** Query heads: what one attention score costs in memory, for sizing attentionBudget from the device. */
  numHeads: number;
  /** Attention FLOPs per (query, key) relative to one token's body FLOPs; used to cut passes. */
  attentionWeight: number;
  /** Finite: engine-options.ts turns Infinity into a large finite cost. */
  passOverheadTokens: number;
  packSuffixes: boolean;
  /** Prefill long states in chunks (scorer.h PrefillChunk). */
  prefillChunks: boolean;
  /** Nice increment of the compute threads, 0 to 19 (native/thread_priority.h). */
  computeNice: number;
  /** Pad passes to fixed shapes on fixed buffers (native/shape_buckets.h). */
  shapeBuckets: boolean;
  /** CUDA graphs per fixed shape (needs shapeBuckets and provider 'cuda'). */
  cudaGraphs: boolean;
  /** Every pass's past + new length rounded up to a multiple of this (native/shape_buckets.h AlignPassLength). */
  passLengthMultiple: number;
  /** ONNX Runtime's log severity for the session, 0 (verbose) to 4 (fatal). */
  ortLogSeverity: number;
  maxContext: number;
  /** '' for none; else ONNX Runtime's profiler writes <prefix>_<date>.json when the session closes. */
  ortProfilePrefix: string;
}

/** Flat, typed-array form of a score call (see Engine.score for the structured form). */
export interface NativeScoreBatch {
  prefixTokens: Int32Array;
  prefixOffsets: Int32Array; // groups + 1
  prefixScopes: Int32Array; // groups: each group's cache scope (ScoreGroup.cacheScope)
  suffixTokens: Int32Array;
  suffixOffsets: Int32Array; // suffixes + 1
  suffixGroup: Int32Array; // suffixes
  labelIds: Int32Array;
  labelOffsets: Int32Array; // suffixes + 1
}

/** The binding's counters object: one number per row of ENGINE_COUNTERS (engine-counters.ts). */
export type NativeCounters = CounterValues;

export interface NativeScoreResult {
  labelLogits: Float32Array;
  /** Per group: prefix tokens this call did not compute (prefix cache or an identical group). */
  cachedTokens: Int32Array;
  logSumExp: Float32Array;
  counters: NativeCounters;
}

export interface NativeModelInfo {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  kvDtype: 'float32' | 'float16';
  hasLogitsIndex: boolean;
  /** The graph returns the labels' logits and the log-sum-exps itself: the vocabulary stays on the device. */
  hasLabelHead: boolean;
  /** How KV copies reach the device: 'host' (CPU), 'batched' (one driver call per batch), or 'per-run (why)'. */
  deviceCopyPath: string;
  /** The attention-score bound per pass in force (sized from the device's memory on CUDA). */
  attentionBudget: number;
  hasPositionIds: boolean;
  /** A group's questions run packed into rows rather than one forked row each (packSuffixes on a graph with segment ids). */
  packsSuffixes: boolean;
  /** How passes are shaped: 'exact' (as the rows need), 'buckets' (padded to fixed shapes) or 'cuda-graphs' (fixed shapes, captured and replayed). */
  passShapes: 'exact' | 'buckets' | 'cuda-graphs';
  provider: 'cpu' | 'cuda';
  ortLibrary: string;
  kvBytesPerToken: number;
}

/**
 * Cumulative counters since load plus the engine's state now (ENGINE_GAUGES); read without waiting
 * for a running call.
 */
export type NativeEngineCounters = NativeCounters & Record<EngineGaugeName, number>;

/**
 * The JS-thread methods (info, counters, clearPrefixCache, close) never wait for a running score
 * call: they read atomics or defer (native/scorer.h), so health and metrics stay responsive.
 */
export interface NativeEngine {
  load(options: NativeLoadOptions): Promise<void>;
  score(batch: NativeScoreBatch): Promise<NativeScoreResult>;
  info(): NativeModelInfo;
  counters(): NativeEngineCounters;
  clearPrefixCache(): void;
  close(): void;
}

interface NativeModule {
  NativeEngine: new () => NativeEngine;
  /** null when the dynamic loader can load the shared library `name`, else the loader's message. */
  probeLibrary(name: string): string | null;
  /**
   * null when NVRTC, found as the engine finds it (DECIDE_NVRTC_LIBRARY, the loader's path, beside
   * libcudart), compiles the engine's own CUDA kernels for `arch` ('compute_75', 'sm_90', ...), else
   * why not. Needs no card; synchronous (about a second).
   */
  compileOwnKernels(arch: string): string | null;
  /**
   * Seconds per timed run of a MatMul graph (one float [M, K] input, one output) whose input is
   * copied to the provider's device once and whose output stays there (native/matmul_probe.h): the
   * benchmark's peak. Synchronous. Loads ONNX Runtime from `ortLibrary` like the engine does. An
   * option left out takes its default from native/matmul_probe.h (the one place for them).
   */
  timeMatMul(options: {
    ortLibrary: string;
    modelPath: string;
    provider: 'cpu' | 'cuda';
    threads?: number;
    deviceId?: number;
    minRuns?: number;
    minSeconds?: number;
    maxRuns?: number;
  }): Float64Array;
  /**
   * Ends the process at once with `code`, running no exit handlers: process.exit() first waits for
   * the thread pool, i.e. for a forward pass in flight. For the operator's second signal.
   */
  exitNow(code: number): never;
}

const packageRoot = packageRootOf(import.meta.url);
const require = createRequire(import.meta.url);

let cached: NativeModule | undefined;

/** Beside the prebuilt addon: the version of the ONNX Runtime library shipped with it (scripts/prebuild.mjs writes it). */
export const ORT_VERSION_STAMP = 'onnxruntime-version';

/** The prebuilt addon shipped in the npm package for this platform (see scripts/prebuild.mjs). */
export function prebuiltAddonPath(root = packageRoot): string {
  return path.join(root, 'prebuilds', `${process.platform}-${process.arch}`, 'decide_native.node');
}

/** Diagnostics: another build of the addon (the AddressSanitizer build the close-path test loads). */
function namedAddon(): string | undefined {
  return process.env.DECIDE_NATIVE_ADDON?.trim() || undefined;
}

function builtAddonPath(): string {
  return path.join(packageRoot, 'build', 'Release', 'decide_native.node');
}

/** The addon file loadNativeModule loads (below), or undefined where there is none. */
export function nativeAddonPath(): string | undefined {
  const named = namedAddon();
  if (named) return path.resolve(named);
  const built = builtAddonPath();
  const prebuilt = prebuiltAddonPath();
  return existsSync(built) ? built : existsSync(prebuilt) ? prebuilt : undefined;
}

/**
 * Loads the native addon: DECIDE_NATIVE_ADDON when set (a diagnostic build), else
 * build/Release/decide_native.node when it was built here (`npm run build:native`, or the package's
 * install script on platforms without a prebuilt), else the prebuilt one shipped in the package
 * for this platform.
 */
export function loadNativeModule(): NativeModule {
  if (cached) return cached;
  const named = namedAddon();
  if (named) {
    if (!existsSync(named)) throw new EngineError('ERR_MODEL_LOAD', `DECIDE_NATIVE_ADDON names ${named}, which does not exist`);
    cached = require(path.resolve(named)) as NativeModule;
    return cached;
  }
  const built = builtAddonPath();
  const prebuilt = prebuiltAddonPath();
  const addonPath = nativeAddonPath();
  if (!addonPath) {
    throw new EngineError(
      'ERR_MODEL_LOAD',
      `native addon not built: neither ${built} nor ${prebuilt} exists. In this repository run ` +
        '`npm run build:native`; where decision-engine is a dependency run `npm rebuild decision-engine` ' +
        '(needs a C++17 compiler and cmake; where npm blocks install scripts, first allow it: ' +
        '"allowScripts": {"decision-engine": true} in your package.json)',
    );
  }
  cached = require(addonPath) as NativeModule;
  return cached;
}

/** The CPU ONNX Runtime library names, per platform, inside a directory. */
function ortLibraryNames(): string[] {
  if (process.platform === 'win32') return ['onnxruntime.dll'];
  if (process.platform === 'darwin') return ['libonnxruntime.1.dylib', 'libonnxruntime.dylib'];
  return ['libonnxruntime.so.1', 'libonnxruntime.so'];
}

/**
 * The oldest ONNX Runtime the addon runs on: it asks for the C API version of the headers it is
 * built with (ORT_API_VERSION 29, native/ort_runtime.cc), which ONNX Runtime 1.29 and newer serve.
 */
const MIN_ORT_MINOR = 29;

/** Whether an onnxruntime-node version ("1.30.0") carries an ONNX Runtime the addon can run on. */
export function servesOurApi(version: string): boolean {
  const [major, minor] = version.split('.').map(Number);
  return major! > 1 || (major === 1 && minor! >= MIN_ORT_MINOR);
}

/** Directories that may hold a CPU ONNX Runtime library, in order of preference. */
function ortLibraryDirs(): string[] {
  const dirs: string[] = [];
  // onnxruntime-node first when it is installed (a devDependency here; or the host application's):
  // its JS API may be loaded in the same process, and one process must not hold two ORT copies.
  // An older one (Transformers.js 3 pins 1.21) cannot run the addon: this package's own copy then.
  try {
    const manifest = require.resolve('onnxruntime-node/package.json');
    const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
    if (servesOurApi(version)) dirs.push(path.join(path.dirname(manifest), 'bin', 'napi-v6', process.platform, process.arch));
  } catch {
    // not installed
  }
  // Else the library shipped in this package beside the prebuilt addon (scripts/prebuild.mjs copies
  // onnxruntime-node's core there when the package is packed).
  dirs.push(path.dirname(prebuiltAddonPath()));
  return dirs;
}

/** The ONNX Runtime this process has loaded (an engine's info says which), once one has. */
let loadedOrtLibrary: string | undefined;

/** Called by Engine.load with the library its engine runs on. */
export function noteLoadedOrtLibrary(library: string): void {
  if (library) loadedOrtLibrary = library;
}

/**
 * The ONNX Runtime shared library to dlopen: DECIDE_ORT_LIBRARY when set; else, for the CPU, the one
 * this process has loaded already (noteLoadedOrtLibrary); else the CUDA runtime that
 * `decide setup-cuda` assembled, when there is one (for CPU engines too: one process holds one ORT
 * copy, and that core runs both); else a CPU build from an installed package (see ortLibraryDirs).
 */
export function resolveOrtLibrary(explicit?: string, provider: 'cpu' | 'cuda' = 'cpu'): string {
  const fromEnv = explicit ?? process.env.DECIDE_ORT_LIBRARY;
  if (fromEnv) return path.resolve(fromEnv);
  // A process holds one ONNX Runtime: once an engine has loaded one (from a path its caller named),
  // a CPU engine that names none runs on it rather than failing on a second copy. (A CUDA engine
  // needs a CUDA-capable one: found below, or named.)
  if (provider === 'cpu' && loadedOrtLibrary) return loadedOrtLibrary;
  const cudaRuntime = assembledCoreLibrary(cudaRuntimeDir(packageRoot));
  if (cudaRuntime) return cudaRuntime;
  if (provider === 'cuda') {
    throw new EngineError(
      'ERR_PROVIDER_UNAVAILABLE',
      `no CUDA-capable ONNX Runtime is set up (nothing in ${cudaRuntimeDir(packageRoot)}): run \`npx decide setup-cuda\` ` +
        '(it takes ONNX Runtime and its CUDA provider from the npm registry), or set DECIDE_ORT_LIBRARY to a CUDA-enabled ' +
        'libonnxruntime with libonnxruntime_providers_cuda.so beside it',
    );
  }
  const dirs = ortLibraryDirs();
  for (const dir of dirs) {
    for (const name of ortLibraryNames()) {
      const candidate = path.join(dir, name);
      if (existsSync(candidate)) return candidate;
    }
  }
  throw new EngineError(
    'ERR_ORT_LOAD',
    `no ONNX Runtime library for ${process.platform}-${process.arch} found in ${dirs.join(', ') || 'any installed package'}; ` +
      'set DECIDE_ORT_LIBRARY to a libonnxruntime (>= 1.29), or install onnxruntime-node beside decision-engine ' +
      '(ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node: its CPU library needs no download)',
  );
}

/**
 * The package's own folder, found from one of its modules' `import.meta.url`: the addon, the
 * prebuilt ONNX Runtime, the worker scripts and the assets are read from there. A bundler that
 * copies the package's code into an application's output leaves that folder behind (or, bundling
 * to CommonJS, leaves import.meta.url undefined), so that case is refused at import, saying how to
 * keep the package out of the bundle.
 */
export function packageRootOf(moduleUrl: string | undefined): string {
  if (typeof moduleUrl !== 'string' || moduleUrl === '') throw outsideItsPackage('its code runs without a file location of its own (import.meta.url), as in a CommonJS bundle');
  return findPackageRoot(path.dirname(fileURLToPath(moduleUrl)));
}

/** The directory holding our package.json: src/engine when run from source, dist/src/engine when built. */
export function findPackageRoot(from: string): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json')) || !existsSync(path.join(dir, 'CMakeLists.txt'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw outsideItsPackage(`its code runs from ${from}, with no decision-engine package folder above it`);
    dir = parent;
  }
  return dir;
}

function outsideItsPackage(what: string): EngineError {
  return new EngineError(
    'ERR_MODEL_LOAD',
    `decision-engine cannot run bundled: ${what}. It loads its native addon, ONNX Runtime, worker scripts and assets from ` +
      "its own package folder, so keep it out of your bundle and install it beside it: mark it external " +
      '(esbuild --external:decision-engine or --packages=external; webpack externals; rollup external)',
  );
}

/**
 * Ends the process at once with `code` (NativeModule.exitNow), not waiting for a forward pass in
 * flight; process.exit() where the addon cannot be loaded or predates exitNow.
 */
export function exitNow(code: number): never {
  let native: NativeModule | undefined;
  try {
    native = loadNativeModule();
  } catch {
    // no addon: nothing native can be running either
  }
  if (typeof native?.exitNow === 'function') native.exitNow(code);
  process.exit(code);
}
