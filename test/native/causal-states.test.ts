/**
 * DecoderFeatures.causalStates (`--causal-states on` with `--attention fused`): a pass without a
 * past whose rows are states followed by their questions runs as two streams under one If, the
 * states through a causal Attention without a mask (no masked half computed) and the questions
 * through Attention with the mask over the states' KV plus their own; any other pass takes the
 * other branch, the layers without the split. On the CPU:
 * - the same answers as the fused graph of the same weights (logits 1e-4, probabilities 1e-6), with
 *   packed rows (split passes), forked rows and cached states (passes with a past);
 * - a question alone scores as inside a busier call (probabilities 1e-6);
 * - the split really runs: ONNX Runtime's profile of a packed call has the states' and the
 *   questions' attention nodes in it, and a forked call (no questions in its passes without a
 *   past) has none;
 * - the hf-tiny Qwen2 and Llama 3 checkpoints imported with it score as imported without it;
 * - the node count counts the larger branch, and the choice is kept in decision.json.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, describe, expect, it } from 'vitest';

import { graphChoice } from '../../src/cli/graph-options.js';
import { Engine, type EngineOptions, type ScoreGroup } from '../../src/engine/engine.js';
import { makeModel } from '../../src/models/builder/index.js';
import { importModel } from '../../src/models/import/import-model.js';
import { counterWorkload, randomGroups } from '../helpers/random-groups.js';
import { maxScoreDiff } from '../helpers/score-compare.js';
import { TINY_SEED, tinyModelDir } from '../helpers/tiny-model.js';
import { HF_TINY } from '../helpers/fixtures.js';

const FIXTURES = HF_TINY;
const scratch = mkdtempSync(path.join(os.tmpdir(), 'causal-states-'));
const engines: Engine[] = [];
afterAll(() => {
  engines.forEach((e) => e.close());
  rmSync(scratch, { recursive: true, force: true });
});

async function load(modelDir: string, options: EngineOptions = {}): Promise<Engine> {
  const engine = await Engine.load({ modelDir, threads: 1, ...options });
  engines.push(engine);
  return engine;
}

const causalModel = (): Promise<string> => tinyModelDir({ segmentIds: true, attention: 'fused', causalStates: true });

/** Every node of a graph and of the graphs its nodes hold (an If's branches). */
function allNodes(graph: onnxProto.onnx.IGraphProto): onnxProto.onnx.INodeProto[] {
  return (graph.node ?? []).flatMap((n) => [n, ...(n.attribute ?? []).flatMap((a) => (a.g ? allNodes(a.g) : []))]);
}

const calls = (): ScoreGroup[][] => [counterWorkload(3, 7), randomGroups(5, 9, { prefixTokens: 50, suffixes: 5, suffixTokens: 9, labels: 20 })];

describe('causal states', () => {
  it('writes one If over the layers with a causal Attention for the states in its split branch, counted, and recorded', async () => {
    const dir = await causalModel();
    const decision = JSON.parse(readFileSync(path.join(dir, 'decision.json'), 'utf8')) as { builder: { features: unknown; nodesPerLayer: number } };
    expect(decision.builder.features).toEqual({ segmentIds: true, attention: 'fused', causalStates: true });
    // The split branch's two streams, each 19 nodes around its attention (causal for the states,
    // masked for the questions); the other branch has 20.
    expect(decision.builder.nodesPerLayer).toBe(40);
    const model = onnxProto.onnx.ModelProto.decode(readFileSync(path.join(dir, 'onnx', 'model.onnx')));
    expect((model.graph!.node ?? []).filter((n) => n.opType === 'If').map((n) => n.name)).toEqual(['/model/state_split/If']);
    const causal = allNodes(model.graph!).filter((n) => n.opType === 'Attention' && n.attribute?.some((a) => a.name === 'is_causal' && Number(a.i) === 1));
    expect(causal.map((n) => n.name)).toEqual(Array.from({ length: causal.length }, (_, i) => `/model/layers.${i}/states/self_attn/Attention`));
    expect(causal.length).toBeGreaterThan(0);
    expect(causal.every((n) => n.input!.length === 3)).toBe(true); // no mask
  });

  it('keeps the reduced axis of every reduction (keepdims 1): CUDA refuses keepdims 0 over an empty axis, and a pass with no state tokens has one', async () => {
    // The CPU reduces an empty axis to zeros either way, so no CPU run can show it; on CUDA an earlier
    // state split's ReduceSum failed every pass with a past (no state tokens) until it kept its dims.
    for (const dir of [await causalModel(), await tinyModelDir({ segmentIds: true, attention: 'fused' }), await tinyModelDir({ segmentIds: true })]) {
      const model = onnxProto.onnx.ModelProto.decode(readFileSync(path.join(dir, 'onnx', 'model.onnx')));
      const reductions = allNodes(model.graph!).filter((n) => n.opType!.startsWith('Reduce'));
      for (const n of reductions) {
        const keepdims = n.attribute?.find((a) => a.name === 'keepdims');
        expect(keepdims === undefined || Number(keepdims.i) === 1, `${path.basename(dir)}: ${n.name}`).toBe(true);
      }
    }
  });

  it.each([
    ['packed rows (split passes)', true],
    ['forked rows', false],
  ])('answers as the fused graph of the same weights: %s, then with the states cached', async (_name, packSuffixes) => {
    const fused = await load(await tinyModelDir({ segmentIds: true, attention: 'fused' }), { packSuffixes });
    const causal = await load(await causalModel(), { packSuffixes });
    for (const groups of calls()) {
      // Twice: computed, then with every state from the prefix cache (passes with a past).
      for (let round = 0; round < 2; round++) {
        const a = await fused.scoreBatch(groups);
        const b = await causal.scoreBatch(groups);
        expect(maxScoreDiff(a.groups, b.groups, 'logits')).toBeLessThan(1e-4);
        expect(maxScoreDiff(a.groups, b.groups, 'probabilities')).toBeLessThan(1e-6);
        expect(b.cachedTokens).toEqual(a.cachedTokens);
      }
    }
  });

  it('in fp16 too (the CPU computes both ops in fp32 there): within fp16 rounding of the fused graph', async () => {
    const made = (name: string, causalStates: boolean) =>
      makeModel({ preset: 'tiny', seed: TINY_SEED, dtype: 'fp16', outDir: path.join(scratch, name), features: { segmentIds: true, attention: 'fused', ...(causalStates ? { causalStates } : {}) } });
    const fused = await load((await made('fp16-fused', false)).dir, { packSuffixes: true });
    const causal = await load((await made('fp16-causal', true)).dir, { packSuffixes: true });
    const groups = counterWorkload(3, 5);
    expect(maxScoreDiff(await fused.score(groups), await causal.score(groups), 'probabilities')).toBeLessThan(5e-3);
  });

  it('scores a question alone as inside a busier call (probabilities 1e-6)', async () => {
    const engine = await load(await causalModel(), { packSuffixes: true, prefixCacheBytes: 0 });
    const groups = calls()[1]!;
    const together = await engine.score(groups);
    for (const g of [0, 4, 8]) {
      const [alone] = await engine.score([groups[g]!]);
      expect(maxScoreDiff([alone!], [together[g]!], 'probabilities')).toBeLessThan(1e-6);
    }
  });

  it('runs the split branch (a causal Attention over the states) in a packed call and not in a forked one (ONNX Runtime profile)', async () => {
    const nodesRun = async (packSuffixes: boolean): Promise<string[]> => {
      const prefix = path.join(scratch, `profile-${packSuffixes ? 'packed' : 'forked'}`);
      const engine = await Engine.load({ modelDir: await causalModel(), threads: 1, packSuffixes, prefixCacheBytes: 0, ortProfilePrefix: prefix });
      await engine.score(counterWorkload(8, 3));
      engine.close();
      const file = readdirSync(scratch).find((f) => f.startsWith(path.basename(prefix)) && f.endsWith('.json'))!;
      const events = JSON.parse(readFileSync(path.join(scratch, file), 'utf8')) as { cat?: string; name?: string }[];
      return events.filter((e) => e.cat === 'Node').map((e) => e.name ?? '');
    };
    const statesAttention = (names: string[]) => names.filter((n) => n.startsWith('/model/layers.0/states/self_attn/Attention'));
    const packed = await nodesRun(true);
    expect(statesAttention(packed).length).toBeGreaterThan(0);
    expect(packed.some((n) => n.startsWith('/model/layers.0/questions/self_attn/Attention'))).toBe(true);
    expect(statesAttention(await nodesRun(false))).toEqual([]);
  });

  it.each(['qwen2', 'llama3'])('the %s fixture imported with it scores as imported fused without it', async (family) => {
    const plain = await importModel({ hfDir: path.join(FIXTURES, family), outDir: path.join(scratch, `${family}-fused`), attention: 'fused' });
    const causal = await importModel({ hfDir: path.join(FIXTURES, family), outDir: path.join(scratch, `${family}-causal`), attention: 'fused', causalStates: true });
    const vocab = (JSON.parse(readFileSync(path.join(plain.dir, 'config.json'), 'utf8')) as { vocab_size: number }).vocab_size;
    const groups = randomGroups(11, 6, { prefixTokens: 30, suffixes: 4, suffixTokens: 7, labels: 8 }).map((g) => ({
      prefix: g.prefix.map((t) => t % vocab),
      suffixes: g.suffixes.map((s) => ({ tokens: s.tokens.map((t) => t % vocab), labels: s.labels.map((t) => t % vocab) })),
    }));
    const a = await (await load(plain.dir, { packSuffixes: true })).score(groups);
    const b = await (await load(causal.dir, { packSuffixes: true })).score(groups);
    expect(maxScoreDiff(a, b, 'logits')).toBeLessThan(1e-4);
  });

  it('make-model and import-model refuse --causal-states on without --attention fused (usage error)', () => {
    const values = { dtype: 'fp32', attention: 'ops', 'causal-states': 'on', force: false, 'no-agreement': false } as Parameters<typeof graphChoice>[1];
    expect(graphChoice('make-model', values)).toBe(2);
    expect(graphChoice('make-model', { ...values, attention: 'fused' })).toMatchObject({ attention: 'fused', causalStates: true });
  });
});
