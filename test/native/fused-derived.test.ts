/**
 * The fused graph derived from a standard-op model (the `fusedAttention` engine option,
 * src/models/fused-graph.ts): what a CUDA engine runs by default. Forced with 'on' here, on the
 * CPU, where both graphs run:
 * - derived once, checked against the stored graph, cached beside the model with a stamp; the
 *   next load reuses it; a changed stored graph derives it again;
 * - its answers equal the stored graph's (label logits 1e-4) and the weights are the stored ones
 *   (the make-model fused twin of the same seed scores the same);
 * - with the packing input the derived graph has causal states (an If), not with a sliding window;
 *   asked for a graph without control flow (CUDA graphs), it derives one without, in a folder of
 *   its own, answering the same;
 * - an fp16 model derives, and every hf-tiny family (Qwen3, Qwen2 with q/k/v biases, Llama 3)
 *   imported as standard ops derives;
 * - 'auto' on the CPU, a fused model, an int8 model and 'off' run the stored graph, saying why
 *   where a derivation was asked for and not made; so does Engine.load given no deriver.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, describe, expect, it } from 'vitest';

import { Engine, type GraphDeriver } from '../../src/engine/engine.js';
import { deriveFusedGraph, fusedPaths } from '../../src/models/fused-graph.js';
import { makeModel } from '../../src/models/builder/index.js';
import { importModel } from '../../src/models/import/import-model.js';
import { counterWorkload } from '../helpers/random-groups.js';
import { maxScoreDiff } from '../helpers/score-compare.js';
import { TINY_SEED, tinyModelDir } from '../helpers/tiny-model.js';
import { HF_TINY } from '../helpers/fixtures.js';

const FIXTURES = HF_TINY;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'fused-derived-'));
const engines: Engine[] = [];
afterAll(() => {
  engines.forEach((e) => e.close());
  rmSync(scratch, { recursive: true, force: true });
});

async function load(modelDir: string, fusedAttention: 'auto' | 'on' | 'off', extra: Record<string, unknown> = {}): Promise<Engine> {
  const engine = await Engine.load({ modelDir, fusedAttention, threads: 1, graphDeriver: deriveFusedGraph, ...extra });
  engines.push(engine);
  return engine;
}

/** A private copy of a shared test model (the derivation writes beside the model). */
async function copyOf(variant: Parameters<typeof tinyModelDir>[0], name: string, dtype: 'fp32' | 'int8' = 'fp32'): Promise<string> {
  const dir = path.join(scratch, name);
  cpSync(await tinyModelDir(variant, dtype), dir, { recursive: true });
  return dir;
}

describe('the fused graph derived from a standard-op model', () => {
  it('is derived once, checked, cached with a stamp, and answers as the stored graph', async () => {
    const modelDir = await copyOf({ segmentIds: true }, 'packed');
    const stored = await load(modelDir, 'off');
    expect(stored.info.attention).toEqual({ graph: 'ops', source: 'stored' });
    const derived = await load(modelDir, 'on', { packSuffixes: true });
    expect(derived.info.attention).toEqual({ graph: 'fused', source: 'derived' });
    const paths = fusedPaths(path.join(modelDir, 'onnx', 'model.onnx'));
    expect(derived.info.graphFile.startsWith(paths.dir)).toBe(true);
    expect(existsSync(paths.stamp)).toBe(true);
    expect(derived.info.packsSuffixes).toBe(true);
    // The model has the packing input and no sliding window: the derived graph has causal states.
    const record = JSON.parse(readFileSync(path.join(paths.dir, 'decision.json'), 'utf8')) as { import: { features: Record<string, unknown> } };
    expect(record.import.features).toMatchObject({ segmentIds: true, attention: 'fused', causalStates: true });

    const groups = counterWorkload(21, 6);
    const reference = await stored.score(groups);
    expect(maxScoreDiff(reference, await derived.score(groups), 'logits')).toBeLessThan(1e-4);
    // The weights are the model's own: the fused model make-model writes from the same seed agrees.
    const twin = await load(await tinyModelDir({ segmentIds: true, attention: 'fused' }), 'off', { packSuffixes: true });
    expect(twin.info.attention).toEqual({ graph: 'fused', source: 'stored' });
    expect(maxScoreDiff(await twin.score(groups), await derived.score(groups), 'logits')).toBeLessThan(1e-4);

    // Cached: the next load derives nothing.
    const mtime = statSync(paths.graph).mtimeMs;
    const again = await load(modelDir, 'on');
    expect(again.info.attention).toEqual({ graph: 'fused', source: 'derived' });
    expect(statSync(paths.graph).mtimeMs).toBe(mtime);
    // A stored graph that changed (here: its time) is derived again.
    const graph = path.join(modelDir, 'onnx', 'model.onnx');
    utimesSync(graph, new Date(), new Date(Date.now() + 5000));
    const rederived = await load(modelDir, 'on');
    expect(rederived.info.attention).toEqual({ graph: 'fused', source: 'derived' });
    expect(statSync(paths.graph).mtimeMs).not.toBe(mtime);
  });

  it('derives a form without control flow when asked (what CUDA graphs need): its own folder, no If, the same answers', async () => {
    const modelDir = await copyOf({ segmentIds: true }, 'no-if');
    const storedGraph = path.join(modelDir, 'onnx', 'model.onnx');
    const noIf: GraphDeriver = (dir, graph, verifyWith) => deriveFusedGraph(dir, graph, verifyWith, { controlFlow: false });
    const flat = await Engine.load({ modelDir, fusedAttention: 'on', threads: 1, packSuffixes: true, graphDeriver: noIf });
    engines.push(flat);
    const withIf = await load(modelDir, 'on', { packSuffixes: true });
    const paths = fusedPaths(storedGraph, { controlFlow: false });
    expect(flat.info.graphFile.startsWith(`${paths.dir}${path.sep}`)).toBe(true);
    expect(withIf.info.graphFile.startsWith(`${fusedPaths(storedGraph).dir}${path.sep}`)).toBe(true);
    const opTypes = (file: string) => (onnxProto.onnx.ModelProto.decode(readFileSync(file)).graph!.node ?? []).map((n) => n.opType);
    expect(opTypes(flat.info.graphFile)).not.toContain('If');
    expect(opTypes(withIf.info.graphFile)).toContain('If');
    const groups = counterWorkload(9, 5);
    expect(maxScoreDiff(await withIf.score(groups), await flat.score(groups), 'logits')).toBeLessThan(1e-4);
    // Each form keeps its own stamp: loading either again reuses its derivation.
    const mtimes = [statSync(paths.graph).mtimeMs, statSync(fusedPaths(storedGraph).graph).mtimeMs];
    const flatAgain = await Engine.load({ modelDir, fusedAttention: 'on', threads: 1, packSuffixes: true, graphDeriver: noIf });
    engines.push(flatAgain);
    engines.push(await load(modelDir, 'on', { packSuffixes: true }));
    expect([statSync(paths.graph).mtimeMs, statSync(fusedPaths(storedGraph).graph).mtimeMs]).toEqual(mtimes);
  });

  it('derives without causal states for a model with a sliding window (which they do not take), checked against it', async () => {
    // The qwen3 fixture with a window of 4 tokens on its second layer.
    const hfDir = path.join(scratch, 'qwen3-sliding-hf');
    cpSync(path.join(FIXTURES, 'qwen3'), hfDir, { recursive: true });
    const config = JSON.parse(readFileSync(path.join(hfDir, 'config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(path.join(hfDir, 'config.json'), JSON.stringify({ ...config, use_sliding_window: true, sliding_window: 4, layer_types: ['full_attention', 'sliding_attention'] }));
    const imported = await importModel({ hfDir, outDir: path.join(scratch, 'qwen3-sliding'), attention: 'ops' });
    const engine = await load(imported.dir, 'on', { packSuffixes: true });
    expect(engine.info.attention).toEqual({ graph: 'fused', source: 'derived' });
    const record = JSON.parse(readFileSync(path.join(fusedPaths(path.join(imported.dir, 'onnx', 'model.onnx')).dir, 'decision.json'), 'utf8')) as { import: { features: Record<string, unknown> } };
    expect(record.import.features).toMatchObject({ segmentIds: true, attention: 'fused' });
    expect(record.import.features.causalStates).toBeUndefined();
    const nodes = onnxProto.onnx.ModelProto.decode(readFileSync(engine.info.graphFile)).graph!.node ?? [];
    expect(nodes.some((n) => n.name!.startsWith('/model/sliding_mask/'))).toBe(true);
    expect(nodes.map((n) => n.opType)).not.toContain('If');
  });

  it('derives for an fp16 model (weights read back as F16), checked within fp16 rounding', async () => {
    const made = await makeModel({ preset: 'tiny', seed: TINY_SEED, dtype: 'fp16', outDir: path.join(scratch, 'fp16'), features: { segmentIds: true } });
    const engine = await load(made.dir, 'on');
    expect(engine.info.attention).toEqual({ graph: 'fused', source: 'derived' });
    expect(engine.info.kvDtype).toBe('float16');
  });

  it.each(['qwen3', 'qwen2', 'llama3'])('derives for the %s family imported as standard ops (checked against it)', async (family) => {
    const imported = await importModel({ hfDir: path.join(FIXTURES, family), outDir: path.join(scratch, `${family}-ops`), attention: 'ops' });
    const engine = await load(imported.dir, 'on');
    expect(engine.info.attention).toEqual({ graph: 'fused', source: 'derived' });
  });

  it("runs the stored graph with 'auto' on the CPU, 'off', a fused model, and an int8 model (saying why)", async () => {
    const modelDir = await copyOf({}, 'plain');
    expect((await load(modelDir, 'auto')).info.attention).toEqual({ graph: 'ops', source: 'stored' });
    expect(existsSync(fusedPaths(path.join(modelDir, 'onnx', 'model.onnx')).dir)).toBe(false);
    expect((await load(await tinyModelDir({ attention: 'fused' }), 'on')).info.attention).toEqual({ graph: 'fused', source: 'stored' });
    const int8 = await load(await copyOf({}, 'int8', 'int8'), 'on');
    expect(int8.info.attention).toMatchObject({ graph: 'ops', source: 'stored', reason: expect.stringMatching(/int8/) });
    const bare = await Engine.load({ modelDir, fusedAttention: 'on', threads: 1 });
    engines.push(bare);
    expect(bare.info.attention).toMatchObject({ graph: 'ops', source: 'stored', reason: expect.stringMatching(/no graph deriver/) });
  });
});
