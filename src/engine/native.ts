/**
 * The whole native surface, typed once. Everything that crosses into C++ goes through here:
 * tokens and offsets as Int32Array, results as Float32Array. No other file loads the addon.
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface NativeLoadOptions {
  modelPath: string;
  ortLibrary: string;
  provider: 'cpu' | 'cuda';
  threads?: number;
  deviceId?: number;
  numKvHeads?: number;
  headDim?: number;
  vocabSize?: number;
  prefixCacheBytes?: number;
  tokenBudget?: number;
  pastBudgetBytes?: number;
  attentionBudget?: number;
  /** Attention FLOPs per (query, key) relative to one token's body FLOPs; used to cut passes. */
  attentionWeight?: number;
  passOverheadTokens?: number;
  maxContext?: number;
}

/** Flat, typed-array form of a score call (see Engine.score for the structured form). */
export interface NativeScoreBatch {
  prefixTokens: Int32Array;
  prefixOffsets: Int32Array; // groups + 1
  suffixTokens: Int32Array;
  suffixOffsets: Int32Array; // suffixes + 1
  suffixGroup: Int32Array; // suffixes
  labelIds: Int32Array;
  labelOffsets: Int32Array; // suffixes + 1
}

export interface NativeCounters {
  calls: number;
  prefixTokensComputed: number;
  prefixTokensReused: number;
  suffixTokens: number;
  forwardPasses: number;
  prefixPasses: number;
  suffixPasses: number;
  paddedTokens: number;
}

export interface NativeScoreResult {
  labelLogits: Float32Array;
  /** Per group: prefix tokens this call did not compute (prefix cache or an identical group). */
  prefixReused: Int32Array;
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
  hasPositionIds: boolean;
  provider: 'cpu' | 'cuda';
  ortLibrary: string;
  kvBytesPerToken: number;
}

export interface NativeEngine {
  load(options: NativeLoadOptions): Promise<void>;
  score(batch: NativeScoreBatch): Promise<NativeScoreResult>;
  info(): NativeModelInfo;
  counters(): NativeCounters & { prefixCacheBytes: number; prefixCacheEntries: number };
  clearPrefixCache(): void;
  close(): void;
}

interface NativeModule {
  NativeEngine: new () => NativeEngine;
}

const require = createRequire(import.meta.url);
const packageRoot = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

let cached: NativeModule | undefined;

/** Loads build/Release/decide_native.node (built by `npm run build:native`). */
export function loadNativeModule(): NativeModule {
  if (cached) return cached;
  const addonPath = path.join(packageRoot, 'build', 'Release', 'decide_native.node');
  if (!existsSync(addonPath)) {
    throw Object.assign(new Error(`native addon not built: ${addonPath} is missing; run npm run build:native`), {
      code: 'ERR_MODEL_LOAD',
    });
  }
  cached = require(addonPath) as NativeModule;
  return cached;
}

/**
 * The ONNX Runtime shared library to dlopen: DECIDE_ORT_LIBRARY when set (a CUDA-enabled build on
 * GPU hosts), else the CPU library bundled inside the onnxruntime-node package.
 */
export function resolveOrtLibrary(explicit?: string): string {
  const fromEnv = explicit ?? process.env.DECIDE_ORT_LIBRARY;
  if (fromEnv) return path.resolve(fromEnv);
  const ortNodeRoot = path.dirname(require.resolve('onnxruntime-node/package.json'));
  const dir = path.join(ortNodeRoot, 'bin', 'napi-v6', process.platform, process.arch);
  const names =
    process.platform === 'win32'
      ? ['onnxruntime.dll']
      : process.platform === 'darwin'
        ? ['libonnxruntime.1.dylib', 'libonnxruntime.dylib']
        : ['libonnxruntime.so.1', 'libonnxruntime.so'];
  for (const name of names) {
    const candidate = path.join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  throw Object.assign(new Error(`no ONNX Runtime library found in ${dir}; set DECIDE_ORT_LIBRARY`), {
    code: 'ERR_ORT_LOAD',
  });
}

/** The directory holding our package.json: src/engine when run from source, dist/src/engine when built. */
function findPackageRoot(from: string): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json')) || !existsSync(path.join(dir, 'CMakeLists.txt'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the package root above ${from}`);
    dir = parent;
  }
  return dir;
}
