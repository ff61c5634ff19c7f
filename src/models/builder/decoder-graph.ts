/**
 * The ONNX graph of a Qwen3-style decoder with past, named like an Optimum `text-generation-with-past`
 * export. It declares its big weights (names, dims, how to initialise them) and leaves their values to
 * the caller.
 *
 * Mask semantics (the engine depends on them): with P = past_key_values.0.key.shape[2] and S =
 * input_ids.shape[1], query s sits at cache index P + s; key j is visible to it iff j <= P + s and
 * attention_mask[b, j] != 0. Masked scores get the lowest finite float added before the softmax (which
 * absorbs the score), so a fully masked row yields a uniform distribution, never NaN. Rotary angles come from position_ids,
 * not from cache indices, so a row may sit at any cache offset. Sliding-window layers (an importer
 * feature) further hide keys whose position is `size` or more before the query's: a past key's
 * position counted over unmasked keys, a new key's the same count, or its position_id in a graph with
 * segment ids (packed questions restart their positions).
 *
 * Attention is grouped without copying KV heads: the query heads that share a KV head are folded into
 * the row axis ([B, kv_heads, group * S, head_dim]) and multiplied against the un-repeated present KV.
 * With DecoderFeatures.attention 'fused' the layers are ONNX Runtime's fused contrib ops and ONNX's
 * grouped Attention instead (fused-layers.ts: 14 to 20 nodes per layer, twice that in the split
 * branch of causal states); inputs, outputs and masking are the same.
 */
import {
  ATTENTION_OPSET,
  DataType,
  GraphBuilder,
  ONNX_OPSET,
  floatElemType,
  floatTensor,
  makeValueInfo,
  type FloatDtype,
  type GraphProto,
  type NodeProto,
} from './onnx-writer.js';
import { causalStatesConflict, INIT_STD, ownKernelsConflict, type DecoderFeatures, type WeightDecl, type WeightInit } from './decoder-features.js';
import { buildFusedLayers, type StateSplit } from './fused-layers.js';
import { geluNodes } from './gelu.js';
import { int8MatMulNode, type Int8Kernel, type Int8Scheme } from './quantize.js';
import type { ModelShape } from './presets.js';

export { INIT_STD, type DecoderFeatures, type WeightDecl, type WeightInit } from './decoder-features.js';

export interface DecoderGraph {
  /** Nodes, inputs, outputs and small constants (rotary inv_freq, shape constants); no big weights. */
  graph: GraphProto;
  /** Big weights in the order they should be written. MatMul weights are [in, out] (transposed vs PyTorch). */
  weights: WeightDecl[];
  /**
   * With an int8 scheme: the weights the graph reads quantized (quantize.ts quantizeWeightSpecs
   * turns their fp32 values into int8 storage plus a scale initializer). Empty otherwise.
   */
  quantized: Map<string, Int8Kernel>;
  /** Nodes in the largest layer as written (ONNX Runtime may fuse some when it loads the graph). */
  nodesPerLayer: number;
  /** The default domain's opset the graph is written for (the fused graph's Attention needs 23). */
  opset: number;
}

/** The LM head node and its input (the final RMSNorm output), for graph rewrites that gather rows before it. */
export const LM_HEAD_NODE = '/lm_head/MatMul';
export const LM_HEAD_INPUT = '/model/norm/Mul_output_0';
export const LM_HEAD_WEIGHT = 'lm_head.weight';

export const DIM_BATCH = 'batch_size';
export const DIM_SEQUENCE = 'sequence_length';
export const DIM_PAST = 'past_sequence_length';
export const DIM_TOTAL = 'total_sequence_length';
/** The optional packing input (DecoderFeatures.segmentIds): [batch, total_sequence_length] int64. */
export const SEGMENT_IDS_INPUT = 'decide_segment_ids';
/** Graphs with DecoderFeatures.causalStates: an int64 input whose length is the state part's (its values are not read). */
export const STATE_SPAN_INPUT = 'decide_state_span';
export const DIM_STATE = 'state_length';

/** The LM head (or the embedding, when tied) is scaled so logits have roughly this standard deviation: varied, not degenerate. */
export const LOGIT_STD = 2;

const FLOAT32_LOWEST = -3.4028234663852886e38;
/**
 * The fp16 mask value of the fused graph: -2^15, not fp16's lowest (-65504), so that score + bias
 * cannot overflow to -inf where a kernel adds them in fp16 (a fully masked row would then be NaN),
 * and still far below any score.
 */
const FLOAT16_MASK = -32768;

export const DEFAULT_FEATURES: Readonly<DecoderFeatures> = {
  qkNorm: true,
  qkvBias: false,
  oBias: false,
  mlpBias: false,
  normStyle: 'weight',
  activation: 'silu',
};

export function pastKeyName(layer: number): string {
  return `past_key_values.${layer}.key`;
}
export function pastValueName(layer: number): string {
  return `past_key_values.${layer}.value`;
}
export function presentKeyName(layer: number): string {
  return `present.${layer}.key`;
}
export function presentValueName(layer: number): string {
  return `present.${layer}.value`;
}

/**
 * @param int8 stores the projection and MLP weights (and the LM head if the scheme says so) as
 *   int8 with scales, multiplied by ONNX Runtime's int8 kernels (quantize.ts); fp32 graphs only.
 *   Embeddings, norms and biases stay fp32.
 */
export function buildDecoderGraph(
  shape: ModelShape,
  dtype: FloatDtype,
  featureOverrides: Partial<DecoderFeatures> = {},
  int8?: Int8Scheme,
): DecoderGraph {
  if (int8 !== undefined && dtype !== 'fp32') throw new Error('decoder graph: int8 weights compute in fp32; the dtype must be fp32');
  const features: DecoderFeatures = { ...DEFAULT_FEATURES, ...featureOverrides };
  const g = new GraphBuilder(features.attention === 'fused' ? ATTENTION_OPSET : ONNX_OPSET);
  const ft = floatElemType(dtype);
  const fp16 = dtype === 'fp16';
  const { hiddenSize: h, numHeads: nh, numKvHeads: kvh, headDim: hd, vocabSize: vocab } = shape;
  const groups = nh / kvh;
  const weights: WeightDecl[] = [];
  const weight = (name: string, dims: number[], init: WeightInit): string => {
    weights.push({ name, dims, init });
    return name;
  };
  const normal = { kind: 'normal', std: INIT_STD } as const;
  const ones = { kind: 'ones' } as const;
  const zeros = { kind: 'zeros' } as const;
  // A projection: x @ W (+ b). W is [in, out].
  const quantized = new Map<string, Int8Kernel>();
  /** x @ W by a MatMul, or by an int8 kernel when W is quantized (same weight name and dims: only the storage differs). */
  const matmulIn = (b: GraphBuilder, node: string, x: string, w: string, dims: [number, number], kernel: Int8Kernel | 'fp32' | undefined, output?: string): string => {
    if (kernel === undefined || kernel === 'fp32' || int8 === undefined) return b.op1('MatMul', node, [x, w], {}, output);
    quantized.set(w, kernel);
    return int8MatMulNode(b, node, x, w, dims, kernel, int8.block, output);
  };
  const matmul = (node: string, x: string, w: string, dims: [number, number], kernel: Int8Kernel | 'fp32' | undefined, output?: string): string =>
    matmulIn(g, node, x, w, dims, kernel, output);
  const linear = (node: string, x: string, name: string, dims: [number, number], bias: boolean): string => {
    const y = matmul(`${node}/MatMul`, x, weight(`${name}.weight`, dims, normal), dims, int8?.kernel);
    return bias ? g.op1('Add', `${node}/Add`, [y, weight(`${name}.bias`, [dims[1]], zeros)]) : y;
  };

  const inputs = [
    makeValueInfo('input_ids', DataType.INT64, [DIM_BATCH, DIM_SEQUENCE]),
    makeValueInfo('attention_mask', DataType.INT64, [DIM_BATCH, DIM_TOTAL]),
    makeValueInfo('position_ids', DataType.INT64, [DIM_BATCH, DIM_SEQUENCE]),
  ];
  if (features.segmentIds) inputs.push(makeValueInfo(SEGMENT_IDS_INPUT, DataType.INT64, [DIM_BATCH, DIM_TOTAL]));
  if (features.causalStates) {
    const conflict = causalStatesConflict(features);
    if (conflict === 'attention') throw new Error('decoder graph: causalStates needs attention fused');
    if (conflict === 'sliding-window') throw new Error('decoder graph: causalStates does not take a sliding window');
    inputs.push(makeValueInfo(STATE_SPAN_INPUT, DataType.INT64, [DIM_STATE]));
  }
  if (ownKernelsConflict(features) === 'attention') throw new Error('decoder graph: ownKernels needs attention fused');
  const outputs = [makeValueInfo('logits', ft, [DIM_BATCH, DIM_SEQUENCE, vocab])];
  for (let i = 0; i < shape.numLayers; i++) {
    inputs.push(makeValueInfo(pastKeyName(i), ft, [DIM_BATCH, kvh, DIM_PAST, hd]));
    inputs.push(makeValueInfo(pastValueName(i), ft, [DIM_BATCH, kvh, DIM_PAST, hd]));
    outputs.push(makeValueInfo(presentKeyName(i), ft, [DIM_BATCH, kvh, DIM_TOTAL, hd]));
    outputs.push(makeValueInfo(presentValueName(i), ft, [DIM_BATCH, kvh, DIM_TOTAL, hd]));
  }

  const i64 = (v: number) => g.int64([v], []);
  const toFloat = (name: string, x: string) => (fp16 ? g.op1('Cast', name, [x], { to: DataType.FLOAT }) : x);
  const toCompute = (name: string, x: string) => (fp16 ? g.op1('Cast', name, [x], { to: DataType.FLOAT16 }) : x);

  /**
   * HF Qwen3RMSNorm / LlamaRMSNorm: weight * (x / sqrt(mean(x^2) + eps)), statistics in fp32
   * (torch-export pattern ORT fuses). GemmaRMSNorm multiplies by (1 + weight) in fp32 and casts after.
   */
  const rmsNorm = (prefix: string, x: string, w: string): string => {
    const xf = toFloat(`${prefix}/Cast`, x);
    const sq = g.op1('Pow', `${prefix}/Pow`, [xf, g.float('fp32', [2], [])]);
    const mean = g.op1('ReduceMean', `${prefix}/ReduceMean`, [sq], { axes: [-1], keepdims: 1 });
    const withEps = g.op1('Add', `${prefix}/Add`, [mean, g.float('fp32', [shape.rmsNormEps], [])]);
    const root = g.op1('Sqrt', `${prefix}/Sqrt`, [withEps]);
    const normedF = g.op1('Div', `${prefix}/Div`, [xf, root]);
    if (features.normStyle === 'onePlusWeight') {
      const onePlus = g.op1('Add', `${prefix}/Add_1`, [toFloat(`${prefix}/Cast_w`, w), g.float('fp32', [1], [])]);
      return toCompute(`${prefix}/Cast_1`, g.op1('Mul', `${prefix}/Mul`, [normedF, onePlus]));
    }
    const normed = toCompute(`${prefix}/Cast_1`, normedF);
    return g.op1('Mul', `${prefix}/Mul`, [w, normed]);
  };

  // Embedding.
  // A tied head reads the embedding, so scale it like an untied head to keep logits varied.
  const embedStd = shape.tieWordEmbeddings ? LOGIT_STD / Math.sqrt(h) : INIT_STD;
  const embed = weight('model.embed_tokens.weight', [vocab, h], { kind: 'normal', std: embedStd });
  let hidden = g.op1('Gather', '/model/embed_tokens/Gather', [embed, 'input_ids'], { axis: 0 });
  if (features.embeddingScale !== undefined) {
    // Gemma: `hidden * torch.tensor(hidden_size ** 0.5, dtype=hidden.dtype)`, the factor rounded to the dtype.
    hidden = g.op1('Mul', '/model/embed_tokens/Mul', [hidden, g.float(dtype, [features.embeddingScale], [])]);
  }

  const invFreqValues = features.invFreq ?? Array.from({ length: hd / 2 }, (_, k) => 1 / shape.ropeTheta ** ((2 * k) / hd));
  if (invFreqValues.length !== hd / 2) throw new Error(`decoder graph: ${invFreqValues.length} rotary frequencies, expected ${hd / 2}`);
  const fused = features.attention === 'fused';
  // Rotary tables from position_ids, in fp32 (positions past 2048 are not exact in fp16): [B, 1, S, hd].
  // The fused graph has its own (fused-layers.ts).
  let cos = '';
  let sin = '';
  if (!fused) {
    const invFreq = '/model/rotary_emb/inv_freq';
    g.addInitializer(floatTensor(invFreq, 'fp32', [hd / 2], invFreqValues));
    const pos = g.op1('Cast', '/model/rotary_emb/Cast', ['position_ids'], { to: DataType.FLOAT });
    const posCol = g.op1('Unsqueeze', '/model/rotary_emb/Unsqueeze', [pos, g.int64([2])]);
    const freqs = g.op1('Mul', '/model/rotary_emb/Mul', [posCol, invFreq]);
    const angles = g.op1('Concat', '/model/rotary_emb/Concat', [freqs, freqs], { axis: -1 });
    const cosF = g.op1('Cos', '/model/rotary_emb/Cos', [angles]);
    const sinF = g.op1('Sin', '/model/rotary_emb/Sin', [angles]);
    cos = g.op1('Unsqueeze', '/model/rotary_emb/Unsqueeze_1', [toCompute('/model/rotary_emb/Cast_1', cosF), g.int64([1])]);
    sin = g.op1('Unsqueeze', '/model/rotary_emb/Unsqueeze_2', [toCompute('/model/rotary_emb/Cast_2', sinF), g.int64([1])]);
  }

  // Visibility mask [B, 1, group * S, T], shared by all layers; row r is query r mod S. The fused
  // graph's Attention groups the heads itself: its mask has one row per query ([B, 1, S, T]).
  const m = '/model/attn_mask';
  /** A row of S query values as the attention rows see them ([S] or [B, S] in; [g * S] or [B, g * S] out, or as is when fused). */
  const queryRows = (prefix: string, x: string, rank: 1 | 2): string => {
    if (fused) return x;
    return g.op1('Tile', `${prefix}/Tile`, [x, g.int64(rank === 1 ? [groups] : [1, groups])]);
  };
  // The lengths are shape scalars, which ONNX Runtime keeps on the CPU: they feed only ops that
  // take them there (Range's bounds, Tile's repeats, Slice's starts), never arithmetic that runs on
  // a GPU, which would make it copy them over in every run (a Memcpy node).
  const pastLen = g.op1('Shape', `${m}/Shape_1`, [pastKeyName(0)], { start: 2, end: 3 });
  const totalLen = g.op1('Shape', `${m}/Shape_2`, ['attention_mask'], { start: 1, end: 2 });
  const axis0 = g.int64([0]);
  const pastLenS = g.op1('Squeeze', `${m}/Squeeze_1`, [pastLen, axis0]);
  const totalLenS = g.op1('Squeeze', `${m}/Squeeze_2`, [totalLen, axis0]);
  const keyIdx = g.op1('Range', `${m}/Range`, [i64(0), totalLenS, i64(1)]);
  // Row r of the group-stacked rows is query r mod S, at position past + (r mod S).
  const queryIdx = queryRows(m, g.op1('Range', `${m}/Range_1`, [pastLenS, totalLenS, i64(1)]), 1);
  const causal = g.op1('LessOrEqual', `${m}/LessOrEqual`, [
    g.op1('Unsqueeze', `${m}/Unsqueeze`, [keyIdx, g.int64([0])]),
    g.op1('Unsqueeze', `${m}/Unsqueeze_1`, [queryIdx, g.int64([1])]),
  ]);
  const keep = g.op1('Unsqueeze', `${m}/Unsqueeze_2`, [
    g.op1('Cast', `${m}/Cast`, ['attention_mask'], { to: DataType.BOOL }),
    g.int64([1, 2]),
  ]);
  let visible = g.op1('And', `${m}/And`, [causal, keep]);
  if (features.segmentIds) {
    // Key segments [B, 1, 1, T]; query segments are the last S of them, repeated for the head
    // groups as the rows are ([B, 1, group * S, 1]).
    const p = '/model/segment_mask';
    const keySeg = g.op1('Unsqueeze', `${p}/Unsqueeze`, [SEGMENT_IDS_INPUT, g.int64([1, 2])]);
    const querySeg = g.op1('Slice', `${p}/Slice`, [SEGMENT_IDS_INPUT, pastLen, totalLen, g.int64([1])]);
    const querySegRows = g.op1('Unsqueeze', `${p}/Unsqueeze_1`, [queryRows(p, querySeg, 2), g.int64([1, 3])]);
    const shared = g.op1('Equal', `${p}/Equal`, [keySeg, i64(0)]);
    const own = g.op1('Equal', `${p}/Equal_1`, [keySeg, querySegRows]);
    visible = g.op1('And', `${p}/And`, [visible, g.op1('Or', `${p}/Or`, [shared, own])]);
  }
  // As an additive bias (0 where visible, the lowest finite float elsewhere), built once: every
  // layer then adds it to its scores. A per-layer Where over [B, heads, S, T] is a large share of
  // the attention time on long states (docs/benchmark.md, "Where the time goes"); an Add is a
  // fraction of that, with the same results.
  // The fused op takes its bias in the compute dtype (FLOAT16_MASK in fp16).
  const biasDtype: FloatDtype = fused ? dtype : 'fp32';
  const lowest = g.float(biasDtype, [biasDtype === 'fp16' ? FLOAT16_MASK : FLOAT32_LOWEST], []);
  const zero = g.float(biasDtype, [0], []);
  const maskBias = g.op1('Where', `${m}/Where`, [visible, zero, lowest]);

  // The sliding-window variant. Distances are between positions, not cache indices (padding may sit
  // between a row's tokens): a query's position is its position_id, a key's the number of unmasked
  // keys before it, since the engine numbers a row's tokens consecutively and masks the padding.
  let slidingBias: string | undefined;
  if (features.slidingWindow) {
    if (features.slidingWindow.layers.length !== shape.numLayers) throw new Error('decoder graph: slidingWindow.layers must have one entry per layer');
    const w = '/model/sliding_mask';
    let keyPos = g.op1('Sub', `${w}/Sub`, [g.op1('CumSum', `${w}/CumSum`, ['attention_mask', i64(1)]), i64(1)]);
    if (features.segmentIds) {
      // In a packed row the new tokens are not numbered consecutively: each question's positions
      // restart at the state's length, so counting unmasked keys would place a later question's
      // keys after the earlier questions'. The new keys' positions are their position_ids (a padded
      // slot's is irrelevant: it is masked). The past holds one state, never a packed question, so
      // counting its unmasked keys still gives their positions, with masked padding anywhere in it.
      const pastPos = g.op1('Slice', `${w}/Slice`, [keyPos, g.int64([0]), pastLen, g.int64([1])]);
      keyPos = g.op1('Concat', `${w}/Concat`, [pastPos, 'position_ids'], { axis: 1 });
    }
    const queryPos = queryRows(w, 'position_ids', 2);
    const distance = g.op1('Sub', `${w}/Sub_1`, [
      g.op1('Unsqueeze', `${w}/Unsqueeze`, [queryPos, g.int64([1, 3])]),
      g.op1('Unsqueeze', `${w}/Unsqueeze_1`, [keyPos, g.int64([1, 2])]),
    ]);
    const inWindow = g.op1('Less', `${w}/Less`, [distance, i64(features.slidingWindow.size)]);
    slidingBias = g.op1('Where', `${w}/Where`, [g.op1('And', `${w}/And`, [visible, inWindow]), zero, lowest]);
  }

  // Only the standard-op attention scales its queries (the fused op applies the same 1 / sqrt(head_dim)).
  const scale = fused ? '' : g.float(dtype, [1 / Math.sqrt(hd)], []);
  const halfSplit = fused ? '' : g.int64([hd / 2, hd / 2]);

  const rotary = (prefix: string, x: string): string => {
    const [x1, x2] = g.op('Split', `${prefix}/Split`, [x, halfSplit], { axis: -1 }, 2) as [string, string];
    const rotated = g.op1('Concat', `${prefix}/Concat`, [g.op1('Neg', `${prefix}/Neg`, [x2]), x1], { axis: -1 });
    const a = g.op1('Mul', `${prefix}/Mul`, [x, cos]);
    const b = g.op1('Mul', `${prefix}/Mul_1`, [rotated, sin]);
    return g.op1('Add', `${prefix}/Add`, [a, b]);
  };

  /** The MLP gate activation, in the compute dtype as torch applies it. */
  const activation = (prefix: string, x: string): string => {
    if (features.activation === 'silu') return g.op1('Mul', `${prefix}/Mul`, [x, g.op1('Sigmoid', `${prefix}/Sigmoid`, [x])]);
    return geluNodes(g, dtype, features.activation, prefix, x);
  };

  /** Attention from standard ops: `q` [B, heads, S, hd] against the present KV; returns [B, S, heads * hd]. */
  const opsAttention = (a: string, q: string, presentK: string, presentV: string, layerBias: string): string => {
    const qScaled = g.op1('Mul', `${a}/Mul`, [q, scale]);
    const qGrouped = g.op1('Reshape', `${a}/Reshape_3`, [qScaled, g.int64([0, kvh, -1, hd])]);
    const kT = g.op1('Transpose', `${a}/Transpose_3`, [presentK], { perm: [0, 1, 3, 2] });
    const scores = toFloat(`${a}/Cast`, g.op1('MatMul', `${a}/MatMul`, [qGrouped, kT]));
    const masked = g.op1('Add', `${a}/Add_mask`, [scores, layerBias]);
    const probs = toCompute(`${a}/Cast_1`, g.op1('Softmax', `${a}/Softmax`, [masked], { axis: -1 }));
    const ctx = g.op1('MatMul', `${a}/MatMul_1`, [probs, presentV]);
    const ctxHeads = g.op1('Reshape', `${a}/Reshape_4`, [ctx, g.int64([0, nh, -1, hd])]);
    const ctxSeq = g.op1('Transpose', `${a}/Transpose_4`, [ctxHeads], { perm: [0, 2, 1, 3] });
    return g.op1('Reshape', `${a}/Reshape_5`, [ctxSeq, g.int64([0, 0, nh * hd])]);
  };

  const layerBias = (i: number) => (slidingBias !== undefined && features.slidingWindow!.layers[i] ? slidingBias : maskBias);

  // causalStates: what every layer's split needs, computed once from shapes (on the CPU) and the mask.
  let stateSplit: StateSplit | undefined;
  if (features.causalStates) {
    const c = '/model/state_split';
    const stateLen = g.op1('Shape', `${c}/Shape`, [STATE_SPAN_INPUT]);
    const newLen = g.op1('Shape', `${c}/Shape_1`, ['input_ids'], { start: 1, end: 2 });
    const questionLen = g.op1('Sub', `${c}/Sub`, [newLen, stateLen]);
    // The split runs when the pass has no past and both parts are non-empty.
    const noPast = g.op1('Equal', `${c}/Equal`, [pastLen, g.int64([0])]);
    const someState = g.op1('Greater', `${c}/Greater`, [stateLen, g.int64([0])]);
    const someQuestions = g.op1('Greater', `${c}/Greater_1`, [questionLen, g.int64([0])]);
    const all = g.op1('And', `${c}/And_1`, [g.op1('And', `${c}/And`, [noPast, someState]), someQuestions]);
    const condition = g.op1('Squeeze', `${c}/Squeeze`, [all, axis0]);
    // The questions' bias rows: those of tokens [Ls, S).
    const questionBias = g.op1('Slice', `${c}/Slice_1`, [maskBias, stateLen, g.int64([2 ** 62]), g.int64([2])]);
    const sizes = g.op1('Concat', `${c}/Concat`, [stateLen, questionLen], { axis: 0 });
    stateSplit = { condition, questionBias, sizes };
  }
  for (let i = 0; i < (fused ? 0 : shape.numLayers); i++) {
    const p = `/model/layers.${i}`;
    const a = `${p}/self_attn`;
    const w = `model.layers.${i}`;

    const normed = rmsNorm(`${p}/input_layernorm`, hidden, weight(`${w}.input_layernorm.weight`, [h], ones));
    const projectHeads = (proj: string, heads: number, tag: string, norm?: string): string => {
      const y = linear(`${a}/${proj}`, normed, `${w}.self_attn.${proj}`, [h, heads * hd], features.qkvBias);
      let split = g.op1('Reshape', `${a}/Reshape${tag}`, [y, g.int64([0, 0, heads, hd])]);
      if (norm !== undefined) split = rmsNorm(`${a}/${norm}`, split, weight(`${w}.self_attn.${norm}.weight`, [hd], ones));
      return g.op1('Transpose', `${a}/Transpose${tag}`, [split], { perm: [0, 2, 1, 3] });
    };
    const qkNorm = (name: string) => (features.qkNorm ? name : undefined);
    const q = rotary(`${a}/rotary_q`, projectHeads('q_proj', nh, '', qkNorm('q_norm')));
    const k = rotary(`${a}/rotary_k`, projectHeads('k_proj', kvh, '_1', qkNorm('k_norm')));
    const v = projectHeads('v_proj', kvh, '_2');

    const presentK = g.op1('Concat', `${a}/Concat_k`, [pastKeyName(i), k], { axis: 2 }, presentKeyName(i));
    const presentV = g.op1('Concat', `${a}/Concat_v`, [pastValueName(i), v], { axis: 2 }, presentValueName(i));

    const ctxFlat = opsAttention(a, q, presentK, presentV, layerBias(i));
    const attnOut = linear(`${a}/o_proj`, ctxFlat, `${w}.self_attn.o_proj`, [nh * hd, h], features.oBias);
    hidden = g.op1('Add', `${p}/Add`, [hidden, attnOut]);

    const normed2 = rmsNorm(`${p}/post_attention_layernorm`, hidden, weight(`${w}.post_attention_layernorm.weight`, [h], ones));
    const mlp = `${p}/mlp`;
    const inter = shape.intermediateSize;
    const gate = linear(`${mlp}/gate_proj`, normed2, `${w}.mlp.gate_proj`, [h, inter], features.mlpBias);
    const act = activation(`${mlp}/act_fn`, gate);
    const up = linear(`${mlp}/up_proj`, normed2, `${w}.mlp.up_proj`, [h, inter], features.mlpBias);
    const prod = g.op1('Mul', `${mlp}/Mul`, [act, up]);
    const down = linear(`${mlp}/down_proj`, prod, `${w}.mlp.down_proj`, [inter, h], features.mlpBias);
    hidden = g.op1('Add', `${p}/Add_1`, [hidden, down]);
  }

  const finalNorm = fused
    ? buildFusedLayers({
        g,
        shape,
        dtype,
        features,
        embeddings: hidden,
        weight: (decl) => {
          weights.push(decl);
          return decl.name;
        },
        matmul: (b, node, x, w, dims) => matmulIn(b, node, x, w, dims, int8?.kernel),
        layerBias,
        ...(stateSplit === undefined ? {} : { stateSplit }),
        pastKey: pastKeyName,
        pastValue: pastValueName,
        presentKey: presentKeyName,
        presentValue: presentValueName,
        finalNormOutput: LM_HEAD_INPUT,
        invFreq: invFreqValues,
      })
    : rmsNorm('/model/norm', hidden, weight('model.norm.weight', [h], ones));
  if (finalNorm !== LM_HEAD_INPUT) throw new Error(`decoder graph: final norm output is ${finalNorm}, expected ${LM_HEAD_INPUT}`);
  const headInit: WeightInit = shape.tieWordEmbeddings
    ? { kind: 'transposeOf', source: embed }
    : { kind: 'normal', std: LOGIT_STD / Math.sqrt(h) };
  matmul(LM_HEAD_NODE, finalNorm, weight(LM_HEAD_WEIGHT, [h, vocab], headInit), [h, vocab], int8?.lmHead, 'logits');

  return {
    graph: { name: 'main_graph', node: g.nodes, initializer: g.initializers, input: inputs, output: outputs },
    weights,
    quantized,
    nodesPerLayer: countNodesPerLayer(g.nodes, shape.numLayers),
    opset: g.opset,
  };
}

/**
 * The node count of the largest layer: nodes are named /model/layers.<i>/... (the torch-export
 * convention). What a run may launch: a layer's node holding subgraphs (an If's branches) counts as
 * its larger branch's nodes; any other node holding subgraphs adds, for each layer, that layer's
 * nodes in its larger branch.
 */
export function countNodesPerLayer(nodes: readonly NodeProto[], numLayers: number): number {
  return Math.max(0, ...layerCounts(nodes, numLayers));
}

function layerCounts(nodes: readonly NodeProto[], numLayers: number): number[] {
  const counts = new Array<number>(numLayers).fill(0);
  for (const node of nodes) {
    const branches = (node.attribute ?? []).filter((a) => a.g != null).map((a) => a.g!.node ?? []);
    const layer = /^\/model\/layers\.(\d+)\//.exec(node.name ?? '');
    if (layer) {
      counts[Number(layer[1])]! += branches.length > 0 ? Math.max(...branches.map((b) => b.length)) : 1;
    } else if (branches.length > 0) {
      const inBranches = branches.map((b) => layerCounts(b, numLayers));
      for (let i = 0; i < numLayers; i++) counts[i]! += Math.max(...inBranches.map((c) => c[i]!));
    }
  }
  return counts;
}
