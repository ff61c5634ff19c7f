/**
 * Random Hugging Face checkpoints with the tensor names and torch shapes of the Llama layout
 * (Qwen3 adds q/k norms; Qwen2, or attention_bias, adds projection biases), for importer tests. Deterministic per seed.
 */
import type { Tensor } from './safetensors-file.js';

/** A small Qwen3 with the real Qwen3 vocabulary, so the real tokenizer and chat template apply. */
export const QWEN3_REAL_VOCAB_CONFIG = {
  architectures: ['Qwen3ForCausalLM'],
  model_type: 'qwen3',
  hidden_size: 32,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 16,
  intermediate_size: 64,
  num_hidden_layers: 1,
  vocab_size: 151936,
  max_position_embeddings: 4096,
  rope_theta: 1000000,
  rms_norm_eps: 1e-6,
  hidden_act: 'silu',
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
};

/** Deterministic normal(0, 1) stream. */
export function gaussian(seed: number): () => number {
  let s = seed >>> 0;
  const uniform = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}

/** Random weights with the tensor names and torch shapes of a Llama-layout checkpoint. */
export function randomCheckpoint(cfg: Record<string, unknown>, seed: number, normBase: number): Map<string, Tensor> {
  const next = gaussian(seed);
  const h = cfg.hidden_size as number;
  const nh = cfg.num_attention_heads as number;
  const kvh = cfg.num_key_value_heads as number;
  const hd = (cfg.head_dim as number | undefined) ?? h / nh;
  const inter = cfg.intermediate_size as number;
  const vocab = cfg.vocab_size as number;
  const out = new Map<string, Tensor>();
  const add = (name: string, shape: number[], std: number, base = 0) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float64Array(n);
    for (let i = 0; i < n; i++) data[i] = Math.fround(base + std * next());
    out.set(name, { shape, data });
  };
  add('model.embed_tokens.weight', [vocab, h], 0.5);
  for (let l = 0; l < (cfg.num_hidden_layers as number); l++) {
    const p = `model.layers.${l}`;
    add(`${p}.input_layernorm.weight`, [h], 0.1, normBase);
    add(`${p}.self_attn.q_proj.weight`, [nh * hd, h], 0.15);
    add(`${p}.self_attn.k_proj.weight`, [kvh * hd, h], 0.15);
    add(`${p}.self_attn.v_proj.weight`, [kvh * hd, h], 0.15);
    add(`${p}.self_attn.o_proj.weight`, [h, nh * hd], 0.15);
    if (cfg.model_type === 'qwen2' || cfg.attention_bias === true) {
      add(`${p}.self_attn.q_proj.bias`, [nh * hd], 0.3);
      add(`${p}.self_attn.k_proj.bias`, [kvh * hd], 0.3);
      add(`${p}.self_attn.v_proj.bias`, [kvh * hd], 0.3);
    }
    if (cfg.model_type !== 'qwen2' && cfg.attention_bias === true) add(`${p}.self_attn.o_proj.bias`, [h], 0.3);
    if (cfg.model_type === 'qwen3') {
      add(`${p}.self_attn.q_norm.weight`, [hd], 0.1, normBase);
      add(`${p}.self_attn.k_norm.weight`, [hd], 0.1, normBase);
    }
    add(`${p}.post_attention_layernorm.weight`, [h], 0.1, normBase);
    add(`${p}.mlp.gate_proj.weight`, [inter, h], 0.15);
    add(`${p}.mlp.up_proj.weight`, [inter, h], 0.15);
    add(`${p}.mlp.down_proj.weight`, [h, inter], 0.15);
  }
  add('model.norm.weight', [h], 0.1, normBase);
  if (cfg.tie_word_embeddings === false) add('lm_head.weight', [vocab, h], 0.1);
  return out;
}

