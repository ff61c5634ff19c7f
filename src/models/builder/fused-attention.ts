/**
 * One layer's attention as ONNX Runtime's fused MultiHeadAttention (com.microsoft), for graphs
 * built with DecoderFeatures.attention 'fused'. The graph's contract does not change: the present KV
 * is still Concat(past, new) with kv_heads heads, and the visibility rules are the graph's additive
 * mask bias, passed to the op as attention_bias.
 *
 * Why MultiHeadAttention and not GroupQueryAttention (onnxruntime-genai's choice): the engine runs
 * rows with a past and several new tokens in one batch, and GroupQueryAttention refuses exactly that
 * ("batch_size must be 1 when sequence_length > 1 and past context is given", checked in
 * group_query_attention_helper.h, which ORT's CPU and CUDA kernels share). It also places each
 * row's new tokens right after that row's own past length (seqlens_k), while our rows keep them at
 * [P, P + S) behind padding. MultiHeadAttention has no such restriction, takes an arbitrary
 * additive bias, and has CPU (fp32 only in ORT 1.30: an fp16 graph runs it behind Casts) and CUDA
 * (fp32, fp16) kernels.
 *
 * Grouped-query attention without repeating KV heads: MultiHeadAttention wants as many KV heads as
 * query heads, so the query heads that share a KV head are folded into the op's sequence axis, as
 * the standard-op graph folds them into its row axis. The op then runs with num_heads = kv_heads over
 * group * S query rows (row g * S + s is query s of head kv * group + g) against the un-repeated
 * present KV in BNSH layout, and the mask bias keeps its [B, 1, group * S, T] shape. Only the query
 * and the output (S rows each) are transposed; the KV cache is never copied per head.
 */
import { MS_DOMAIN, type GraphBuilder } from './onnx-writer.js';

export interface FusedAttentionShape {
  numHeads: number;
  numKvHeads: number;
  headDim: number;
}

/**
 * `q`: rotated queries [B, heads, S, head_dim]; `presentK`/`presentV`: [B, kv_heads, T, head_dim];
 * `bias`: [B, 1, group * S, T] in the compute dtype. Returns the context [B, S, heads * head_dim].
 * The op's default scale, 1 / sqrt(head_dim), is the model's.
 */
export function fusedAttention(
  g: GraphBuilder,
  prefix: string,
  shape: FusedAttentionShape,
  q: string,
  presentK: string,
  presentV: string,
  bias: string,
): string {
  const { numHeads: nh, numKvHeads: kvh, headDim: hd } = shape;
  const group = nh / kvh;
  // [B, kv, group, S, hd] -> [B, group, S, kv, hd] -> [B, group * S, kv * hd]
  const qSplit = g.op1('Reshape', `${prefix}/Reshape_q`, [q, g.int64([0, kvh, group, -1, hd])]);
  const qRows = g.op1('Transpose', `${prefix}/Transpose_q`, [qSplit], { perm: [0, 2, 3, 1, 4] });
  const query = g.op1('Reshape', `${prefix}/Reshape_q_1`, [qRows, g.int64([0, -1, kvh * hd])]);
  const ctxRows = g.op1('MultiHeadAttention', `${prefix}/MultiHeadAttention`, [query, presentK, presentV, '', '', bias], { num_heads: kvh }, undefined, MS_DOMAIN);
  // [B, group * S, kv * hd] -> [B, group, S, kv, hd] -> [B, S, kv, group, hd] -> [B, S, heads * hd]
  const ctxSplit = g.op1('Reshape', `${prefix}/Reshape_ctx`, [ctxRows, g.int64([0, group, -1, kvh, hd])]);
  const ctxSeq = g.op1('Transpose', `${prefix}/Transpose_ctx`, [ctxSplit], { perm: [0, 2, 3, 1, 4] });
  return g.op1('Reshape', `${prefix}/Reshape_ctx_1`, [ctxSeq, g.int64([0, 0, nh * hd])]);
}
