/**
 * The fused decoder graph (DecoderFeatures.attention 'fused', fused-layers.ts: SkipSimplified-
 * LayerNormalization, packed projections, RotaryEmbedding, ONNX's Attention with past and mask,
 * QuickGelu) on the CPU in fp32, against the standard-op graph with the same weights: the same
 * inputs and outputs, and the same logits and presents within 1e-4 on the engine's layout (a batch
 * of rows with different past lengths, padding between a row's past and its new tokens, padded new
 * tokens), with segment ids and with a sliding window, on the tiny preset and on the small preset's
 * layers. Its structure: the node count per layer, no Concat / Softmax / rotary arithmetic / Cast
 * in a layer. Then the engine runs it unchanged: the stock model's scores, a group alone the same
 * as inside a batch (1e-6), packed rows the same as forked rows. An fp16 build runs on the CPU
 * too.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, type ScoreGroup } from '../../src/engine/engine.js';
import { makeModel, PRESETS, type DecoderFeatures } from '../../src/models/builder/index.js';
import { onnx } from '../../src/models/builder/onnx-writer.js';
import type onnxProto from 'onnx-proto';
import { compareSessions, engineLayoutFeeds, maxDiff, values } from '../helpers/engine-layout.js';
import { asFloat32, REFERENCE_SESSION_OPTIONS } from '../helpers/reference.js';
import { TINY_SEED, tinyModelDir } from '../helpers/tiny-model.js';

const tiny = PRESETS.tiny!;
const { numLayers, numKvHeads, headDim, vocabSize } = tiny;

/** The graph variants compared: each is built twice, with standard-op and with fused attention. */
const VARIANTS: Record<string, Partial<DecoderFeatures>> = {
  plain: {},
  segments: { segmentIds: true },
  sliding: { slidingWindow: { size: 4, layers: [true, false] } },
  packedSliding: { segmentIds: true, slidingWindow: { size: 3, layers: [false, true] } },
};

let scratch: string;
const sessions = new Map<string, { ops: ort.InferenceSession; fused: ort.InferenceSession; fusedDir: string }>();

const built = new Map<string, Promise<string>>();
function build(name: string, features: Partial<DecoderFeatures>, dtype: 'fp32' | 'fp16' = 'fp32'): Promise<string> {
  // fp32 variants without a window are the shared test models (built once for every test file).
  if (dtype === 'fp32' && features.slidingWindow === undefined) return tinyModelDir({ segmentIds: features.segmentIds, attention: features.attention });
  if (!built.has(name)) built.set(name, makeModel({ preset: 'tiny', seed: TINY_SEED, dtype, outDir: path.join(scratch, name), features }).then((m) => m.dir));
  return built.get(name)!;
}

const open = (dir: string) => ort.InferenceSession.create(path.join(dir, 'onnx', 'model.onnx'), REFERENCE_SESSION_OPTIONS);

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'fused-attention-'));
  for (const [name, features] of Object.entries(VARIANTS)) {
    const opsDir = await build(`${name}-ops`, features);
    const fusedDir = await build(`${name}-fused`, { ...features, attention: 'fused' });
    sessions.set(name, { ops: await open(opsDir), fused: await open(fusedDir), fusedDir });
  }
}, 120_000);

afterAll(async () => {
  for (const s of sessions.values()) await Promise.all([s.ops.release(), s.fused.release()]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const TINY_LAYOUT = { numLayers, numKvHeads, headDim, vocabSize };

async function compare(variant: string, pastLens: number[], newLens: number[]): Promise<void> {
  const { ops, fused } = sessions.get(variant)!;
  const diff = await compareSessions(ops, fused, engineLayoutFeeds(TINY_LAYOUT, pastLens, newLens, VARIANTS[variant]!.segmentIds === true));
  expect(diff.logits, 'logits').toBeLessThan(1e-4);
  expect(diff.presents, 'presents').toBeLessThan(1e-4);
}

/** The nodes of layer i (named /model/layers.<i>/...). */
const layerNodes = (nodes: onnxProto.onnx.INodeProto[], i: number) => nodes.filter((n) => n.name!.startsWith(`/model/layers.${i}/`));

/** What a Qwen3 layer (q/k norms, no biases) of the fused graph is, node by node. */
const QWEN3_FUSED_LAYER = [
  'SkipSimplifiedLayerNormalization', // input norm (+ the previous layer's output); layer 0: SimplifiedLayerNormalization
  'MatMul', // q_proj (no packed projection: its Split would copy every activation on CUDA)
  'MatMul', // k_proj
  'MatMul', // v_proj
  'Reshape', // q heads as rows of head_dim
  'SimplifiedLayerNormalization', // q norm
  'Reshape', // back to [B, S, heads * head_dim]
  'Reshape', // k heads as rows of head_dim
  'SimplifiedLayerNormalization', // k norm
  'Reshape',
  'RotaryEmbedding', // q
  'RotaryEmbedding', // k
  'Attention', // grouped KV heads, past + new -> presents, the mask as an additive attn_mask
  'MatMul', // o_proj
  'SkipSimplifiedLayerNormalization', // residual + attention, post-attention norm
  'MatMul', // gate_proj
  'MatMul', // up_proj
  'QuickGelu', // SiLU
  'Mul',
  'MatMul', // down
];

describe('the fused decoder graph, fp32 on the CPU', () => {
  it('keeps the graph contract: the same inputs and outputs; per layer the fused ops only, no Concat, Softmax or rotary arithmetic', async () => {
    for (const { ops, fused, fusedDir } of sessions.values()) {
      expect(fused.inputNames).toEqual(ops.inputNames);
      expect(fused.outputNames).toEqual(ops.outputNames);
      const model = onnx.ModelProto.decode(await readFile(path.join(fusedDir, 'onnx', 'model.onnx')));
      const nodes = model.graph!.node!;
      expect(nodes.filter((n) => n.opType === 'Attention' && !n.domain)).toHaveLength(numLayers);
      expect(model.opsetImport).toContainEqual(expect.objectContaining({ domain: '', version: 23 }));
      for (let i = 0; i < numLayers; i++) {
        const ops = layerNodes(nodes, i).map((n) => n.opType);
        expect(ops).toEqual(i === 0 ? ['SimplifiedLayerNormalization', ...QWEN3_FUSED_LAYER.slice(1)] : QWEN3_FUSED_LAYER);
        // The Attention writes the graph's presents itself (no Concat of past and new).
        const attention = layerNodes(nodes, i).find((n) => n.opType === 'Attention')!;
        expect(attention.input!.slice(4)).toEqual([`past_key_values.${i}.key`, `past_key_values.${i}.value`]);
        expect(attention.output!.slice(1)).toEqual([`present.${i}.key`, `present.${i}.value`]);
      }
      for (const op of ['Softmax', 'Concat', 'Neg', 'Sin', 'Cos', 'Sigmoid', 'Transpose', 'Cast', 'Pow', 'ReduceMean']) {
        expect(nodes.filter((n) => n.name!.startsWith('/model/layers.') && n.opType === op), op).toHaveLength(0);
      }
      expect(model.opsetImport).toContainEqual(expect.objectContaining({ domain: 'com.microsoft' }));
    }
    // The stock graph imports no contrib opset.
    const stock = onnx.ModelProto.decode(await readFile(path.join(await tinyModelDir(), 'onnx', 'model.onnx')));
    expect(stock.opsetImport!.map((o) => o.domain ?? '')).toEqual(['']);
  });

  it('one row, past and new tokens: the stock graph\'s logits and presents (1e-4)', async () => {
    await compare('plain', [9], [5]);
    await compare('plain', [0], [12]);
  });

  it('a batch of rows with different past lengths, padding between past and new, padded new tokens (1e-4)', async () => {
    await compare('plain', [7, 3, 0, 5], [4, 6, 2, 1]);
  });

  it('a batch with an empty slot (a row of padding only): the other row unchanged (1e-4), the empty one finite', async () => {
    await compare('plain', [5, 0], [3, 0]);
  });

  it('with segment ids (multi-item packing) (1e-4)', async () => {
    await compare('segments', [6, 2], [6, 4]);
  });

  it('with a sliding window in one layer (1e-4)', async () => {
    await compare('sliding', [8, 3], [5, 7]);
  });

  it('with segment ids and a sliding window together (1e-4)', async () => {
    await compare('packedSliding', [7, 0], [8, 6]);
  });
});

describe('the fused graph at the small preset\'s layer shape (12 layers, 8 heads over 4 KV heads, head_dim 64; vocabulary cut to 4096 to keep the test short)', () => {
  it('gives the standard-op graph\'s logits and presents (1e-4), packed rows included', async () => {
    const small = { ...PRESETS.small!, vocabSize: 4096 };
    const made = async (name: string, features: Partial<DecoderFeatures>) =>
      (await makeModel({ preset: 'small', seed: TINY_SEED, outDir: path.join(scratch, name), shapeOverrides: { vocabSize: small.vocabSize }, features })).dir;
    const [ops, fused] = await Promise.all([open(await made('small-ops', { segmentIds: true })), open(await made('small-fused', { segmentIds: true, attention: 'fused' }))]);
    try {
      for (const [pastLens, newLens] of [
        [[30, 0, 17], [9, 12, 4]],
        [[64], [40]],
      ] as const) {
        const diff = await compareSessions(ops, fused, engineLayoutFeeds(small, [...pastLens], [...newLens], true));
        expect(diff.logits, 'logits').toBeLessThan(1e-4);
        expect(diff.presents, 'presents').toBeLessThan(1e-4);
      }
    } finally {
      await Promise.all([ops.release(), fused.release()]);
    }
  }, 120_000);
});

describe('an fp16 fused graph', () => {
  it('has no Cast in any layer (the fp32 statistics are inside the fused norms)', async () => {
    const model = onnx.ModelProto.decode(await readFile(path.join(await build('fp16-fused', { attention: 'fused' }, 'fp16'), 'onnx', 'model.onnx')));
    expect(model.graph!.node!.filter((n) => n.opType === 'Cast' && n.name!.startsWith('/model/layers.'))).toHaveLength(0);
  });

  it('runs on the CPU and stays within fp16 rounding of the fp16 stock graph', async () => {
    const [ops, fused] = await Promise.all([open(await build('fp16-ops', {}, 'fp16')), open(await build('fp16-fused', { attention: 'fused' }, 'fp16'))]);
    try {
      const feeds = engineLayoutFeeds(TINY_LAYOUT, [6, 2], [4, 3], false, true);
      const [want, got] = [await ops.run(feeds), await fused.run(feeds)];
      expect(got.logits!.type).toBe('float16');
      const logits = asFloat32(got.logits!);
      expect(logits.every(Number.isFinite)).toBe(true);
      expect(maxDiff(logits, asFloat32(want.logits!))).toBeLessThan(0.1);
    } finally {
      await Promise.all([ops.release(), fused.release()]);
    }
  });
});

describe('the engine runs the fused graph', () => {
  let stock: Engine;
  let fused: Engine;
  beforeAll(async () => {
    stock = await Engine.load({ modelDir: await tinyModelDir(), threads: 1 });
    fused = await Engine.load({ modelDir: sessions.get('plain')!.fusedDir, threads: 1 });
  }, 60_000);
  afterAll(() => {
    stock?.close();
    fused?.close();
  });

  it('scores prefixes and suffixes of several lengths as the stock model does (1e-4)', async () => {
    const ids = (seed: number, n: number) => Int32Array.from(values(seed, n), (v) => Math.floor((v + 1) * 0.5 * (vocabSize - 64)));
    const groups: ScoreGroup[] = [
      { prefix: ids(1, 40), suffixes: [{ tokens: ids(2, 5), labels: ids(3, 4) }, { tokens: ids(4, 11), labels: ids(5, 3) }] },
      { prefix: ids(6, 7), suffixes: [{ tokens: ids(7, 1), labels: ids(8, 6) }] },
      { prefix: ids(9, 90), suffixes: [{ tokens: ids(10, 20), labels: ids(11, 2) }, { tokens: ids(12, 3), labels: ids(13, 5) }] },
    ];
    const [want, got] = [await stock.score(groups), await fused.score(groups)];
    want.forEach((group, g) =>
      group.forEach((score, s) => {
        const mine = got[g]![s]!;
        expect(maxDiff(mine.labelLogits, score.labelLogits)).toBeLessThan(1e-4);
        expect(Math.abs(mine.logSumExp - score.logSumExp)).toBeLessThan(1e-4);
      }),
    );
  });
});

describe('the engine on the fused packing graph', () => {
  const ids = (seed: number, n: number) => Int32Array.from(values(seed, n), (v) => Math.floor((v + 1) * 0.5 * (vocabSize - 64)));
  const group = (seed: number, prefix: number, suffixes: number[]): ScoreGroup => ({
    prefix: ids(seed, prefix),
    suffixes: suffixes.map((n, k) => ({ tokens: ids(seed * 100 + k, n), labels: ids(seed * 1000 + k, 5) })),
  });
  let packed: Engine;
  let forked: Engine;
  beforeAll(async () => {
    const dir = await tinyModelDir({ segmentIds: true, attention: 'fused' });
    packed = await Engine.load({ modelDir: dir, threads: 1, prefixCacheBytes: 0, packSuffixes: true });
    forked = await Engine.load({ modelDir: dir, threads: 1, prefixCacheBytes: 0 });
  }, 60_000);
  afterAll(() => {
    packed?.close();
    forked?.close();
  });
  const largest = (a: Awaited<ReturnType<Engine['score']>>[number], b: Awaited<ReturnType<Engine['score']>>[number]) =>
    Math.max(...a.map((score, s) => Math.max(maxDiff(score.labelLogits, b[s]!.labelLogits), Math.abs(score.logSumExp - b[s]!.logSumExp))));

  it.each([
    ['packed', () => packed],
    ['forked', () => forked],
  ] as const)('%s rows: a group alone scores as inside a batch of other lengths (1e-6)', async (_, engine) => {
    const target = group(31, 45, [6, 17, 3]);
    const others = [group(32, 120, [9]), group(33, 8, [30, 2, 11, 5]), group(34, 70, [12, 12])];
    const alone = await engine().score([target]);
    const mixed = await engine().score([others[0]!, target, others[1]!, others[2]!]);
    expect(largest(alone[0]!, mixed[1]!)).toBeLessThan(1e-6);
  });

  it('packed rows score as forked rows (1e-5)', async () => {
    const groups = [group(41, 150, [8, 21, 5]), group(42, 30, [40, 40, 3]), group(43, 1, [4])];
    const [a, b] = [await packed.score(groups), await forked.score(groups)];
    a.forEach((scores, g) => expect(largest(scores, b[g]!)).toBeLessThan(1e-5));
  });
});
