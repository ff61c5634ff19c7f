/**
 * `importModel` on the config.json shapes real checkpoints ship, each checked against the float64
 * forward of test/helpers/hf-reference.ts (itself checked against transformers' logits in
 * import-model.test.ts) at several prefix / suffix splits:
 * - Llama 3.2 as the hub has it (transformers 4.x): tied embeddings, head_dim given, rope_scaling
 *   llama3 with `rope_type`, `torch_dtype` bfloat16, bf16 weights in shards with an index;
 * - Qwen2.5 small models: tied embeddings, `rope_scaling: null`, an inactive sliding window
 *   (use_sliding_window false) that must not limit the context;
 * - Gemma written by transformers 5.x: `rope_parameters`, `dtype` instead of `torch_dtype`, no
 *   tie_word_embeddings key (Gemma ties by default), only `hidden_act`;
 * - Mistral v0.3 style: head_dim null, sliding_window null, 5.x rope_parameters.
 * And what a user hits next: PyTorch .bin weights only, and a tokenizer whose labels are not single
 * tokens (both clear errors, nothing written).
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ImportError, importModel } from '../../src/models/import/import-model.js';
import { randomCheckpoint } from '../helpers/hf-checkpoint.js';
import { referenceForward } from '../helpers/hf-reference.js';
import { engineLastLogits, maxAbsDiff } from '../helpers/imported-logits.js';
import { releaseReferenceSessions } from '../helpers/reference.js';
import { bf16Round, writeSafetensors, writeShardedSafetensors, type Tensor } from '../helpers/safetensors-file.js';

const VOCAB = 512;

const LLAMA_3_2 = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  hidden_size: 64,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 16,
  intermediate_size: 96,
  num_hidden_layers: 2,
  vocab_size: VOCAB,
  max_position_embeddings: 131072,
  rope_theta: 500000.0,
  rope_scaling: { factor: 32.0, high_freq_factor: 4.0, low_freq_factor: 1.0, original_max_position_embeddings: 8192, rope_type: 'llama3' },
  rms_norm_eps: 1e-5,
  hidden_act: 'silu',
  attention_bias: false,
  mlp_bias: false,
  pretraining_tp: 1,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
};

const QWEN2_5 = {
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  hidden_size: 64,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 96,
  num_hidden_layers: 2,
  vocab_size: VOCAB,
  max_position_embeddings: 32768,
  rope_theta: 1000000.0,
  rope_scaling: null,
  sliding_window: 32,
  max_window_layers: 21,
  use_sliding_window: false,
  rms_norm_eps: 1e-6,
  hidden_act: 'silu',
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
};

const GEMMA_5X = {
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
  rope_parameters: { rope_theta: 10000.0, rope_type: 'default' },
  rms_norm_eps: 1e-6,
  hidden_act: 'gelu_pytorch_tanh', // transformers 5's GemmaConfig has no hidden_activation
  attention_bias: false,
  dtype: 'bfloat16',
};

const MISTRAL_V03 = {
  architectures: ['MistralForCausalLM'],
  model_type: 'mistral',
  hidden_size: 64,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: null,
  intermediate_size: 96,
  num_hidden_layers: 2,
  vocab_size: VOCAB,
  max_position_embeddings: 32768,
  rope_parameters: { rope_theta: 1000000.0, rope_type: 'default' },
  sliding_window: null,
  rms_norm_eps: 1e-5,
  hidden_act: 'silu',
  tie_word_embeddings: false,
  dtype: 'bfloat16',
};

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'import-configs-test-'));
});

afterAll(async () => {
  await releaseReferenceSessions();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

async function checkpointDir(name: string, cfg: Record<string, unknown>, tensors: Map<string, Tensor>, shards = 1): Promise<string> {
  const dir = path.join(scratch, 'hf', name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(cfg, null, 2));
  if (shards > 1) writeShardedSafetensors(dir, tensors, 'BF16', shards);
  else writeSafetensors(path.join(dir, 'model.safetensors'), tensors, 'BF16');
  return dir;
}

describe.each([
  ['Llama 3.2 (4.x config, tied, bf16 shards)', LLAMA_3_2, 3],
  ['Qwen2.5 (tied, rope_scaling null, inactive sliding window)', QWEN2_5, 1],
  ['Gemma (5.x config, no tie key, dtype key)', GEMMA_5X, 2],
  ['Mistral v0.3 (head_dim null, no window)', MISTRAL_V03, 1],
] as const)('%s', (name, config, shards) => {
  it('imports and scores like the float64 forward of the bf16 weights at every split', async () => {
    const normBase = config.model_type === 'gemma' ? 0 : 1;
    const tensors = randomCheckpoint(config, 17, normBase);
    const rounded = new Map([...tensors].map(([k, t]) => [k, { shape: t.shape, data: t.data.map(bf16Round) }]));
    const dir = await checkpointDir(name.split(' ')[0]!.toLowerCase(), config, tensors, shards);
    const imported = await importModel({ hfDir: dir, outDir: path.join(scratch, 'models', `${config.model_type}-2026-11`) });
    expect(imported.plan.slidingWindow).toBeUndefined(); // Qwen2.5's window of 32 is off (use_sliding_window false)
    expect(imported.warnings.filter((w) => !/no tokenizer\.json/.test(w))).toEqual([]);
    const sequences = [Array.from({ length: 45 }, (_, i) => (i * 37 + 5) % VOCAB), [7, 300, 11]];
    const got = await engineLastLogits(imported.dir, sequences, VOCAB);
    let spread = 0;
    for (const [i, ids] of sequences.entries()) {
      const ref = referenceForward(config, rounded, ids).at(-1)!;
      spread = Math.max(spread, Math.max(...ref) - Math.min(...ref));
      for (const { logits } of got[i]!) expect(maxAbsDiff(logits, ref)).toBeLessThan(1e-4);
    }
    expect(spread).toBeGreaterThan(1); // the logits vary, so the comparison means something
  });
});

describe('what a user hits next', () => {
  it('a folder with only pytorch_model.bin: an error saying safetensors is needed, nothing written', async () => {
    const dir = path.join(scratch, 'hf', 'torch-bin');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(QWEN2_5));
    await writeFile(path.join(dir, 'pytorch_model.bin'), Buffer.alloc(1024));
    const modelsDir = path.join(scratch, 'out-bin');
    await mkdir(modelsDir);
    const err = await importModel({ hfDir: dir, outDir: path.join(modelsDir, 'm-2026-11') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImportError);
    expect((err as Error).message).toMatch(/no \*\.safetensors weights .*PyTorch \.bin\/\.pt weights are not read: convert them to safetensors/);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it('a tokenizer in which "no" is two tokens: the label check names it, nothing written', async () => {
    const dir = await checkpointDir('char-tokenizer', QWEN2_5, randomCheckpoint(QWEN2_5, 3, 1));
    // A character-level BPE without merges: every letter is a token, "no" and " no" are two.
    const chars = [...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)), '\n'];
    const special = ['<|im_start|>', '<|im_end|>'].map((content, k) => ({
      id: chars.length + k,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    }));
    const tokenizer = {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: special,
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder: null,
      model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, vocab: Object.fromEntries(chars.map((c, i) => [c, i])), merges: [] },
    };
    await writeFile(path.join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
    const modelsDir = path.join(scratch, 'out-labels');
    await mkdir(modelsDir);
    const err = await importModel({ hfDir: dir, outDir: path.join(modelsDir, 'm-2026-11') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImportError);
    expect((err as Error).message).toMatch(/label tokens: .*the label "no" is not a single token/);
    expect(await readdir(modelsDir)).toEqual([]);
  });
});
