/**
 * `importModel` against independent oracles:
 * - the transformers-made checkpoints hf-tiny (README, "Tests": Qwen3, Qwen2, Llama 3 with
 *   llama3 rope scaling; fp32 and bf16) and transformers' own logits, scored through the Engine
 *   with the prompt split into prefix + suffix at several points;
 * - Mistral and Gemma checkpoints generated here from the family definitions, checked against a
 *   plain float64 forward pass written from transformers' modeling files (test/helpers/hf-reference.ts),
 *   which is itself checked against transformers' logits on the hf-tiny fixtures;
 * - sharded copies and transformers 4.x config styles, which must import byte-identically.
 */
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { EngineError } from '../../src/errors/engine-error.js';
import { deriveFusedGraph } from '../../src/models/fused-graph.js';
import { ModelOutputError } from '../../src/models/output-dir.js';
import { ImportError, importModel } from '../../src/models/import/import-model.js';
import { planFromConfig, rotaryInvFreq, readRope } from '../../src/models/import/hf-config.js';
import { referenceForward, referenceInvFreq } from '../helpers/hf-reference.js';
import { releaseReferenceSessions } from '../helpers/reference.js';
import { gaussian, randomCheckpoint } from '../helpers/hf-checkpoint.js';
import { engineLastLogits as engineLastLogitsOf, maxAbsDiff } from '../helpers/imported-logits.js';
import { HF_TINY } from '../helpers/fixtures.js';
import { bf16Round, readSafetensors, writeSafetensors, writeShardedSafetensors, type Tensor } from '../helpers/safetensors-file.js';

/** hf-tiny lives beside the checkout, not in it (README, "Tests"). */
const FIXTURES = HF_TINY;
const VOCAB = 512;
const ALL_IDS = Int32Array.from({ length: VOCAB }, (_, i) => i);
const engineLastLogits = (modelDir: string, sequences: number[][]) => engineLastLogitsOf(modelDir, sequences, VOCAB);

interface Case {
  input_ids: number[];
  last_logits: number[];
  all_positions_argmax: number[];
  positions_logits_sample: Record<string, number[]>;
}

let scratch: string;

beforeAll(async () => {
  if (!existsSync(FIXTURES)) throw new Error(`the hf-tiny fixtures are expected at ${FIXTURES} (set DECIDE_HF_TINY_DIR to their folder)`);
  scratch = await mkdtemp(path.join(os.tmpdir(), 'import-model-test-'));
});

afterAll(async () => {
  await releaseReferenceSessions();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

function cases(family: string): Case[] {
  return (JSON.parse(readFileSync(path.join(FIXTURES, family, 'reference_logits.json'), 'utf8')) as { cases: Case[] }).cases;
}

async function importFixture(family: string, dtype: 'fp32' | 'fp16' = 'fp32', from = path.join(FIXTURES, family)) {
  return importModel({ hfDir: from, outDir: path.join(scratch, 'models', `${path.basename(from)}-${dtype}-${Math.random().toString(36).slice(2, 8)}`), dtype });
}

function readConfig(dir: string): Record<string, unknown> {
  return JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
}

describe.each(['qwen3', 'qwen2', 'llama3'])('the %s fixture (made by transformers)', (family) => {
  it('imports in fp32 and scores within 1e-4 of transformers at every prefix/suffix split', async () => {
    const imported = await importFixture(family);
    expect(imported.hasTokenizer).toBe(false);
    expect(imported.warnings.join('\n')).toMatch(/no tokenizer\.json/);
    const refCases = cases(family);
    const got = await engineLastLogits(imported.dir, refCases.map((c) => c.input_ids));
    refCases.forEach((c, i) => {
      expect(got[i]!.length).toBeGreaterThan(0);
      for (const { logits } of got[i]!) expect(maxAbsDiff(logits, c.last_logits)).toBeLessThan(1e-4);
    });
  });

  it('the bf16 checkpoint imports and lands within bf16 rounding of transformers', async () => {
    const imported = await importFixture(`${family}-bf16`);
    const refCases = cases(family);
    const got = await engineLastLogits(imported.dir, refCases.map((c) => c.input_ids));
    // Exact against a float64 forward over the same (bf16) weights ...
    const cfg = readConfig(path.join(FIXTURES, `${family}-bf16`));
    const weights = readSafetensors(path.join(FIXTURES, `${family}-bf16`, 'model.safetensors'));
    for (const [i, c] of refCases.entries()) {
      if (c.input_ids.length > 64) continue; // the float64 forward is slow; 1, 7 and 64 tokens suffice here
      const ref = referenceForward(cfg, weights, c.input_ids).at(-1)!;
      for (const { logits } of got[i]!) expect(maxAbsDiff(logits, ref)).toBeLessThan(1e-4);
    }
    // ... and off transformers' fp32 logits only by the weights' rounding (logits are below 1).
    refCases.forEach((c, i) => {
      for (const { logits } of got[i]!) expect(maxAbsDiff(logits, c.last_logits)).toBeLessThan(2e-2);
    });
  });

  it('every position, not only the last: the argmax at each position and the sampled logits match transformers', async () => {
    const imported = await importFixture(family);
    const engine = await Engine.load({ modelDir: imported.dir });
    try {
      for (const c of cases(family)) {
        const ids = c.input_ids;
        // Position p is the last position of ids[0..p]: scored as prefix ids[0..p-1] + suffix ids[p]
        // (position 0, a single token, is the 1-token case's last position, checked above). Every
        // position up to 64 tokens; the sampled ones of the 300-token case.
        const positions = (ids.length <= 64 ? ids.map((_, p) => p) : Object.keys(c.positions_logits_sample).map(Number)).filter((p) => p >= 1);
        const scored = await engine.score(
          positions.map((p) => ({ prefix: Int32Array.from(ids.slice(0, p)), suffixes: [{ tokens: Int32Array.of(ids[p]!), labels: ALL_IDS }] })),
        );
        positions.forEach((p, i) => {
          const logits = scored[i]![0]!.labelLogits;
          let top = 0;
          for (let v = 1; v < VOCAB; v++) if (logits[v]! > logits[top]!) top = v;
          // A different argmax is only acceptable as a near-tie (logits agree to ~1e-5).
          const want = c.all_positions_argmax[p]!;
          if (top !== want) expect(Math.abs(logits[top]! - logits[want]!), `position ${p}`).toBeLessThan(1e-4);
          const sample = c.positions_logits_sample[String(p)];
          if (sample) expect(maxAbsDiff(logits.subarray(0, sample.length), sample), `position ${p}`).toBeLessThan(1e-4);
        });
      }
    } finally {
      engine.close();
    }
  });

  it('the float64 test reference itself agrees with transformers (so it can judge Mistral and Gemma)', () => {
    const cfg = readConfig(path.join(FIXTURES, family));
    const weights = readSafetensors(path.join(FIXTURES, family, 'model.safetensors'));
    for (const c of cases(family).filter((x) => x.input_ids.length <= 64)) {
      expect(maxAbsDiff(referenceForward(cfg, weights, c.input_ids).at(-1)!, c.last_logits)).toBeLessThan(1e-4);
    }
  });
});

describe('checkpoint layouts and config styles', () => {
  it('a sharded copy (model.safetensors.index.json) imports byte-identically', async () => {
    const src = path.join(FIXTURES, 'qwen2');
    const sharded = path.join(scratch, 'qwen2-sharded');
    await mkdir(sharded, { recursive: true });
    await cp(path.join(src, 'config.json'), path.join(sharded, 'config.json'));
    writeShardedSafetensors(sharded, readSafetensors(path.join(src, 'model.safetensors')), 'F32', 3);
    const a = await importFixture('qwen2');
    const b = await importFixture('qwen2', 'fp32', sharded);
    const graphA = await readFile(path.join(a.dir, 'onnx', 'model.onnx'));
    const graphB = await readFile(path.join(b.dir, 'onnx', 'model.onnx'));
    expect(graphB.equals(graphA)).toBe(true);
  });

  it('model.safetensors beside an index and its shards: model.safetensors is imported, as transformers loads it, with a warning', async () => {
    const src = path.join(FIXTURES, 'qwen2');
    const both = path.join(scratch, 'qwen2-single-and-shards');
    await mkdir(both, { recursive: true });
    await cp(path.join(src, 'config.json'), path.join(both, 'config.json'));
    // The shards hold other weights (bf16-rounded) than the fp32 single file.
    writeShardedSafetensors(both, readSafetensors(path.join(src, 'model.safetensors')), 'BF16', 3);
    await cp(path.join(src, 'model.safetensors'), path.join(both, 'model.safetensors'));
    const single = await importFixture('qwen2');
    const imported = await importFixture('qwen2', 'fp32', both);
    expect(imported.warnings).toContainEqual(
      expect.stringMatching(/^model\.safetensors and model\.safetensors\.index\.json are both there: model\.safetensors is imported and the index \(with the shards it lists\) is ignored/),
    );
    expect(JSON.parse(await readFile(path.join(imported.dir, 'decision.json'), 'utf8')).import.sourceDtypes).toEqual(['F32']);
    expect((await readFile(path.join(imported.dir, 'onnx', 'model.onnx'))).equals(await readFile(path.join(single.dir, 'onnx', 'model.onnx')))).toBe(true);

    // An index whose one shard is model.safetensors describes the same weights: nothing to say.
    const names = Object.keys(JSON.parse(await readFile(path.join(both, 'model.safetensors.index.json'), 'utf8')).weight_map as object);
    await writeFile(path.join(both, 'model.safetensors.index.json'), JSON.stringify({ weight_map: Object.fromEntries(names.map((n) => [n, 'model.safetensors'])) }));
    const same = await importFixture('qwen2', 'fp32', both);
    expect(same.warnings.filter((w) => /index/.test(w))).toEqual([]);
  });

  it('model.safetensors beside an adapter or a copy: model.safetensors alone is imported, with a warning naming the others', async () => {
    const src = path.join(FIXTURES, 'qwen2');
    const dir = path.join(scratch, 'qwen2-with-adapter');
    await mkdir(dir, { recursive: true });
    await cp(path.join(src, 'config.json'), path.join(dir, 'config.json'));
    await cp(path.join(src, 'model.safetensors'), path.join(dir, 'model.safetensors'));
    const weights = readSafetensors(path.join(src, 'model.safetensors'));
    // A PEFT adapter's tensor names, and a backup copy of the same tensors.
    writeSafetensors(path.join(dir, 'adapter_model.safetensors'), new Map([...weights].map(([n, t]) => [`base_model.model.${n.replace('.weight', '.lora_A.weight')}`, t])));
    await cp(path.join(src, 'model.safetensors'), path.join(dir, 'model.backup.safetensors'));
    const single = await importFixture('qwen2');
    const imported = await importFixture('qwen2', 'fp32', dir);
    expect(imported.warnings).toContainEqual(
      'adapter_model.safetensors, model.backup.safetensors are not read: model.safetensors is imported on its own, as transformers\' ' +
        'from_pretrained loads it (an adapter or a copy of the weights beside it is not merged in)',
    );
    expect((await readFile(path.join(imported.dir, 'onnx', 'model.onnx'))).equals(await readFile(path.join(single.dir, 'onnx', 'model.onnx')))).toBe(true);

    // Without model.safetensors every *.safetensors is read: tensors with no place name their file.
    await rm(path.join(dir, 'model.safetensors'));
    await rm(path.join(dir, 'model.backup.safetensors'));
    await cp(path.join(src, 'model.safetensors'), path.join(dir, 'base.safetensors'));
    await expect(importFixture('qwen2', 'fp32', dir)).rejects.toThrow(/tensor\(s\) the architecture has no place for \(e\.g\. base_model\.model\.[^;]*; in adapter_model\.safetensors\)/);
  });

  it('transformers 4.x configs (rope_theta + rope_scaling with rope_type or type) import like 5.x rope_parameters', async () => {
    const base = readConfig(path.join(FIXTURES, 'llama3'));
    const params = base.rope_parameters as Record<string, unknown>;
    const { rope_theta, rope_type, ...scaling } = params;
    const reference = await importFixture('llama3');
    const referenceGraph = await readFile(path.join(reference.dir, 'onnx', 'model.onnx'));
    for (const style of [{ rope_type }, { type: rope_type }]) {
      const dir = path.join(scratch, `llama3-4x-${Object.keys(style)[0]}`);
      await mkdir(dir, { recursive: true });
      await cp(path.join(FIXTURES, 'llama3', 'model.safetensors'), path.join(dir, 'model.safetensors'));
      const { rope_parameters: _drop, ...rest } = base;
      await writeFile(path.join(dir, 'config.json'), JSON.stringify({ ...rest, rope_theta, rope_scaling: { ...scaling, ...style } }));
      const imported = await importFixture('llama3', 'fp32', dir);
      expect(imported.plan.rope.type).toBe('llama3');
      expect((await readFile(path.join(imported.dir, 'onnx', 'model.onnx'))).equals(referenceGraph)).toBe(true);
    }
  });

  it('llama3 rope scaling matches the float64 formula to float32 precision', () => {
    const cfg = readConfig(path.join(FIXTURES, 'llama3'));
    const ours = rotaryInvFreq(16, readRope(cfg));
    const ref = referenceInvFreq(cfg, 16);
    ours.forEach((v, i) => expect(Math.abs(v - ref[i]!) / ref[i]!).toBeLessThan(1e-6));
    // The scaling changed something: low frequencies are divided by the factor.
    expect(ours.at(-1)! / referenceInvFreq({ rope_theta: 500000 }, 16).at(-1)!).toBeCloseTo(1 / 8, 5);
  });

  it('fp16 output runs close to fp32, with a warning in the library\'s terms that fp32 would be exact', async () => {
    const imported = await importFixture('qwen3', 'fp16');
    expect(imported.warnings.join('\n')).toMatch(/weights as fp16: .* import with dtype fp32 \(--dtype fp32 on the command line\) for an exact copy/);
    const c = cases('qwen3')[2]!;
    const [got] = await engineLastLogits(imported.dir, [c.input_ids]);
    for (const { logits } of got!) expect(maxAbsDiff(logits, c.last_logits)).toBeLessThan(2e-2);
  });
});

// ---------------------------------------------------------------- generated Mistral and Gemma

/** As MistralConfig writes it (transformers 4.x style): explicit head_dim != hidden / heads, GQA, a sliding window. */
const MISTRAL_CONFIG = {
  architectures: ['MistralForCausalLM'],
  model_type: 'mistral',
  hidden_size: 64,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 24,
  intermediate_size: 96,
  num_hidden_layers: 2,
  vocab_size: VOCAB,
  max_position_embeddings: 32768,
  sliding_window: 4096,
  rope_theta: 1000000.0,
  rms_norm_eps: 1e-5,
  hidden_act: 'silu',
  tie_word_embeddings: false,
  torch_dtype: 'float32',
};

/** As real Gemma checkpoints write it: hidden_act "gelu" but hidden_activation gelu_pytorch_tanh, tied, head_dim given. */
const GEMMA_CONFIG = {
  architectures: ['GemmaForCausalLM'],
  model_type: 'gemma',
  hidden_size: 64,
  num_attention_heads: 4,
  num_key_value_heads: 1,
  head_dim: 32,
  intermediate_size: 128,
  num_hidden_layers: 2,
  vocab_size: VOCAB,
  max_position_embeddings: 8192,
  rope_theta: 10000.0,
  rms_norm_eps: 1e-6,
  hidden_act: 'gelu',
  hidden_activation: 'gelu_pytorch_tanh',
  attention_bias: false,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
};

async function writeCheckpoint(name: string, cfg: Record<string, unknown>, tensors: Map<string, Tensor>, dtype: 'F32' | 'BF16'): Promise<string> {
  const dir = path.join(scratch, name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(cfg, null, 2));
  writeSafetensors(path.join(dir, 'model.safetensors'), tensors, dtype, { format: 'pt' });
  return dir;
}

function sequences(seed: number): number[][] {
  const next = gaussian(seed);
  return [5, 33, 120].map((n) => Array.from({ length: n }, () => Math.floor(Math.abs(next() * 1000)) % VOCAB));
}

describe.each([
  ['mistral', MISTRAL_CONFIG, 1],
  ['gemma', GEMMA_CONFIG, 0],
] as const)('a generated %s checkpoint', (family, config, normBase) => {
  it('imports (fp32 weights) and scores like the float64 forward at every split', async () => {
    const tensors = randomCheckpoint(config, family === 'mistral' ? 11 : 12, normBase);
    const dir = await writeCheckpoint(`${family}-f32`, config, tensors, 'F32');
    const imported = await importFixture(family, 'fp32', dir);
    expect(imported.plan.family).toBe(family);
    const seqs = sequences(3);
    const got = await engineLastLogits(imported.dir, seqs);
    let spread = 0;
    for (const [i, ids] of seqs.entries()) {
      const ref = referenceForward(config, tensors, ids).at(-1)!;
      spread = Math.max(spread, Math.max(...ref) - Math.min(...ref));
      for (const { logits } of got[i]!) expect(maxAbsDiff(logits, ref)).toBeLessThan(1e-4);
    }
    expect(spread).toBeGreaterThan(1); // the logits vary, so the comparison means something
  });

  it('imports bf16 weights exactly (bf16 -> fp32 is lossless)', async () => {
    const tensors = randomCheckpoint(config, 21, normBase);
    const rounded = new Map([...tensors].map(([k, t]) => [k, { shape: t.shape, data: t.data.map(bf16Round) }]));
    const dir = await writeCheckpoint(`${family}-bf16`, config, tensors, 'BF16');
    const imported = await importFixture(family, 'fp32', dir);
    const seqs = sequences(4).slice(0, 2);
    const got = await engineLastLogits(imported.dir, seqs);
    for (const [i, ids] of seqs.entries()) {
      const ref = referenceForward(config, rounded, ids).at(-1)!;
      for (const { logits } of got[i]!) expect(maxAbsDiff(logits, ref)).toBeLessThan(1e-4);
    }
  });
});

describe('config readings', () => {
  it('Gemma: hidden_activation wins over the legacy hidden_act, and defaults to the tanh GELU', () => {
    const { hidden_activation: _h, ...noActivation } = GEMMA_CONFIG;
    expect(planFromConfig({ ...noActivation, hidden_act: 'gelu' }).features.activation).toBe('gelu_tanh');
    expect(planFromConfig(GEMMA_CONFIG).features.activation).toBe('gelu_tanh');
    expect(planFromConfig({ ...GEMMA_CONFIG, hidden_activation: 'gelu' }).features.activation).toBe('gelu');
    // transformers 5 writes only hidden_act (default gelu_pytorch_tanh) and computes with it.
    expect(planFromConfig({ ...noActivation, hidden_act: 'gelu_pytorch_tanh' }).features.activation).toBe('gelu_tanh');
    expect(planFromConfig({ ...noActivation, hidden_act: 'silu' }).features.activation).toBe('silu');
    const { tie_word_embeddings: _t, ...untold } = GEMMA_CONFIG;
    expect(planFromConfig(untold).shape.tieWordEmbeddings).toBe(true);
  });

  it('Mistral: the window applies whatever layer_types say (transformers ignores them for Mistral)', () => {
    expect(planFromConfig({ ...MISTRAL_CONFIG, layer_types: ['full_attention', 'full_attention'] }).slidingWindow).toEqual({ size: 4096, layers: [true, true] });
  });

  it('Mistral: a sliding_window that is not a positive integer is refused by name (not full attention)', () => {
    for (const bad of ['4096', -1, 0, 2.5]) {
      expect(() => planFromConfig({ ...MISTRAL_CONFIG, sliding_window: bad })).toThrow(/^config\.json: "sliding_window" must be a positive integer/);
    }
  });

  it('Mistral: head_dim null means hidden / heads; no window means the full context', () => {
    const plan = planFromConfig({ ...MISTRAL_CONFIG, head_dim: null, sliding_window: null });
    expect(plan.shape.headDim).toBe(16);
    expect(plan.slidingWindow).toBeUndefined();
    expect(plan.features.slidingWindow).toBeUndefined();
  });

  it('Qwen2: the sliding_window value is ignored unless use_sliding_window is on', () => {
    const base = readConfig(path.join(FIXTURES, 'qwen2'));
    expect(planFromConfig({ ...base, sliding_window: 128 }).slidingWindow).toBeUndefined();
    // 4.x: use_sliding_window applies from max_window_layers on; 5.x: the layer types say where.
    const { layer_types: _lt, ...four } = base;
    expect(planFromConfig({ ...four, sliding_window: 128, use_sliding_window: true, max_window_layers: 1 }).slidingWindow).toEqual({ size: 128, layers: [false, true] });
    expect(planFromConfig({ ...four, sliding_window: 128, use_sliding_window: true }).slidingWindow).toBeUndefined(); // max_window_layers 28 > 2 layers
    expect(planFromConfig({ ...base, sliding_window: 128, layer_types: ['sliding_attention', 'full_attention'] }).slidingWindow).toEqual({ size: 128, layers: [true, false] });
    // A window as long as the context is no window.
    expect(planFromConfig({ ...four, sliding_window: 4096, use_sliding_window: true, max_window_layers: 0 }).slidingWindow).toBeUndefined();
  });

  it('linear rope scaling divides every frequency by the factor (4.x "type" spelling)', () => {
    const plain = planFromConfig({ ...MISTRAL_CONFIG }).features.invFreq!;
    const linear = planFromConfig({ ...MISTRAL_CONFIG, rope_scaling: { type: 'linear', factor: 4 } }).features.invFreq!;
    linear.forEach((v, i) => expect(v).toBeCloseTo(plain[i]! / 4, 12));
  });
});

describe('Gemma details', () => {
  it('uses the tanh GELU, the (1 + w) norm and the sqrt(hidden) embedding scale: dropping any one shows', () => {
    const tensors = randomCheckpoint(GEMMA_CONFIG, 12, 0);
    const ids = sequences(3)[1]!;
    const ref = referenceForward(GEMMA_CONFIG, tensors, ids).at(-1)!;
    // A Llama-style reading of the same weights is far off: the family rules matter at this scale.
    const asLlama = referenceForward({ ...GEMMA_CONFIG, model_type: 'llama', hidden_act: 'silu' }, tensors, ids).at(-1)!;
    expect(maxAbsDiff(ref, asLlama)).toBeGreaterThan(1e-2);
  });
});

describe('sliding-window attention', () => {
  it.each([
    ['Mistral (every layer)', { ...MISTRAL_CONFIG, sliding_window: 16 }, 1],
    ['Qwen2 4.x (use_sliding_window from max_window_layers on)', { ...MISTRAL_CONFIG, model_type: 'qwen2', head_dim: 16, sliding_window: 16, use_sliding_window: true, max_window_layers: 1 }, 1],
    ['Qwen3 5.x (layer_types)', { ...MISTRAL_CONFIG, model_type: 'qwen3', sliding_window: 16, layer_types: ['sliding_attention', 'full_attention'] }, 1],
  ] as const)('%s: states far past the window score like the float64 forward at every split', async (name, cfg, normBase) => {
    const tensors = randomCheckpoint(cfg, 31, normBase);
    const dir = await writeCheckpoint(`window-${cfg.model_type}`, cfg, tensors, 'F32');
    const imported = await importFixture(cfg.model_type, 'fp32', dir);
    expect(imported.plan.slidingWindow?.size).toBe(16);
    expect(imported.warnings.filter((w) => !/no tokenizer\.json/.test(w))).toEqual([]);
    // Several lengths in one engine call: rows are padded, so masked slots sit between prefix and suffix.
    const seqs = [Array.from({ length: 70 }, (_, i) => (i * 37) % VOCAB), Array.from({ length: 23 }, (_, i) => (i * 11 + 3) % VOCAB)];
    const got = await engineLastLogits(imported.dir, seqs);
    for (const [i, ids] of seqs.entries()) {
      const ref = referenceForward(cfg, tensors, ids).at(-1)!;
      // The window matters here: full attention over the same weights lands elsewhere.
      const full = referenceForward({ ...cfg, sliding_window: null }, tensors, ids).at(-1)!;
      if (ids.length > 17) expect(maxAbsDiff(ref, full)).toBeGreaterThan(1e-2);
      for (const { logits } of got[i]!) expect(maxAbsDiff(logits, ref)).toBeLessThan(1e-4);
    }
  });
});

// ---------------------------------------------------------------- errors

describe('checkpoints that cannot be imported', () => {
  async function variant(name: string, edit: (cfg: Record<string, unknown>, tensors: Map<string, Tensor>) => void): Promise<string> {
    const cfg = readConfig(path.join(FIXTURES, 'qwen3'));
    const tensors = readSafetensors(path.join(FIXTURES, 'qwen3', 'model.safetensors'));
    edit(cfg, tensors);
    return writeCheckpoint(`bad-${name}`, cfg, tensors, 'F32');
  }

  const bad: Array<[string, (cfg: Record<string, unknown>, t: Map<string, Tensor>) => void, RegExp]> = [
    ['moe-type', (c) => void (c.model_type = 'qwen3_moe'), /qwen3_moe.*mixture-of-experts/],
    ['moe-keys', (c) => void (c.num_experts = 8), /num_experts.*mixture-of-experts/],
    ['unknown-type', (c) => void (c.model_type = 'phi3'), /model_type "phi3" is not supported; supported: qwen3, qwen2, llama, mistral, gemma/],
    ['missing-tensor', (_c, t) => void t.delete('model.layers.1.mlp.up_proj.weight'), /missing tensor model\.layers\.1\.mlp\.up_proj\.weight/],
    ['shape', (c) => void (c.intermediate_size = 96), /model\.layers\.0\.mlp\.gate_proj\.weight has shape \[128, 64\], the config implies \[96, 64\]/],
    ['extra-tensor', (_c, t) => void t.set('model.layers.0.mlp.experts.0.weight', { shape: [2], data: new Float64Array(2) }), /no place for .*experts\.0\.weight/],
    ['rope-yarn', (c) => void (c.rope_parameters = { rope_type: 'yarn', rope_theta: 1e6, factor: 4 }), /rope scaling type "yarn" is not supported/],
    ['sliding', (c) => void Object.assign(c, { model_type: 'gemma2' }), /Gemma 2/],
  ];

  it.each(bad)('%s: a clear error, and nothing is left in the output directory', async (name, edit, message) => {
    const dir = await variant(name, edit);
    const modelsDir = path.join(scratch, `out-${name}`);
    await mkdir(modelsDir);
    const err = await importModel({ hfDir: dir, outDir: path.join(modelsDir, 'm-2026-11') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImportError);
    // An EngineError with its own stable code, apart from the caller's ERR_INPUT.
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: 'ERR_MODEL_IMPORT', message: expect.stringMatching(message) });
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it('dtype bf16 is refused with the reason and the alternatives, in the library\'s terms', async () => {
    const modelsDir = path.join(scratch, 'out-bf16');
    await mkdir(modelsDir);
    const err = await importModel({ hfDir: path.join(FIXTURES, 'qwen3'), outDir: path.join(modelsDir, 'm'), dtype: 'bf16' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_INPUT' });
    expect((err as Error).message).toMatch(/^importModel: dtype 'bf16': bf16 output is not supported: ONNX Runtime CPU .* dtype: 'fp16' .* dtype: 'fp32'/);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it('a truncated safetensors file is named, and an existing model is not replaced without force', async () => {
    const dir = path.join(scratch, 'truncated');
    await mkdir(dir);
    await cp(path.join(FIXTURES, 'qwen3', 'config.json'), path.join(dir, 'config.json'));
    const bytes = await readFile(path.join(FIXTURES, 'qwen3', 'model.safetensors'));
    await writeFile(path.join(dir, 'model.safetensors'), bytes.subarray(0, bytes.length - 1000));
    await expect(importModel({ hfDir: dir, outDir: path.join(scratch, 'out-trunc', 'm') })).rejects.toThrow(/model\.safetensors: tensor model\.\S+ .*\(truncated\)/);

    const first = await importFixture('qwen3');
    // In the library's terms (the command names its flags: test/e2e/import-model.test.ts), the output refusal as the cause.
    const taken = await importModel({ hfDir: path.join(FIXTURES, 'qwen3'), outDir: first.dir }).catch((e: unknown) => e);
    expect(taken).toMatchObject({ code: 'ERR_MODEL_IMPORT', message: expect.stringMatching(/already exists; choose another outDir .* pass force: true/) });
    expect((taken as Error).cause).toBeInstanceOf(ModelOutputError);
    expect((taken as Error).cause).toMatchObject({ code: 'ERR_INPUT' });
    const again = await importModel({ hfDir: path.join(FIXTURES, 'qwen2'), outDir: first.dir, force: true });
    expect(again.plan.family).toBe('qwen2');
    expect(readConfig(first.dir).model_type).toBe('qwen2');
  });
});

describe('importModel options, as a JavaScript caller may pass them', () => {
  // Each refused before the checkpoint is read or anything written, as an EngineError ERR_INPUT naming the option.
  const refusals: Array<[string, Record<string, unknown>, string]> = [
    ["one of makeModel's options", { features: { segmentIds: false } }, "importModel: unknown option 'features'"],
    ['a misspelt option', { segmentId: false }, "importModel: unknown option 'segmentId' (did you mean 'segmentIds'?)"],
    ['an unknown option', { bogus: 1 }, "importModel: unknown option 'bogus'"],
    ['an unknown dtype', { dtype: 'fp64' }, "importModel: dtype must be fp32, fp16 or int8, got 'fp64'"],
    ['an unknown attention graph', { attention: 'flash' }, "importModel: attention must be ops or fused, got 'flash'"],
    // A string is truthy: 'off' would otherwise write the packing graph.
    ['segmentIds as text', { segmentIds: 'off' }, "importModel: segmentIds must be true or false, got 'off'"],
    ['force as text', { force: 'yes' }, "importModel: force must be true or false, got 'yes'"],
    ['causalStates without the fused graph', { causalStates: true }, "importModel: causalStates: true needs attention: 'fused'"],
    ['a callback that is not a function', { onProgress: 'log' }, "importModel: onProgress must be a function, got 'log'"],
    ['no outDir', { outDir: undefined }, 'importModel: outDir must be a path (a string), got undefined'],
    ['an empty hfDir', { hfDir: '' }, 'importModel: hfDir must name a folder, got an empty value'],
    // The options are checked first: a missing checkpoint is not what the caller hears.
    ['an unknown option beside a missing checkpoint', { hfDir: path.join(os.tmpdir(), 'no-such-checkpoint'), dtypes: 'fp16' }, "importModel: unknown option 'dtypes' (did you mean 'dtype'?)"],
  ];
  it.each(refusals)('%s is refused naming it, and nothing is written', async (_, given, message) => {
    const parent = path.join(scratch, 'refused');
    const err = await importModel({ hfDir: path.join(FIXTURES, 'qwen3'), outDir: path.join(parent, 'm'), ...given } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).not.toBeInstanceOf(ImportError);
    expect(err).toMatchObject({ code: 'ERR_INPUT', message });
    await expect(stat(parent)).rejects.toThrow(/ENOENT/);
  });

  it('options that are not an object are refused', async () => {
    await expect(importModel(null as never)).rejects.toMatchObject({ code: 'ERR_INPUT', message: 'importModel: options must be an object, got null' });
  });
});

describe('--force over files the engine derived beside the model', () => {
  /** Every file under `dir`, relative, '/'-separated. */
  const filesIn = async (dir: string): Promise<string[]> =>
    (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => !e.isDirectory()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'));

  it('the u8s8 int8 rewrite and the derived fused graph are decide\'s: --force replaces a model that holds them, and still refuses a file of the user\'s', async () => {
    const qwen3 = path.join(FIXTURES, 'qwen3');
    // The u8s8 rewrite the engine makes at the first load on a VNNI/AMX CPU (forced here, on any CPU).
    const int8 = await importModel({ hfDir: qwen3, outDir: path.join(scratch, 'force-derived', 'int8'), dtype: 'int8' });
    const u8s8 = await Engine.load({ modelDir: int8.dir, threads: 1, int8Path: 'u8s8' });
    expect(u8s8.info.int8?.path).toBe('u8s8');
    u8s8.close();
    // The fused graph a CUDA engine derives from a standard-op model (forced here, on the CPU).
    const ops = await importModel({ hfDir: qwen3, outDir: path.join(scratch, 'force-derived', 'ops') });
    const fused = await Engine.load({ modelDir: ops.dir, threads: 1, fusedAttention: 'on', graphDeriver: deriveFusedGraph });
    expect(fused.info.attention).toEqual({ graph: 'fused', source: 'derived' });
    fused.close();
    expect((await filesIn(int8.dir)).some((f) => f.includes('.decide-u8s8.'))).toBe(true);
    expect((await filesIn(ops.dir)).some((f) => f.includes('.decide-fused/'))).toBe(true);

    for (const dir of [int8.dir, ops.dir]) {
      const again = await importModel({ hfDir: path.join(FIXTURES, 'qwen2'), outDir: dir, force: true });
      expect(again.plan.family).toBe('qwen2');
      expect((await filesIn(dir)).filter((f) => /\.decide-(?:u8s8|fused)/.test(f))).toEqual([]);
    }
    await writeFile(path.join(ops.dir, 'onnx', 'notes.txt'), 'mine');
    await expect(importModel({ hfDir: qwen3, outDir: ops.dir, force: true })).rejects.toThrow(/holds a file that decide did not write \(onnx\/notes\.txt\)/);
  }, 120_000);
});
