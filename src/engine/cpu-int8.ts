/**
 * Whether this CPU has int8 dot-product instructions. They are what makes ONNX Runtime's integer
 * GEMMs (the MatMulInteger of `--dtype int8` models) faster than fp32: x86 VNNI (`avx512_vnni`,
 * `avx_vnni`) and AMX (`amx_int8`), Arm's dot product (`asimddp`) and int8 matrix multiply
 * (`i8mm`). Without them the integer GEMMs run at about the fp32 MatMul's speed (docs/benchmark.md,
 * int8 weights), so an int8 model saves memory and disk there, and little or no time.
 */
import { readFileSync } from 'node:fs';

const DOT_PRODUCT_FLAGS = ['avx512_vnni', 'avx_vnni', 'amx_int8', 'asimddp', 'i8mm'];

export interface Int8Support {
  /** True when at least one of the flags above is present. */
  dotProduct: boolean;
  /** The ones present, in the order above. */
  flags: string[];
}

/**
 * Reads the CPU's feature flags from `cpuinfo` (the text of /proc/cpuinfo; read here when not
 * given). Undefined where there is no such file (not Linux) or it lists no flags.
 */
export function cpuInt8Support(cpuinfo?: string): Int8Support | undefined {
  let text = cpuinfo;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      return undefined;
    }
  }
  // x86 lists "flags", Arm "Features"; every core repeats the line, the first one is enough.
  const line = /^(?:flags|Features)\s*:(.*)$/m.exec(text);
  if (line === null) return undefined;
  const present = new Set(line[1]!.trim().split(/\s+/));
  const flags = DOT_PRODUCT_FLAGS.filter((f) => present.has(f));
  return { dotProduct: flags.length > 0, flags };
}

/** One line for a person choosing --dtype int8 on this host, or undefined when nothing can be said. */
export function int8SpeedNote(support: Int8Support | undefined): string | undefined {
  if (support === undefined) return undefined;
  if (support.dotProduct) return `this CPU has int8 dot-product instructions (${support.flags.join(', ')}): int8 GEMMs run faster than fp32 here`;
  return "this CPU has no int8 dot-product instructions (no VNNI): ONNX Runtime's int8 GEMMs run at about fp32's speed here (measured 1.0x-1.1x on AVX2), so an int8 model saves memory and disk, little or no time";
}
