/**
 * ONNX Runtime for CUDA, from the npm registry only: `decide setup-cuda` assembles a folder holding
 * onnxruntime-node's CUDA-capable core library and the CUDA provider of
 * com.github.asus4.onnxruntime.linux-x64-gpu beside it (ONNX Runtime looks for its providers next
 * to the core). Nothing of it is installed by default: the provider is 230 MB.
 * Also the host check that names a missing CUDA piece (driver, CUDA 13 runtime, cuBLAS, cuRAND)
 * with its fix, before ONNX Runtime fails with a generic provider error.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';

import { envPath } from '../support/env-path.js';

/**
 * The known-good pair (with CUDA 13.0; README, "GPU hosts"): onnxruntime-node 1.30's core is built
 * with CUDA support, but its own provider comes from a postinstall download outside the registry;
 * asus4's package carries the ORT 1.29 provider built for CUDA 13 (its own Linux core is CPU-only).
 */
export const CUDA_RUNTIME_PACKAGES = {
  core: { spec: 'onnxruntime-node@1.30.0', version: '1.30.0', files: ['package/bin/napi-v6/linux/x64/libonnxruntime.so.1'] },
  provider: {
    spec: 'com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9',
    version: '0.4.9',
    files: ['package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so', 'package/Plugins/Linux/x64/libonnxruntime_providers_shared.so'],
  },
} as const;

export const CORE_LIBRARY = 'libonnxruntime.so.1';
export const PROVIDER_LIBRARIES = ['libonnxruntime_providers_cuda.so', 'libonnxruntime_providers_shared.so'] as const;

/** Where setup-cuda puts the runtime: DECIDE_CUDA_RUNTIME_DIR, else `cuda-runtime/` in the package. */
export function cudaRuntimeDir(packageRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(envPath(env, 'DECIDE_CUDA_RUNTIME_DIR') ?? path.join(packageRoot, 'cuda-runtime'));
}

/** The core library of an assembled runtime in `dir`, or undefined when any of its files is missing. */
export function assembledCoreLibrary(dir: string): string | undefined {
  const complete = [CORE_LIBRARY, ...PROVIDER_LIBRARIES].every((f) => existsSync(path.join(dir, f)));
  return complete ? path.join(dir, CORE_LIBRARY) : undefined;
}

const CUDA13_FIX =
  'install the CUDA 13 libraries (e.g. `apt install cuda-libraries-13-0` from NVIDIA\'s repository) and put their ' +
  'directory on LD_LIBRARY_PATH before starting node (e.g. /usr/local/cuda-13.0/targets/x86_64-linux/lib)';

/** What the CUDA provider library needs from the host (its NEEDED entries beyond the C/C++ runtime). */
export const CUDA_HOST_LIBRARIES: ReadonlyArray<{ name: string; what: string; fix: string }> = [
  {
    name: 'libcuda.so.1',
    what: 'the NVIDIA driver',
    fix: 'install the NVIDIA driver (nvidia-smi must list the GPU); in a container, start it with the GPU exposed (e.g. --gpus all)',
  },
  { name: 'libcudart.so.13', what: 'the CUDA 13 runtime', fix: CUDA13_FIX },
  { name: 'libcublas.so.13', what: 'cuBLAS for CUDA 13', fix: CUDA13_FIX },
  { name: 'libcublasLt.so.13', what: 'cuBLASLt for CUDA 13', fix: CUDA13_FIX },
  { name: 'libcurand.so.10', what: 'cuRAND for CUDA 13', fix: CUDA13_FIX },
];

/**
 * Every missing piece for running the CUDA provider with the core library `ortLibrary`, one
 * sentence each naming it and the fix; empty when nothing is missing. `probe` asks the dynamic
 * loader (null: loads).
 */
export function missingCudaPieces(ortLibrary: string, probe: (name: string) => string | null): string[] {
  const missing: string[] = [];
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return [`the CUDA provider is set up for Linux x64 only; this host is ${process.platform}-${process.arch}`];
  }
  const dir = path.dirname(ortLibrary);
  const absent = PROVIDER_LIBRARIES.filter((lib) => !existsSync(path.join(dir, lib)));
  if (absent.length > 0) {
    missing.push(`ONNX Runtime's CUDA provider (${absent.join(', ')}) is not beside ${ortLibrary}: run \`npx decide setup-cuda\``);
  }
  for (const lib of CUDA_HOST_LIBRARIES) {
    const why = probe(lib.name);
    if (why !== null) missing.push(`${lib.what} (${lib.name}) cannot be loaded: ${lib.fix}`);
  }
  return missing;
}

/**
 * NVRTC, which only the engine's own kernels need (the `ownKernels` option; native/device/cuda_module.cc
 * looks for it in this order, then beside the loaded libcudart). One line saying whether it loads
 * and, where `compile` is given, whether it compiles the kernels (as PTX for compute_75, which
 * needs no card).
 */
export function nvrtcNote(probe: (name: string) => string | null, env: NodeJS.ProcessEnv = process.env, compile?: (arch: string) => string | null): string {
  const named = env.DECIDE_NVRTC_LIBRARY?.trim();
  const candidates = named ? [named] : ['libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so'];
  const found = candidates.find((name) => probe(name) === null);
  if (found) {
    const failed = compile?.('compute_75') ?? null;
    if (failed === null) return `the engine's own kernels (--own-kernels on) can be compiled here: NVRTC (${found}) loads${compile ? ' and compiles them' : ''}`;
    return `the engine's own kernels (--own-kernels on, off by default) do not compile here with NVRTC (${found}): ${failed}; everything else runs without them`;
  }
  return (
    `the engine's own kernels (--own-kernels on, off by default) need NVRTC, and ${candidates.join(', ')} cannot be loaded: ` +
    'install it with the CUDA 13 toolkit (e.g. `apt install cuda-nvrtc-13-0`) or set DECIDE_NVRTC_LIBRARY (a running engine also ' +
    'looks beside the libcudart the CUDA provider loaded); everything else runs without it'
  );
}
