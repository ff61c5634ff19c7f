/**
 * Which int8 MatMul kernel to build `--dtype int8` models with, measured in the engine's own ONNX
 * Runtime (the addon's timeMatMul: native/matmul_probe.h): one weight-stationary MatMul graph per
 * variant, activation [M, K] fp32 in, [M, N] fp32 out, at the given thread counts:
 *   fp32            MatMul with an fp32 weight (the fp32 model's op)
 *   dqmm            com.microsoft DynamicQuantizeMatMul, int8 weight with a per-column scale
 *   dql+mmitf       DynamicQuantizeLinear + com.microsoft MatMulIntegerToFloat (the unfused pair)
 *   rowq            each activation row quantized with its own scale + MatMulInteger + both scales
 *                   (what --dtype int8 builds for the projections and MLP: quantize.ts)
 *   nbits8-bB       com.microsoft MatMulNBits, bits 8, block B (32, 128, 256), accuracy_level 4 (int8 compute)
 *
 *   npx tsc -p tsconfig.json && [INT8_VARIANTS=fp32,rowq,...] node dist/bench/int8-kernels.js \
 *     [--threads 1,2] [--seconds 1] [--shapes MxKxN,...]
 *
 * Prints GFLOP/s-equivalents (2·M·K·N per run / median seconds) and each variant's speed relative
 * to fp32 at the same shape and threads.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { loadNativeModule, resolveOrtLibrary } from '../src/engine/native.js';
import { DataType, MS_DOMAIN, makeValueInfo, writeModel, type GraphProto, type NodeProto, type WeightSpec } from '../src/models/builder/onnx-writer.js';
import { quantizeBlocksNBits8, quantizeColumnsInt8 } from '../src/models/builder/quantize.js';
import { Rng } from '../src/models/builder/rng.js';

interface Shape {
  m: number;
  k: number;
  n: number;
}

type Variant = 'fp32' | 'dqmm' | 'dql+mmitf' | 'rowq' | 'nbits8-b32' | 'nbits8-b128' | 'nbits8-b256';
const VARIANTS: Variant[] = (process.env.INT8_VARIANTS?.split(',') as Variant[] | undefined) ?? ['fp32', 'dqmm', 'dql+mmitf', 'rowq', 'nbits8-b32', 'nbits8-b128', 'nbits8-b256'];

function spec(name: string, dims: number[], data: Float32Array | Int8Array | Uint8Array): WeightSpec {
  const dtype = data instanceof Float32Array ? 'fp32' : data instanceof Int8Array ? 'int8' : 'uint8';
  return { name, dims, dtype, *chunks() { yield data; } };
}

function graphFor(variant: Variant, s: Shape, w: Float32Array): { graph: GraphProto; weights: WeightSpec[] } {
  const input = [makeValueInfo('A', DataType.FLOAT, [s.m, s.k])];
  const output = [makeValueInfo('Y', DataType.FLOAT, [s.m, s.n])];
  let node: NodeProto[];
  let weights: WeightSpec[];
  if (variant === 'fp32') {
    node = [{ opType: 'MatMul', name: 'MatMul', input: ['A', 'W'], output: ['Y'] }];
    weights = [spec('W', [s.k, s.n], w)];
  } else if (variant === 'rowq') {
    // Per-row symmetric activation quantization (uint8 around 128) + MatMulInteger + both scales.
    const { q, scales } = quantizeColumnsInt8(w, s.k, s.n);
    weights = [
      spec('W', [s.k, s.n], q),
      spec('W_scale', [s.n], scales),
      spec('inv127', [], Float32Array.of(1 / 127)),
      spec('tiny', [], Float32Array.of(1e-30)),
      spec('c128', [], Float32Array.of(128)),
      spec('zp', [], Uint8Array.of(128)),
    ];
    node = [
      { opType: 'Abs', name: 'abs', input: ['A'], output: ['absA'] },
      { opType: 'ReduceMax', name: 'rmax', input: ['absA'], output: ['amax'], attribute: [{ name: 'axes', type: 7, ints: [-1] }, { name: 'keepdims', type: 2, i: 1 }] },
      { opType: 'Mul', name: 'smul', input: ['amax', 'inv127'], output: ['s0'] },
      { opType: 'Max', name: 'smax', input: ['s0', 'tiny'], output: ['s'] },
      { opType: 'Div', name: 'div', input: ['A', 's'], output: ['As'] },
      { opType: 'Round', name: 'round', input: ['As'], output: ['Ar'] },
      { opType: 'Add', name: 'add', input: ['Ar', 'c128'], output: ['Au'] },
      { opType: 'Cast', name: 'cast', input: ['Au'], output: ['Aq'], attribute: [{ name: 'to', type: 2, i: 2 }] },
      { opType: 'MatMulInteger', name: 'mmi', input: ['Aq', 'W', 'zp'], output: ['Y32'] },
      { opType: 'Cast', name: 'cast2', input: ['Y32'], output: ['Yf'], attribute: [{ name: 'to', type: 2, i: 1 }] },
      { opType: 'Mul', name: 'mul1', input: ['Yf', 's'], output: ['Y1'] },
      { opType: 'Mul', name: 'mul2', input: ['Y1', 'W_scale'], output: ['Y'] },
    ];
  } else if (variant === 'dqmm' || variant === 'dql+mmitf') {
    const { q, scales } = quantizeColumnsInt8(w, s.k, s.n);
    weights = [spec('W', [s.k, s.n], q), spec('W_scale', [s.n], scales)];
    node =
      variant === 'dqmm'
        ? [{ opType: 'DynamicQuantizeMatMul', domain: MS_DOMAIN, name: 'DQMM', input: ['A', 'W', 'W_scale'], output: ['Y'] }]
        : [
            { opType: 'DynamicQuantizeLinear', name: 'DQL', input: ['A'], output: ['Aq', 'A_scale', 'A_zp'] },
            { opType: 'MatMulIntegerToFloat', domain: MS_DOMAIN, name: 'MMITF', input: ['Aq', 'W', 'A_scale', 'W_scale', 'A_zp'], output: ['Y'] },
          ];
  } else {
    const block = Number(variant.slice('nbits8-b'.length));
    const { packed, scales } = quantizeBlocksNBits8(w, s.k, s.n, block);
    weights = [spec('W', [s.n, s.k / block, block], packed), spec('W_scale', [s.n * (s.k / block)], scales)];
    node = [
      {
        opType: 'MatMulNBits',
        domain: MS_DOMAIN,
        name: 'MatMulNBits',
        input: ['A', 'W', 'W_scale'],
        output: ['Y'],
        attribute: [
          { name: 'K', type: 2, i: s.k },
          { name: 'N', type: 2, i: s.n },
          { name: 'bits', type: 2, i: 8 },
          { name: 'block_size', type: 2, i: block },
          { name: 'accuracy_level', type: 2, i: 4 },
        ],
      },
    ];
  }
  return { graph: { name: 'int8_probe', node, input, output }, weights };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      threads: { type: 'string', default: '1,2' },
      seconds: { type: 'string', default: '1' },
      shapes: { type: 'string', default: '4096x512x1536,512x512x1536,64x512x1536,4096x1536x512' },
    },
  });
  const threads = values.threads.split(',').map(Number);
  const shapes: Shape[] = values.shapes.split(',').map((t) => {
    const [m, k, n] = t.split('x').map(Number) as [number, number, number];
    return { m, k, n };
  });
  const native = loadNativeModule();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'decide-int8-kernels-'));
  try {
    for (const s of shapes) {
      const w = new Float32Array(s.k * s.n);
      new Rng(7, 'int8-kernels').fillNormal(w, 0.02);
      const files = new Map<Variant, string>();
      for (const v of VARIANTS) {
        const file = path.join(dir, `${v}-${s.m}x${s.k}x${s.n}.onnx`);
        const { graph, weights } = graphFor(v, s, w);
        await writeModel({ path: file, graph, weights, externalData: false, opsetVersion: 17 });
        files.set(v, file);
      }
      for (const t of threads) {
        const gflops = new Map<Variant, number>();
        for (const v of VARIANTS) {
          const seconds = native.timeMatMul({
            ortLibrary: resolveOrtLibrary(undefined, 'cpu'),
            modelPath: files.get(v)!,
            provider: 'cpu',
            threads: t,
            minRuns: 5,
            minSeconds: Number(values.seconds),
            maxRuns: 200,
          });
          gflops.set(v, (2 * s.m * s.k * s.n) / median(Array.from(seconds)) / 1e9);
        }
        const fp32 = gflops.get('fp32')!;
        const cells = VARIANTS.map((v) => `${v} ${gflops.get(v)!.toFixed(0)} (${(gflops.get(v)! / fp32).toFixed(2)}x)`);
        console.log(`[${s.m} x ${s.k}] x [${s.k} x ${s.n}] threads ${t}: ${cells.join(' | ')}`);
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
