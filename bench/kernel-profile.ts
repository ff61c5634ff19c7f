/**
 * Device time by kernel, from Nsight Compute's per-kernel summary (`ncu --metrics
 * gpu__time_duration.sum --print-summary per-kernel --csv`): what `decide gpu-report` reads to say
 * where a GPU-size call's kernel time goes. ONNX Runtime's own profile cannot say it on a CUDA
 * provider built without its CUDA profiler (the npm one): its node events are then host launch times.
 * ncu serialises the kernels, and by default locks the clocks and flushes the caches before each;
 * `decide gpu-report` asks for neither (`--clock-control none --cache-control none`), so that a
 * call's kernel time compares with a timed call's wall time.
 */

export interface KernelTime {
  name: string;
  calls: number;
  /** Summed device time of its calls, in microseconds. */
  micros: number;
}

export interface KernelFamilyTime {
  family: string;
  calls: number;
  micros: number;
  share: number;
}

export interface KernelProfile {
  totalMicros: number;
  families: KernelFamilyTime[];
  /** The slowest kernels by summed time. */
  top: (KernelTime & { share: number })[];
}

/** One CSV line's fields (quoted, commas inside quotes kept). */
function csvFields(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '"') {
      if (quoted && line[i + 1] === '"') {
        field += '"';
        i++;
      } else {
        quoted = !quoted;
      }
    } else if (c === ',' && !quoted) {
      fields.push(field);
      field = '';
    } else {
      field += c;
    }
  }
  fields.push(field);
  return fields;
}

/** ncu prints numbers with thousands separators ("216,120.71"). */
const number = (text: string | undefined) => Number((text ?? '').replace(/,/g, ''));

/**
 * The kernels of an ncu per-kernel summary (the program's own output and ncu's "==PROF==" lines
 * around it are skipped). Kernels of one name with several launch shapes are summed.
 */
export function parseNcuSummary(text: string): KernelTime[] {
  const lines = text.split('\n');
  const headerAt = lines.findIndex((l) => l.startsWith('"') && l.includes('"Kernel Name"') && l.includes('"Invocations"'));
  if (headerAt < 0) return [];
  const header = csvFields(lines[headerAt]!);
  const col = (name: string) => header.indexOf(name);
  const [nameCol, callsCol, metricCol, unitCol, averageCol] = ['Kernel Name', 'Invocations', 'Metric Name', 'Metric Unit', 'Average'].map(col);
  const byName = new Map<string, KernelTime>();
  for (const line of lines.slice(headerAt + 1)) {
    if (!line.startsWith('"')) continue;
    const f = csvFields(line);
    if (f[metricCol!] !== 'gpu__time_duration.sum') continue;
    const calls = number(f[callsCol!]);
    const unit = f[unitCol!] === 'ns' ? 1e-3 : f[unitCol!] === 'us' ? 1 : f[unitCol!] === 'ms' ? 1e3 : NaN;
    const micros = calls * number(f[averageCol!]) * unit;
    if (!Number.isFinite(micros)) continue;
    const name = f[nameCol!]!;
    const entry = byName.get(name) ?? { name, calls: 0, micros: 0 };
    entry.calls += calls;
    entry.micros += micros;
    byName.set(name, entry);
  }
  return [...byName.values()];
}

/** What a kernel is for, by its name (cuBLAS, CUTLASS, cuDNN and ONNX Runtime's own kernels). */
const FAMILIES: [string, RegExp][] = [
  ['attention', /attention_kernel|AttentionKernel|flash|fmha|UnfusedSoftmax/i],
  ['GEMM (MatMul)', /gemm|nvjet|xmma|splitKreduce/i],
  ['Split', /Split/],
  ['RotaryEmbedding', /Rotary/],
  ['norms', /LayerNorm/],
  ['reductions', /reduce/i],
  ['softmax', /softmax/i],
  ['KV append, KV head expansion', /ConcatNewToPast|Ungroup|Concat/],
  ['elementwise', /ElementWise|QuickGelu|Gather|Cast|Fill|Range|Transpose/i],
];

export function kernelFamily(name: string): string {
  return FAMILIES.find(([, pattern]) => pattern.test(name))?.[0] ?? 'other';
}

export function summarizeKernels(text: string, top = 12): KernelProfile {
  const kernels = parseNcuSummary(text);
  const totalMicros = kernels.reduce((n, k) => n + k.micros, 0);
  const share = (micros: number) => (totalMicros > 0 ? micros / totalMicros : 0);
  const families = new Map<string, KernelFamilyTime>();
  for (const k of kernels) {
    const family = kernelFamily(k.name);
    const entry = families.get(family) ?? { family, calls: 0, micros: 0, share: 0 };
    entry.calls += k.calls;
    entry.micros += k.micros;
    families.set(family, entry);
  }
  return {
    totalMicros,
    families: [...families.values()].map((f) => ({ ...f, share: share(f.micros) })).sort((a, b) => b.micros - a.micros),
    top: [...kernels].sort((a, b) => b.micros - a.micros).slice(0, top).map((k) => ({ ...k, share: share(k.micros) })),
  };
}
