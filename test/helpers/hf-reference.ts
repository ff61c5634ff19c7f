/**
 * A plain float64 forward pass of the Hugging Face decoder families (Qwen3, Qwen2, Llama, Mistral,
 * Gemma), written from transformers' modeling_*.py, straight from a config.json and the checkpoint
 * tensors: no KV cache, no ONNX, nothing shared with src/. The importer's output is checked
 * against it (and it is itself checked against transformers' own logits in the fixtures).
 *
 * Per family, as in transformers:
 * - Llama / Mistral / Qwen2 / Qwen3: RMSNorm w * x / sqrt(mean(x^2) + eps); SwiGLU MLP.
 * - Qwen2: q/k/v biases. Qwen3: RMSNorm of each q and k head before RoPE.
 * - Gemma: RMSNorm x / sqrt(mean(x^2) + eps) * (1 + w); embeddings times sqrt(hidden_size) (rounded
 *   to float32, the model's dtype); GeGLU with the tanh-approximated GELU.
 * - Sliding windows (Mistral; Qwen with use_sliding_window or sliding layer types): key j visible
 *   to query i iff i - j < window.
 * - RoPE: rotate_half, inv_freq = 1 / theta^(2k/d), llama3 and linear scaling.
 */
import type { Tensor } from './safetensors-file.js';

type Config = Record<string, unknown>;

function ropeOf(cfg: Config): { theta: number; scaling: Record<string, unknown> | null } {
  const p = cfg.rope_parameters as Record<string, unknown> | undefined | null;
  if (p) {
    const type = (p.rope_type ?? 'default') as string;
    return { theta: p.rope_theta as number, scaling: type === 'default' ? null : p };
  }
  const s = cfg.rope_scaling as Record<string, unknown> | undefined | null;
  return { theta: (cfg.rope_theta as number) ?? 10000, scaling: s ?? null };
}

export function referenceInvFreq(cfg: Config, headDim: number): number[] {
  const { theta, scaling } = ropeOf(cfg);
  const inv = Array.from({ length: headDim / 2 }, (_, k) => 1 / theta ** ((2 * k) / headDim));
  if (!scaling) return inv;
  const type = (scaling.rope_type ?? scaling.type) as string;
  const factor = scaling.factor as number;
  if (type === 'linear') return inv.map((f) => f / factor);
  if (type !== 'llama3') throw new Error(`reference: rope type ${type}`);
  const low = scaling.low_freq_factor as number;
  const high = scaling.high_freq_factor as number;
  const old = scaling.original_max_position_embeddings as number;
  return inv.map((f) => {
    const wavelen = (2 * Math.PI) / f;
    if (wavelen < old / high) return f;
    if (wavelen > old / low) return f / factor;
    const smooth = (old / wavelen - low) / (high - low);
    return (1 - smooth) * (f / factor) + smooth * f;
  });
}

/** y[S, out] = x[S, in] @ W^T (+ b), W stored [out, in] as torch Linear. */
function linear(x: Float64Array[], w: Tensor, b?: Tensor): Float64Array[] {
  const [out, inn] = w.shape as [number, number];
  return x.map((row) => {
    const y = new Float64Array(out);
    for (let o = 0; o < out; o++) {
      let s = b ? b.data[o]! : 0;
      const base = o * inn;
      for (let i = 0; i < inn; i++) s += row[i]! * w.data[base + i]!;
      y[o] = s;
    }
    return y;
  });
}

/**
 * Causal softmax attention of every query position over the keys at or before it (and within
 * `window` positions), scores scaled by head_dim^-0.5, each query head reading key/value head
 * head / (heads / kvHeads) (repeat_kv). A function of its own over typed arrays: as loops inside
 * the long forward function, with an array of scores per query, it cost four times the CPU.
 */
function attention(
  q: Float64Array[],
  k: Float64Array[],
  v: Float64Array[],
  shape: { heads: number; kvHeads: number; headDim: number; window: number },
): Float64Array[] {
  const { heads, kvHeads, headDim: hd, window } = shape;
  const S = q.length;
  const ctx = Array.from({ length: S }, () => new Float64Array(heads * hd));
  const group = heads / kvHeads;
  const scale = 1 / Math.sqrt(hd);
  const scores = new Float64Array(S);
  for (let hh = 0; hh < heads; hh++) {
    const qo = hh * hd;
    const kvo = Math.floor(hh / group) * hd;
    for (let i = 0; i < S; i++) {
      const qi = q[i]!;
      let m = -Infinity;
      for (let j = 0; j <= i; j++) {
        let d = -Infinity;
        if (i - j < window) {
          const kj = k[j]!;
          d = 0;
          for (let e = 0; e < hd; e++) d += qi[qo + e]! * kj[kvo + e]!;
          d *= scale;
        }
        scores[j] = d;
        if (d > m) m = d;
      }
      let z = 0;
      for (let j = 0; j <= i; j++) {
        scores[j] = Math.exp(scores[j]! - m);
        z += scores[j]!;
      }
      const out = ctx[i]!;
      for (let j = 0; j <= i; j++) {
        const wgt = scores[j]! / z;
        const vj = v[j]!;
        for (let e = 0; e < hd; e++) out[qo + e] += wgt * vj[kvo + e]!;
      }
    }
  }
  return ctx;
}

function rmsNorm(x: Float64Array, w: Tensor, eps: number, gemma: boolean, offset = 0, len = x.length): void {
  let ss = 0;
  for (let i = 0; i < len; i++) ss += x[offset + i]! ** 2;
  const inv = 1 / Math.sqrt(ss / len + eps);
  for (let i = 0; i < len; i++) x[offset + i] = x[offset + i]! * inv * (gemma ? 1 + w.data[i]! : w.data[i]!);
}

function act(name: string, x: number): number {
  if (name === 'silu') return x / (1 + Math.exp(-x));
  if (name === 'gelu_pytorch_tanh') return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
  throw new Error(`reference: activation ${name}`);
}

/** Logits at every position ([S][vocab]) of `ids`, run from position 0. */
export function referenceForward(cfg: Config, tensors: Map<string, Tensor>, ids: number[]): Float64Array[] {
  const type = cfg.model_type as string;
  const gemma = type === 'gemma';
  const h = cfg.hidden_size as number;
  const nh = cfg.num_attention_heads as number;
  const kvh = (cfg.num_key_value_heads as number) ?? nh;
  const hd = (cfg.head_dim as number | null) ?? h / nh;
  const eps = cfg.rms_norm_eps as number;
  const layers = cfg.num_hidden_layers as number;
  // Sliding windows as the modeling files apply them: Mistral in every layer; Qwen2/Qwen3 in the
  // layers layer_types marks, else (4.x) from max_window_layers on when use_sliding_window is set.
  const windowOf = (layer: number): number => {
    const size = cfg.sliding_window;
    if (typeof size !== 'number') return Infinity;
    if (type === 'mistral') return size;
    if (type !== 'qwen2' && type !== 'qwen3') return Infinity;
    if (Array.isArray(cfg.layer_types)) return cfg.layer_types[layer] === 'sliding_attention' ? size : Infinity;
    return cfg.use_sliding_window === true && layer >= ((cfg.max_window_layers as number | undefined) ?? 28) ? size : Infinity;
  };
  // Gemma: hidden_activation (4.x) wins; else hidden_act (5.x), a bare legacy "gelu" meaning the tanh GELU.
  const gemmaAct = cfg.hidden_act === undefined || cfg.hidden_act === 'gelu' ? 'gelu_pytorch_tanh' : (cfg.hidden_act as string);
  const activation = gemma ? ((cfg.hidden_activation as string | undefined) ?? gemmaAct) : (cfg.hidden_act as string);
  const get = (n: string): Tensor => {
    const t = tensors.get(n);
    if (!t) throw new Error(`reference: missing ${n}`);
    return t;
  };
  const maybe = (n: string) => tensors.get(n);
  const S = ids.length;
  const embed = get('model.embed_tokens.weight');
  const normalizer = gemma ? Math.fround(Math.sqrt(h)) : 1;
  let x = ids.map((id) => embed.data.slice(id * h, (id + 1) * h).map((v) => v * normalizer));
  const invFreq = referenceInvFreq(cfg, hd);

  const rope = (v: Float64Array, head: number, pos: number) => {
    const o = head * hd;
    const half = hd / 2;
    const copy = v.slice(o, o + hd);
    for (let i = 0; i < hd; i++) {
      const ang = pos * invFreq[i % half]!;
      const rot = i < half ? -copy[i + half]! : copy[i - half]!;
      v[o + i] = copy[i]! * Math.cos(ang) + rot * Math.sin(ang);
    }
  };

  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}`;
    const window = windowOf(l);
    const normed = x.map((r) => {
      const c = r.slice();
      rmsNorm(c, get(`${p}.input_layernorm.weight`), eps, gemma);
      return c;
    });
    const q = linear(normed, get(`${p}.self_attn.q_proj.weight`), maybe(`${p}.self_attn.q_proj.bias`));
    const k = linear(normed, get(`${p}.self_attn.k_proj.weight`), maybe(`${p}.self_attn.k_proj.bias`));
    const v = linear(normed, get(`${p}.self_attn.v_proj.weight`), maybe(`${p}.self_attn.v_proj.bias`));
    for (let s = 0; s < S; s++) {
      if (type === 'qwen3') {
        for (let hh = 0; hh < nh; hh++) rmsNorm(q[s]!, get(`${p}.self_attn.q_norm.weight`), eps, false, hh * hd, hd);
        for (let hh = 0; hh < kvh; hh++) rmsNorm(k[s]!, get(`${p}.self_attn.k_norm.weight`), eps, false, hh * hd, hd);
      }
      for (let hh = 0; hh < nh; hh++) rope(q[s]!, hh, s);
      for (let hh = 0; hh < kvh; hh++) rope(k[s]!, hh, s);
    }
    const ctx = attention(q, k, v, { heads: nh, kvHeads: kvh, headDim: hd, window });
    const attnOut = linear(ctx, get(`${p}.self_attn.o_proj.weight`), maybe(`${p}.self_attn.o_proj.bias`));
    x = x.map((r, s) => r.map((val, i) => val + attnOut[s]![i]!));
    const normed2 = x.map((r) => {
      const c = r.slice();
      rmsNorm(c, get(`${p}.post_attention_layernorm.weight`), eps, gemma);
      return c;
    });
    const gate = linear(normed2, get(`${p}.mlp.gate_proj.weight`), maybe(`${p}.mlp.gate_proj.bias`));
    const up = linear(normed2, get(`${p}.mlp.up_proj.weight`), maybe(`${p}.mlp.up_proj.bias`));
    const prod = gate.map((g, s) => g.map((gv, i) => act(activation, gv) * up[s]![i]!));
    const down = linear(prod, get(`${p}.mlp.down_proj.weight`), maybe(`${p}.mlp.down_proj.bias`));
    x = x.map((r, s) => r.map((val, i) => val + down[s]![i]!));
  }
  const finalNormed = x.map((r) => {
    const c = r.slice();
    rmsNorm(c, get('model.norm.weight'), eps, gemma);
    return c;
  });
  const tied = cfg.tie_word_embeddings ?? gemma;
  const head = tied ? embed : get('lm_head.weight');
  return linear(finalNormed, head);
}
