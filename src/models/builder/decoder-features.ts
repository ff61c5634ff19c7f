/**
 * What the decoder graph builders share (decoder-graph.ts writes the standard-op layers, fused-layers.ts
 * the fused ones): the per-family features, the declared weights and their initialisation scale.
 */
import type { PartInit, WeightAssembly } from './weight-parts.js';

export type WeightInit =
  | PartInit
  /** The transpose of another 2-D weight declared earlier (a tied LM head). */
  | { kind: 'transposeOf'; source: string };

export interface WeightDecl {
  name: string;
  dims: number[];
  init: WeightInit;
  /**
   * Set on the fused graph's joined weights (weight-parts.ts): the values are these parts, drawn or
   * read under their own names and joined; `init` is then unused.
   */
  assembly?: WeightAssembly;
}

/** Standard deviation of embeddings and projections (HF initializer_range). */
export const INIT_STD = 0.02;

/**
 * The per-family differences of the decoder-only families this graph covers (Qwen3, Qwen2,
 * Llama, Mistral, Gemma). The defaults are the builder's Qwen3 graph; the checkpoint importer
 * (src/models/import/) sets them from a Hugging Face config.
 */
export interface DecoderFeatures {
  /** RMSNorm of each query and key head before the rotary embedding (Qwen3). */
  qkNorm: boolean;
  /** Biases on the q/k/v projections (Qwen2; Llama/Qwen3/Gemma with attention_bias). */
  qkvBias: boolean;
  /** A bias on the output projection (Llama/Qwen3/Gemma with attention_bias). */
  oBias: boolean;
  /** Biases on gate/up/down (Llama with mlp_bias). */
  mlpBias: boolean;
  /** 'weight': w * norm(x) (Llama, Qwen); 'onePlusWeight': (1 + w) * norm(x), all in fp32 (Gemma). */
  normStyle: 'weight' | 'onePlusWeight';
  /** Embeddings are multiplied by this, rounded to the compute dtype (Gemma: sqrt(hidden_size)). */
  embeddingScale?: number;
  /** The MLP's gate activation: SiLU (SwiGLU), GELU with the tanh approximation or exact (erf) GELU (GeGLU). */
  activation: 'silu' | 'gelu_tanh' | 'gelu';
  /** Rotary inverse frequencies (headDim / 2 of them), e.g. after llama3 scaling; default 1 / theta^(2k/headDim). */
  invFreq?: readonly number[];
  /**
   * Sliding-window attention (Mistral; Qwen2/Qwen3 with use_sliding_window): in the layers marked
   * true, a query sees only the keys less than `size` positions before it.
   */
  slidingWindow?: { size: number; layers: readonly boolean[] };
  /**
   * Multi-item packing: an extra input SEGMENT_IDS_INPUT numbers each token's item, 0 for the
   * shared state. A query then sees a key only when the key is in segment 0 or in its own segment
   * (still causal and unmasked). With each question's position_ids restarting at the state's
   * length, one row scores a state and all of its questions, or its questions after the state's
   * KV as past, without a copy of that KV per question.
   */
  segmentIds?: boolean;
  /**
   * How the layers are written: 'ops' (default) from standard ONNX ops; 'fused' from ONNX Runtime's
   * com.microsoft contrib ops and ONNX's Attention (fused-layers.ts: SkipSimplifiedLayerNormalization,
   * packed projections, RotaryEmbedding, Attention, QuickGelu), far fewer nodes for a GPU to
   * launch. Same inputs, outputs and mask semantics; the graph then needs ONNX Runtime (opset 23).
   */
  attention?: 'ops' | 'fused';
  /**
   * With attention 'fused': a pass without a past whose rows are laid out as [state | questions]
   * (the input decide_state_span [Ls] gives the state part's length) runs the two parts as streams
   * of their own, each row's state tokens through causal Attention without a mask, which computes
   * no masked-out half (flash on a GPU), and only the questions through Attention with the mask,
   * over [state KV + their KV].
   * Any other pass (a past, or no split) runs as without it. Same answers; docs/models.md.
   */
  causalStates?: boolean;
  /**
   * With attention 'fused': the engine's own operators (ai.decide.HeadNormRotary and
   * ai.decide.SiluMul, native/ops/fused_ops.h) where a layer has what they fuse, each one pass over
   * memory where ONNX Runtime's ops take two or three: the q and k norms (qkNorm) with both rotaries,
   * or the rotaries alone (head_dim up to 512), and SiLU(gate) * up (activation 'silu'). 12 nodes per
   * Qwen3 layer instead of 20. The
   * graph then runs only in this engine (its addon registers the operators on every session, with
   * CPU kernels and CUDA kernels that NVRTC compiles for the card). Same answers; docs/models.md.
   */
  ownKernels?: boolean;
}

/** What stops `features` from holding ownKernels, or undefined: the operators replace nodes of the fused graph only. */
export function ownKernelsConflict(features: { ownKernels?: unknown; attention?: unknown }): 'attention' | undefined {
  return features.ownKernels === true && features.attention !== 'fused' ? 'attention' : undefined;
}

/**
 * What stops `features` from holding causalStates, or undefined: the causal kernel exists only in
 * the fused graph ('attention'), and not beside a sliding window ('sliding-window'). The graph
 * builder throws on it; makeModel's and importModel's option checks refuse it first, each in its
 * own options' names (they pass what a caller gave, not yet typed).
 */
export function causalStatesConflict(features: { causalStates?: unknown; attention?: unknown; slidingWindow?: unknown }): 'attention' | 'sliding-window' | undefined {
  if (features.causalStates !== true) return undefined;
  if (features.attention !== 'fused') return 'attention';
  return features.slidingWindow ? 'sliding-window' : undefined;
}
