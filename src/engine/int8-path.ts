/**
 * Which integer GEMM an int8 model (`--dtype int8`) runs on this CPU. The model directory stores
 * one form, uint8 weights around 128 (u8 x u8, exact on every CPU); the engine picks the path at
 * load from the CPU's flags (cpu-int8.ts), and int8-graph.ts makes the graph of the chosen path:
 *
 * - 'u8u8': the stored graph. Each token's activation row quantized to uint8 with its own scale,
 *   `MatMulInteger` u8 x u8, both scales applied. Exact everywhere. On x86 CPUs without VNNI
 *   (AVX2, AVX-512 without VNNI) it is the only exact integer GEMM: ONNX Runtime's u8 x s8 kernel
 *   there adds pairs of products in a saturating int16 (`vpmaddubsw`), which 255 x 127 x 2
 *   overflows. On Arm, ONNX Runtime's u8 x u8 GEMM uses the dot-product instructions (`udot`).
 * - 'u8s8': int8 weights (the stored ones minus 128, converted once at load), the same per-row
 *   activation quantization, and com.microsoft `MatMulIntegerToFloat`, which applies the weight's
 *   per-column scales inside the GEMM (one `Mul` by the row scale remains). u8 x s8 is the GEMM
 *   that VNNI (`vpdpbusd`) and AMX (`tdpbusd`) compute natively and exactly, several times fp32's
 *   speed where u8 x u8 runs below it (docs/benchmark.md, int8 weights).
 *   Why not `DynamicQuantizeMatMul` or `DynamicQuantizeLinear`, as fast alone: both quantize the
 *   activation with one scale for the whole tensor, so a token's answer would depend on the other
 *   tokens of its forward pass (8.7e-2 in logits between a reused prefix and a fresh run on the
 *   tiny model), and `MatMulIntegerToFloat` takes only one activation scale, so the row scale is
 *   applied after it.
 *
 * `DECIDE_INT8_KERNEL` (auto, u8u8, u8s8) or the load option `int8Path` forces one, for tests and
 * for hosts whose flags do not tell the truth (a VM that hides VNNI, for instance).
 */
import { EngineError } from '../errors/engine-error.js';
import type { Int8Support } from './cpu-int8.js';

export type Int8Path = 'u8u8' | 'u8s8';

export const INT8_PATHS: readonly Int8Path[] = ['u8u8', 'u8s8'];

/** What the caller may ask for: a path, or 'auto' (from the CPU's flags). */
export type Int8PathRequest = Int8Path | 'auto';

/** The environment variable that forces a path (the load option `int8Path` wins over it). */
export const INT8_KERNEL_ENV = 'DECIDE_INT8_KERNEL';

/** The flags that make u8 x s8 exact and fast: VNNI (AVX-512 or AVX) and AMX. */
const U8S8_FLAGS = ['avx512_vnni', 'avx_vnni', 'amx_int8'];

export interface Int8PathChoice {
  path: Int8Path;
  /** True when DECIDE_INT8_KERNEL or the load option chose it, not the CPU's flags. */
  forced: boolean;
  /** One sentence: why this path. */
  reason: string;
}

/** The request in `value` (the option, else the environment), checked; 'auto' when neither names one. */
export function int8PathRequest(option: string | undefined, env: string | undefined = process.env[INT8_KERNEL_ENV]): Int8PathRequest {
  const [value, source] = option !== undefined ? [option, 'options.int8Path'] : [env?.trim() ?? '', INT8_KERNEL_ENV];
  if (value === '' || value === 'auto') return 'auto';
  if ((INT8_PATHS as readonly string[]).includes(value)) return value as Int8Path;
  throw new EngineError('ERR_INPUT', `${source} must be auto, u8u8 or u8s8 (got '${value}')`);
}

/** The path for a request on a CPU with `support` (cpuInt8Support(); undefined where its flags cannot be read). */
export function chooseInt8Path(request: Int8PathRequest, support: Int8Support | undefined): Int8PathChoice {
  const vnni = (support?.flags ?? []).filter((f) => U8S8_FLAGS.includes(f));
  if (request !== 'auto') {
    const caveat =
      request === 'u8s8' && vnni.length === 0
        ? ': this CPU lists no VNNI or AMX, so its u8 x s8 GEMM may add pairs of products in a saturating int16 and answer wrongly'
        : '';
    return { path: request, forced: true, reason: `forced (${INT8_KERNEL_ENV} or options.int8Path)${caveat}` };
  }
  if (vnni.length > 0) {
    return { path: 'u8s8', forced: false, reason: `this CPU has ${vnni.join(', ')}: u8 x s8 runs on its int8 dot-product instructions, exact and faster than u8 x u8` };
  }
  if (support === undefined) {
    return { path: 'u8u8', forced: false, reason: "the CPU's flags could not be read (no /proc/cpuinfo): the u8 x u8 GEMM, exact on every CPU" };
  }
  if (support.dotProduct) {
    return {
      path: 'u8u8',
      forced: false,
      reason: `this CPU has ${support.flags.join(', ')} (Arm): ONNX Runtime's u8 x u8 GEMM uses its dot-product instructions, exact; the u8 x s8 path is for x86 VNNI and AMX`,
    };
  }
  return {
    path: 'u8u8',
    forced: false,
    reason: "this CPU has no VNNI or AMX: ONNX Runtime's u8 x s8 GEMM adds pairs of products in a saturating int16 here; the u8 x u8 GEMM is exact and measured at or above fp32's speed",
  };
}
