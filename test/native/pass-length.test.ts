/**
 * The `passLengthMultiple` engine option (native/shape_buckets.h AlignPassLength), on the CPU
 * provider: every forward pass's past + new length rounded up to a multiple, with masked past
 * columns (or masked new tokens in a pass without a past), so that ONNX Runtime's CUDA attention
 * takes its fused kernel with the mask. Padding changes no answer: option probabilities within 1e-6
 * of the unpadded engine's, label logits within 1e-5, on the standard-op and fused graphs, forked and
 * packed rows, the stock LM head, shape buckets, causal states (split passes pad after their
 * questions), and calls whose states are partly cached (passes with a past).
 * ONNX Runtime's profile shows every run's mask with an aligned length. The default is 1 on the CPU
 * and 8 on CUDA.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { ENGINE_OPTIONS, type EngineOptions } from '../../src/engine/engine-options.js';
import { callsWithCachedStates } from '../helpers/random-groups.js';
import { expectSamePaddedAnswers } from '../helpers/score-compare.js';
import { tinyModelDir, type TinyVariant } from '../helpers/tiny-model.js';

const engines: Engine[] = [];
const scratch = mkdtempSync(path.join(os.tmpdir(), 'pass-length-'));
afterAll(() => {
  engines.forEach((e) => e.close());
  rmSync(scratch, { recursive: true, force: true });
});

const CAUSAL: TinyVariant = { segmentIds: true, attention: 'fused', causalStates: true };

async function load(variant: TinyVariant, options: EngineOptions): Promise<Engine> {
  const engine = await Engine.load({ modelDir: await tinyModelDir(variant), threads: 1, ...options });
  engines.push(engine);
  return engine;
}

/** Groups of odd lengths, then a call that extends some of their states (cached prefixes as past). */
const calls = (seed: number) => callsWithCachedStates(seed, 9, { prefixTokens: 37, suffixes: 4, suffixTokens: 11, labels: 20 }, { extend: 5, extraTokens: 5 });

describe.each<[string, TinyVariant, EngineOptions]>([
  ['standard-op graph, forked rows', {}, {}],
  ['standard-op graph, packed rows', { segmentIds: true }, { packSuffixes: true }],
  ['fused graph, packed rows', { segmentIds: true, attention: 'fused' }, { packSuffixes: true }],
  ['fused graph, forked rows', { attention: 'fused' }, { packSuffixes: false }],
  ['stock LM head (no scoring head)', {}, { gatherLogits: false }],
  ['fused graph with shape buckets', { segmentIds: true, attention: 'fused' }, { packSuffixes: true, shapeBuckets: true }],
  ['causal states, packed rows (split passes)', CAUSAL, { packSuffixes: true }],
])('pass length multiple, %s', (_name, variant, options) => {
  it('answers as unpadded passes do (probabilities 1e-6, logits 1e-5)', async () => {
    const plain = await load(variant, { ...options, passLengthMultiple: 1 });
    const aligned = await load(variant, { ...options, passLengthMultiple: 8 });
    for (const groups of calls(5)) {
      expectSamePaddedAnswers(await plain.scoreBatch(groups), await aligned.scoreBatch(groups));
    }
  });
});

describe('pass length multiple: what runs', () => {
  /** The last dimension of every attention_mask an ONNX Runtime run was given, and the nodes that ran, from its profile. */
  async function profiled(modelDir: string, multiple: number): Promise<{ lengths: number[]; nodes: string[] }> {
    const prefix = path.join(scratch, `profile-${path.basename(modelDir)}-${multiple}`);
    const engine = await Engine.load({ modelDir, threads: 1, packSuffixes: true, passLengthMultiple: multiple, ortProfilePrefix: prefix });
    for (const groups of calls(9)) await engine.score(groups);
    engine.close();
    const file = readdirSync(scratch).find((f) => f.startsWith(path.basename(prefix)) && f.endsWith('.json'))!;
    const events = JSON.parse(readFileSync(path.join(scratch, file), 'utf8')) as { cat?: string; name?: string; args?: { op_name?: string; input_type_shape?: Record<string, number[]>[] } }[];
    // The mask's Cast to bool reads attention_mask [rows, past + new] once per run.
    const nodes = events.filter((e) => e.cat === 'Node');
    const casts = nodes.filter((e) => e.name?.startsWith('/model/attn_mask/Cast') && e.args?.op_name === 'Cast');
    return { lengths: casts.map((e) => Object.values(e.args!.input_type_shape![0]!)[0]!.at(-1)!), nodes: nodes.map((e) => e.name ?? '') };
  }

  it('every run of an aligned engine has a total length that is a multiple of 8; unaligned ones do not', async () => {
    const fused = await tinyModelDir({ segmentIds: true, attention: 'fused' });
    const aligned = await profiled(fused, 8);
    expect(aligned.lengths.length).toBeGreaterThan(2);
    expect(aligned.lengths.every((t) => t % 8 === 0)).toBe(true);
    expect((await profiled(fused, 1)).lengths.some((t) => t % 8 !== 0)).toBe(true);
  });

  it('so does every run with causal states, split passes (the states\' causal Attention) included', async () => {
    const aligned = await profiled(await tinyModelDir(CAUSAL), 8);
    expect(aligned.nodes.some((n) => n.startsWith('/model/layers.0/states/self_attn/Attention'))).toBe(true);
    expect(aligned.lengths.every((t) => t % 8 === 0)).toBe(true);
  });

  it('defaults to 1 on the CPU and 8 on CUDA', () => {
    expect(ENGINE_OPTIONS.passLengthMultiple.default('cpu')).toBe(1);
    expect(ENGINE_OPTIONS.passLengthMultiple.default('cuda')).toBe(8);
  });
});
