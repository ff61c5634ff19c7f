/**
 * The fused graph's own-kernels form (DecoderFeatures.ownKernels: the engine's HeadNormRotary and
 * SiluMul operators, native/ops/fused_ops.h) on the CPU, against the fused graph of the same
 * weights without them:
 * - its structure: 12 nodes per Qwen3 layer (20 without), one HeadNormRotary and one SiluMul per
 *   layer and stream, none of the Reshape / SimplifiedLayerNormalization / RotaryEmbedding /
 *   QuickGelu they replace; the count printed by make-model and kept in decision.json;
 * - the same answers through the engine (label logits and log-sum-exps within 1e-4, option
 *   probabilities within 1e-5) on the tiny and small presets, with causal states, and in fp16
 *   within fp16 rounding; a question alone as inside a batch (1e-6), packed rows as forked (1e-5);
 * - every Qwen3/Qwen2/Llama fixture imported with --own-kernels on answers as imported without
 *   (the families without q/k norms take HeadNormRotary without its norm: rotary only);
 * - the engine option derives the fused graph with them from a standard-op model, in a folder of its
 *   own, answering as the stored graph;
 * - what is refused: ownKernels without the fused graph (library and CLI), a flag value that is not on/off.
 * The CUDA kernels are checked on the CPU by the C++ tests (a host emulation of each CUDA thread)
 * and on a card by test/gpu/.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, describe, expect, it } from 'vitest';

import { Engine, type ScoreGroup } from '../../src/engine/engine.js';
import { makeModel, type DecoderFeatures } from '../../src/models/builder/index.js';
import { deriveFusedGraph, fusedPaths } from '../../src/models/fused-graph.js';
import { importModel } from '../../src/models/import/import-model.js';
import { runDecide } from '../helpers/bin.js';
import { HF_TINY } from '../helpers/fixtures.js';
import { counterWorkload, randomGroups } from '../helpers/random-groups.js';
import { maxScoreDiff } from '../helpers/score-compare.js';
import { TINY_SEED, tinyModelDir } from '../helpers/tiny-model.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'own-kernels-'));
const engines: Engine[] = [];
afterAll(() => {
  engines.forEach((e) => e.close());
  rmSync(scratch, { recursive: true, force: true });
});

async function load(modelDir: string, extra: Record<string, unknown> = {}): Promise<Engine> {
  const engine = await Engine.load({ modelDir, threads: 2, fusedAttention: 'off', ...extra });
  engines.push(engine);
  return engine;
}

async function build(name: string, preset: string, features: Partial<DecoderFeatures>, dtype: 'fp32' | 'fp16' = 'fp32') {
  return makeModel({ preset, seed: TINY_SEED, dtype, outDir: path.join(scratch, name), features: { segmentIds: true, attention: 'fused', ...features } });
}

/** Every node of the graph and its subgraphs (an If's branches), with the layer each belongs to. */
function layerOps(modelDir: string): Map<number, string[]> {
  const model = onnxProto.onnx.ModelProto.decode(readFileSync(path.join(modelDir, 'onnx', 'model.onnx')));
  const byLayer = new Map<number, string[]>();
  const visit = (nodes: onnxProto.onnx.INodeProto[]) => {
    for (const n of nodes) {
      const layer = /^\/model\/layers\.(\d+)\//.exec(n.name ?? '');
      if (layer) byLayer.set(Number(layer[1]), [...(byLayer.get(Number(layer[1])) ?? []), `${n.domain ? `${n.domain}.` : ''}${n.opType}`]);
      for (const a of n.attribute ?? []) if (a.g) visit(a.g.node ?? []);
    }
  };
  visit(model.graph!.node ?? []);
  return byLayer;
}

const opsetDomains = (modelDir: string) =>
  (onnxProto.onnx.ModelProto.decode(readFileSync(path.join(modelDir, 'onnx', 'model.onnx'))).opsetImport ?? []).map((o) => o.domain ?? '');

describe("the fused graph with the engine's own kernels", () => {
  it('has 12 nodes per Qwen3 layer: one HeadNormRotary and one SiluMul in place of what they fuse', async () => {
    const own = await build('tiny-own', 'tiny', { ownKernels: true });
    const plain = await build('tiny-plain', 'tiny', {});
    expect(own.nodesPerLayer).toBe(12);
    expect(plain.nodesPerLayer).toBe(20);
    const builder = JSON.parse(readFileSync(path.join(own.dir, 'decision.json'), 'utf8')).builder;
    expect(builder.nodesPerLayer).toBe(12);
    expect(builder.features.ownKernels).toBe(true);
    for (const [layer, ops] of layerOps(own.dir)) {
      expect(ops.filter((o) => o === 'ai.decide.HeadNormRotary')).toHaveLength(1);
      expect(ops.filter((o) => o === 'ai.decide.SiluMul')).toHaveLength(1);
      for (const gone of ['Reshape', 'com.microsoft.RotaryEmbedding', 'com.microsoft.QuickGelu', 'Mul']) expect(ops, gone).not.toContain(gone);
      // Only layer 0's input norm, which has no residual to add yet: the q/k norms are gone.
      expect(ops.filter((o) => o === 'SimplifiedLayerNormalization')).toHaveLength(layer === 0 ? 1 : 0);
    }
    expect(opsetDomains(own.dir)).toContain('ai.decide');
    expect(opsetDomains(plain.dir)).not.toContain('ai.decide');
  });

  for (const preset of ['tiny', 'small']) {
    it(`answers as the fused graph without them (${preset} preset, fp32): logits 1e-4, probabilities 1e-5`, async () => {
      const own = await load((await build(`${preset}-own-a`, preset, { ownKernels: true })).dir);
      const plain = await load((await build(`${preset}-plain-a`, preset, {})).dir);
      expect(own.info.attention).toEqual({ graph: 'fused', source: 'stored', ownKernels: true });
      expect(plain.info.attention).toEqual({ graph: 'fused', source: 'stored' });
      const groups = counterWorkload(11, 12);
      const a = await own.score(groups);
      const b = await plain.score(groups);
      expect(maxScoreDiff(a, b, 'logits')).toBeLessThanOrEqual(1e-4);
      expect(maxScoreDiff(a, b, 'probabilities')).toBeLessThanOrEqual(1e-5);
    }, 180_000);
  }

  it('answers the same with causal states, alone as in a batch and packed as forked', async () => {
    const dir = (await build('tiny-own-causal', 'tiny', { ownKernels: true, causalStates: true })).dir;
    expect(layerOps(dir).get(0)!.filter((o) => o === 'ai.decide.HeadNormRotary')).toHaveLength(3); // whole pass, states, questions
    const packed = await load(dir, { packSuffixes: true });
    const forked = await load(dir, { packSuffixes: false });
    const plain = await load(await tinyModelDir({ segmentIds: true }), { packSuffixes: true });
    const groups: ScoreGroup[] = randomGroups(5, 6, { prefixTokens: 40, suffixes: 5, suffixTokens: 9, labels: 6 });
    const together = await packed.score(groups);
    expect(maxScoreDiff(together, await plain.score(groups), 'logits')).toBeLessThanOrEqual(1e-4);
    expect(maxScoreDiff(together, await forked.score(groups), 'logits')).toBeLessThanOrEqual(1e-5);
    for (let g = 0; g < 2; g++) {
      const alone = await packed.score([{ prefix: groups[g]!.prefix, suffixes: [groups[g]!.suffixes[0]!] }]);
      expect(maxScoreDiff(alone, [[together[g]![0]!]], 'probabilities')).toBeLessThanOrEqual(1e-6);
    }
  }, 180_000);

  it('runs in fp16 on the CPU within fp16 rounding of the fp16 fused graph without them', async () => {
    const own = await load((await build('tiny-own-16', 'tiny', { ownKernels: true }, 'fp16')).dir);
    const plain = await load((await build('tiny-plain-16', 'tiny', {}, 'fp16')).dir);
    const groups = counterWorkload(3, 6);
    expect(maxScoreDiff(await own.score(groups), await plain.score(groups), 'probabilities')).toBeLessThanOrEqual(1e-2);
  }, 120_000);

  for (const [family, nodes] of [['qwen3', 12], ['qwen2', 15], ['llama3', 12]] as const) {
    it(`imports the ${family} fixture with --own-kernels on (${nodes} nodes per layer) answering as without`, async () => {
      const out = path.join(scratch, `${family}-own`);
      const run = await runDecide(['import-model', path.join(HF_TINY, family), '--out', out, '--attention', 'fused', '--own-kernels', 'on']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`${nodes} nodes per layer`);
      const plain = await importModel({ hfDir: path.join(HF_TINY, family), outDir: path.join(scratch, `${family}-plain`), attention: 'fused' });
      expect(plain.nodesPerLayer).toBe(nodes + (family === 'qwen3' ? 8 : 2));
      // The fixtures' vocabulary is 512 tokens.
      const groups = randomGroups(9, 4, { prefixTokens: 30, suffixes: 3, suffixTokens: 6, labels: 5 }).map((g) => ({
        prefix: g.prefix.map((t) => t % 512),
        suffixes: g.suffixes.map((q) => ({ tokens: q.tokens.map((t) => t % 512), labels: q.labels.map((t) => t % 512) })),
      }));
      const a = await (await load(out)).score(groups);
      const b = await (await load(plain.dir)).score(groups);
      expect(maxScoreDiff(a, b, 'logits')).toBeLessThanOrEqual(1e-4);
    }, 180_000);
  }

  it('is what the engine derives with ownKernels, in a folder of its own, answering as the stored graph', async () => {
    const modelDir = path.join(scratch, 'derive');
    await makeModel({ preset: 'tiny', seed: TINY_SEED, outDir: modelDir, features: { segmentIds: true } });
    const stored = await load(modelDir);
    const derived = await load(modelDir, { fusedAttention: 'on', ownKernels: true, graphDeriver: deriveFusedGraph });
    expect(derived.info.attention).toEqual({ graph: 'fused', source: 'derived', ownKernels: true });
    const paths = fusedPaths(path.join(modelDir, 'onnx', 'model.onnx'), { controlFlow: true, ownKernels: true });
    expect(derived.info.graphFile.startsWith(paths.dir)).toBe(true);
    expect(layerOps(paths.dir).get(0)).toContain('ai.decide.SiluMul');
    const groups = counterWorkload(4, 5);
    expect(maxScoreDiff(await derived.score(groups), await stored.score(groups), 'logits')).toBeLessThanOrEqual(1e-4);
    // Without a derivation (the CPU's default) the option does nothing, and the engine says so.
    const onCpu = await load(modelDir, { fusedAttention: 'auto', ownKernels: true, graphDeriver: deriveFusedGraph });
    expect(onCpu.info.attention).toMatchObject({ graph: 'ops', source: 'stored', reason: expect.stringContaining("fusedAttention is 'auto' on cpu") });
    // A model fused already keeps its graph, saying why the option did nothing.
    const fused = await load((await build('fused-stored', 'tiny', {})).dir, { fusedAttention: 'on', ownKernels: true, graphDeriver: deriveFusedGraph });
    expect(fused.info.attention).toMatchObject({ graph: 'fused', source: 'stored', reason: expect.stringContaining('--own-kernels on') });
  }, 180_000);

  it('is refused without the fused graph, by the library and by the CLI', async () => {
    await expect(makeModel({ preset: 'tiny', outDir: path.join(scratch, 'refused'), features: { ownKernels: true } })).rejects.toMatchObject({
      code: 'ERR_INPUT',
      message: expect.stringContaining("features.ownKernels: true needs features.attention: 'fused'"),
    });
    await expect(importModel({ hfDir: path.join(HF_TINY, 'qwen3'), outDir: path.join(scratch, 'refused'), ownKernels: true })).rejects.toMatchObject({
      code: 'ERR_INPUT',
    });
    const noFused = await runDecide(['make-model', '--preset', 'tiny', '--out', path.join(scratch, 'refused'), '--own-kernels', 'on']);
    expect(noFused.code).toBe(2);
    expect(noFused.stderr).toContain('--own-kernels on needs --attention fused');
    const badValue = await runDecide(['make-model', '--preset', 'tiny', '--out', path.join(scratch, 'refused'), '--attention', 'fused', '--own-kernels', 'yes']);
    expect(badValue.code).toBe(2);
    expect(badValue.stderr).toContain("--own-kernels must be on or off, got 'yes'");
  }, 60_000);
});
