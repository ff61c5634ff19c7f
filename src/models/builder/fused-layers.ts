/**
 * The decoder layers of a graph built with DecoderFeatures.attention 'fused': ONNX Runtime's
 * com.microsoft contrib ops and ONNX's Attention, 14 to 20 nodes per layer instead of ~48, so that
 * a GPU run pays far fewer node launches. Inputs, outputs and mask semantics are the standard-op
 * graph's (decoder-graph.ts); only the layers differ.
 *
 * One layer (20 nodes for Qwen3; 14 without q/k norms, one more per bias):
 *   SkipSimplifiedLayerNormalization   residual + the previous layer's output, then RMSNorm
 *   MatMul x 3                         q, k and v projections (each + Add with a bias): no packed
 *                                      projection, whose Split would copy every activation again
 *   Reshape, SimplifiedLayerNormalization, Reshape   the q norm (rows of head_dim), then the k norm
 *   RotaryEmbedding x 2                q, then k
 *   Attention                          ONNX's (opset 23), q_num_heads / kv_num_heads: grouped KV
 *                                      heads as stored, past_key/past_value in, present = past ++ new
 *                                      out as the graph's presents (no Concat), the mask as attn_mask
 *   MatMul                             output projection
 *   SkipSimplifiedLayerNormalization   residual + attention (+ o bias), then RMSNorm
 *   MatMul, MatMul, QuickGelu, Mul, MatMul   gate and up, SiLU(gate) * up, down
 * The last layer's output goes through the final norm as one more SkipSimplifiedLayerNormalization.
 *
 * With DecoderFeatures.ownKernels, the engine's own operators (src/engine/decide-ops.ts) take the
 * place of what ONNX Runtime has no single op for: one HeadNormRotary for the q and k norms and both
 * rotaries (the two Reshape / SimplifiedLayerNormalization / Reshape triples and the two
 * RotaryEmbeddings; a family without q/k norms has it rotate only), one SiluMul for QuickGelu and
 * Mul: 12 nodes per Qwen3 or Llama layer.
 *
 * Why ONNX's Attention: the engine's rows carry a past AND several new tokens with an arbitrary
 * mask (packed questions, padding). GroupQueryAttention refuses a batch of such rows ("batch_size
 * must be 1 when sequence_length > 1 and past context is given", group_query_attention_helper.h,
 * shared by ORT's CPU and CUDA kernels). com.microsoft MultiHeadAttention takes such a batch but has
 * no kv_num_heads: grouped heads then need the query heads folded into the row axis, a Reshape on
 * each side of it (18 nodes per Qwen3 layer). ONNX's Attention takes any batch, a past, an additive
 * mask and grouped KV heads, with CPU and CUDA kernels in ONNX Runtime 1.30 (on CUDA, fp16 runs the
 * memory-efficient kernel with the KV heads expanded in scratch; fp32 an unfused kernel). What it
 * returns for a query that sees no key at all (a padding slot) is unspecified but finite; the engine
 * never reads it.
 *
 * With DecoderFeatures.causalStates the whole stack sits in one If: a pass split into states and
 * questions (StateSplit below) runs them as two streams through every layer, the states' attention
 * causal (is_causal, no mask: flash attention on CUDA) and the questions' over the states' KV as
 * their past with the mask; any other pass runs the layers above (docs/models.md).
 *
 * Rotary: ORT's RotaryEmbedding with cos/sin tables [max_position_embeddings, head_dim / 2] built
 * here in fp32 the way the standard-op graph computes its angles (fp32 position x fp32 inverse
 * frequency), then stored in the compute dtype as that graph casts them.
 */
import { DECIDE_OP_DOMAIN, HEAD_NORM_ROTARY, SILU_MUL } from '../../engine/decide-ops.js';
import { INIT_STD, type DecoderFeatures, type WeightDecl } from './decoder-features.js';
import { floatAttr, floatElemType, floatTensor, makeValueInfo, MS_DOMAIN, type FloatDtype, type GraphBuilder } from './onnx-writer.js';
import { geluNodes } from './gelu.js';
import type { ModelShape } from './presets.js';
import type { PartInit, WeightAssembly, WeightPart } from './weight-parts.js';

/**
 * DecoderFeatures.causalStates: the values the state/question split reads (decoder-graph.ts computes
 * them). When `condition` holds (no past, a state part and a question part), the embeddings and
 * positions are split by `sizes` into the state tokens [0, Ls) and the question tokens, and every
 * layer runs the states through causal Attention (no mask) and the questions through Attention with
 * `questionBias` (the mask's rows of those tokens) over the states' KV as past plus their own; else
 * the layers run as without the split.
 */
export interface StateSplit {
  condition: string;
  questionBias: string;
  /** [Ls, S - Ls], the sizes of the two parts along the sequence axis. */
  sizes: string;
}

/** Above this many rows x head_dim / 2 values a rotary table is refused (2^24: 64 MB per table in fp32). */
export const MAX_ROTARY_TABLE = 2 ** 24;

export interface FusedLayersContext {
  g: GraphBuilder;
  shape: ModelShape;
  dtype: FloatDtype;
  features: DecoderFeatures;
  /** The embeddings [B, S, hidden] (scaled where the family scales them). */
  embeddings: string;
  /** Declares a weight and returns its name. */
  weight(decl: WeightDecl): string;
  /** x @ W for a projection weight (an int8 kernel when the graph quantizes it), its nodes in `b`. */
  matmul(b: GraphBuilder, node: string, x: string, w: string, dims: [number, number]): string;
  /** The additive mask bias of layer i ([B, 1, S, T]). */
  layerBias(layer: number): string;
  /** DecoderFeatures.causalStates: the split's inputs. */
  stateSplit?: StateSplit;
  pastKey(layer: number): string;
  pastValue(layer: number): string;
  presentKey(layer: number): string;
  presentValue(layer: number): string;
  /** The name the final norm's output must have (the LM head reads it). */
  finalNormOutput: string;
  /** fp32 rotary inverse frequencies, head_dim / 2 of them. */
  invFreq: readonly number[];
}

/**
 * One run of tokens through the layers: a whole pass, or in a split pass (DecoderFeatures.causalStates)
 * its state part or its question part, each a tensor of its own from the embeddings to the final norm.
 */
interface Stream {
  /** The (sub)graph its nodes go to. */
  b: GraphBuilder;
  /** Put after `/model/layers.<i>` (and `/model`) in its node names: '' for a whole pass. */
  tag: string;
  positions: string;
  /** [B, L, heads * head_dim] and [B, L, kv_heads * head_dim]: where the q and k norms' rows go back to (q/k norms only). */
  queryShape: string;
  keyShape: string;
  residual: string;
  /** The previous sublayer's output, added to the residual by the next norm. */
  pending: string;
  pendingBias: string;
}

/** Builds every layer and the final norm; returns the final norm's output. */
export function buildFusedLayers(ctx: FusedLayersContext): string {
  const { g, shape, dtype, features } = ctx;
  const { hiddenSize: h, numHeads: nh, numKvHeads: kvh, headDim: hd, intermediateSize: inter } = shape;
  const eps = floatAttr(shape.rmsNormEps);
  const normal: PartInit = { kind: 'normal', std: INIT_STD };
  const zeros: PartInit = { kind: 'zeros' };
  const offset = features.normStyle === 'onePlusWeight' ? 1 : undefined;

  // A split graph reads each weight from up to three places (the whole pass's layers and both
  // streams of a split pass); it is declared once.
  const declared = new Set<string>();
  const weight = (decl: WeightDecl): string => {
    if (!declared.has(decl.name)) {
      declared.add(decl.name);
      ctx.weight(decl);
    }
    return decl.name;
  };
  const assembled = (name: string, dims: number[], assembly: WeightAssembly): string => weight({ name, dims, init: zeros, assembly });
  const single = (part: WeightPart): string =>
    part.offset === undefined ? weight({ name: part.name, dims: part.dims, init: part.init }) : assembled(part.name, part.dims, { parts: [part], axis: 1 });
  const normWeightOf = (name: string, size: number) => single({ name, dims: [size], init: { kind: 'ones' }, ...(offset === undefined ? {} : { offset }) });
  const normWeight = (name: string) => normWeightOf(name, h);
  /** x @ `<name>.weight` (+ `<name>.bias`), its nodes named `<node>/MatMul` (and `<node>/Add`). */
  const project = (b: GraphBuilder, node: string, x: string, name: string, dims: [number, number], withBias: boolean): string => {
    const out = ctx.matmul(b, `${node}/MatMul`, x, single({ name: `${name}.weight`, dims, init: normal }), dims);
    if (!withBias) return out;
    return b.op1('Add', `${node}/Add`, [out, weight({ name: `${name}.bias`, dims: [dims[1]], init: zeros })]);
  };

  // The engine's own operators where the layer has what they fuse (DecoderFeatures.ownKernels).
  const ownHeadNorm = features.ownKernels === true && hd <= HEAD_NORM_ROTARY.maxHeadDim;
  const ownSiluMul = features.ownKernels === true && features.activation === 'silu';

  // Rotary tables, built once for all layers and streams.
  const rows = shape.maxPositionEmbeddings;
  if (rows * (hd / 2) > MAX_ROTARY_TABLE) {
    throw new Error(`fused attention: a rotary table of ${rows} positions x ${hd / 2} is too large (max_position_embeddings ${rows}); use --attention ops`);
  }
  const cosValues = new Float32Array(rows * (hd / 2));
  const sinValues = new Float32Array(rows * (hd / 2));
  const invFreq = ctx.invFreq.map((f) => Math.fround(f));
  for (let p = 0; p < rows; p++) {
    for (let k = 0; k < hd / 2; k++) {
      const angle = Math.fround(Math.fround(p) * invFreq[k]!);
      cosValues[p * (hd / 2) + k] = Math.cos(angle);
      sinValues[p * (hd / 2) + k] = Math.sin(angle);
    }
  }
  const cos = '/model/rotary_emb/cos_cache';
  const sin = '/model/rotary_emb/sin_cache';
  g.addInitializer(floatTensor(cos, dtype, [rows, hd / 2], cosValues));
  g.addInitializer(floatTensor(sin, dtype, [rows, hd / 2], sinValues));
  // HeadNormRotary's scale for a family without q/k norms (it then only rotates).
  const unitScale = '/model/rotary_emb/unit_scale';
  if (ownHeadNorm && !features.qkNorm) g.addInitializer(floatTensor(unitScale, dtype, [hd], new Float32Array(hd).fill(1)));

  const stream = (b: GraphBuilder, tag: string, embeddings: string, positions: string): Stream => {
    // The q and k heads, normed as rows of head_dim, go back to [B, L, heads * head_dim] for
    // RotaryEmbedding: its CUDA kernel launches a block per (head, token, row) with the rows on the
    // grid's z axis (at most 65535), so the batch axis must stay the rows, not the tokens of a pass.
    let queryShape = '';
    let keyShape = '';
    if (features.qkNorm && !ownHeadNorm) {
      const r = `/model/rotary_emb${tag}`;
      const batchAndLength = b.op1('Shape', `${r}/Shape`, [positions]);
      queryShape = b.op1('Concat', `${r}/Concat_q`, [batchAndLength, b.int64([nh * hd])], { axis: 0 });
      keyShape = b.op1('Concat', `${r}/Concat_k`, [batchAndLength, b.int64([kvh * hd])], { axis: 0 });
    }
    return { b, tag, positions, queryShape, keyShape, residual: embeddings, pending: '', pendingBias: '' };
  };

  const skipNorm = (s: Stream, node: string, w: string, output?: string): string => {
    if (s.pending === '') {
      return s.b.op1('SimplifiedLayerNormalization', node, [s.residual, w], { axis: -1, epsilon: eps }, output);
    }
    const outs = s.b.op('SkipSimplifiedLayerNormalization', node, [s.residual, s.pending, w, ...(s.pendingBias ? [s.pendingBias] : [])], { epsilon: eps }, [output ?? `${node}_output_0`, '', '', `${node}_output_3`], MS_DOMAIN);
    s.residual = outs[3]!;
    return outs[0]!;
  };

  /** Layer i up to the attention: the input norm, the q, k and v projections, the q/k norms and rotary. */
  const attentionInputs = (s: Stream, i: number): { query: string; key: string; value: string } => {
    const { b } = s;
    const p = `/model/layers.${i}${s.tag}`;
    const a = `${p}/self_attn`;
    const w = `model.layers.${i}`;
    const normed = skipNorm(s, `${p}/input_layernorm/SkipSimplifiedLayerNormalization`, normWeight(`${w}.input_layernorm.weight`));
    // q, k and v as three projections, not one packed projection and a Split: on CUDA, ONNX Runtime's
    // Split copies what it splits (with gate/up, 14% of a GPU-size call's kernel time on an H200),
    // while three GEMMs of one input took what the packed one did.
    const projection = (name: string, width: number) => project(b, `${a}/${name}`, normed, `${w}.self_attn.${name}`, [h, width], features.qkvBias);
    let query = projection('q_proj', nh * hd); // [B, L, heads * head_dim]
    let key = projection('k_proj', kvh * hd);
    const value = projection('v_proj', kvh * hd);
    if (ownHeadNorm) {
      // Both norms (where the family has them) and both rotaries in one node, on [B, L, heads * head_dim]
      // as the projections give them; without q/k norms it scales by 1 and does not normalize.
      const scale = (name: string) => (features.qkNorm ? normWeightOf(`${w}.self_attn.${name}.weight`, hd) : unitScale);
      const inputs = [query, key, scale('q_norm'), scale('k_norm'), s.positions, cos, sin];
      const attrs = { epsilon: eps, normalize: features.qkNorm ? 1 : 0 };
      const [q, k] = b.op(HEAD_NORM_ROTARY.opType, `${a}/head_norm_rotary/HeadNormRotary`, inputs, attrs, 2, DECIDE_OP_DOMAIN) as [string, string];
      return { query: q, key: k, value };
    }
    if (features.qkNorm) {
      // Each head normed as a row of head_dim: [B, L, heads * head_dim] -> [B * L, heads, head_dim] and back.
      const headNorm = (name: string, x: string, heads: number, shapeBack: string): string => {
        const headRows = b.op1('Reshape', `${a}/${name}/Reshape`, [x, b.int64([-1, heads, hd])]);
        const scale = normWeightOf(`${w}.self_attn.${name}.weight`, hd);
        const normedRows = b.op1('SimplifiedLayerNormalization', `${a}/${name}/SimplifiedLayerNormalization`, [headRows, scale], { axis: -1, epsilon: eps });
        return b.op1('Reshape', `${a}/${name}/Reshape_1`, [normedRows, shapeBack]);
      };
      query = headNorm('q_norm', query, nh, s.queryShape);
      key = headNorm('k_norm', key, kvh, s.keyShape);
    }
    const rotary = (node: string, x: string) => b.op1('RotaryEmbedding', node, [x, s.positions, cos, sin], {}, undefined, MS_DOMAIN);
    query = rotary(`${a}/rotary_q/RotaryEmbedding`, query);
    key = rotary(`${a}/rotary_k/RotaryEmbedding`, key);
    return { query, key, value };
  };

  /** Layer i after the attention: the output projection, the post-attention norm and the MLP. */
  const finishLayer = (s: Stream, i: number, context: string): void => {
    const { b } = s;
    const p = `/model/layers.${i}${s.tag}`;
    const w = `model.layers.${i}`;
    const oWeight = single({ name: `${w}.self_attn.o_proj.weight`, dims: [nh * hd, h], init: normal });
    s.pending = ctx.matmul(b, `${p}/self_attn/o_proj/MatMul`, context, oWeight, [nh * hd, h]);
    s.pendingBias = features.oBias ? weight({ name: `${w}.self_attn.o_proj.bias`, dims: [h], init: zeros }) : '';

    const normed = skipNorm(s, `${p}/post_attention_layernorm/SkipSimplifiedLayerNormalization`, normWeight(`${w}.post_attention_layernorm.weight`));
    const m = `${p}/mlp`;
    // Gate and up as two projections, not one packed projection and a Split (as q, k and v above).
    const gate = project(b, `${m}/gate_proj`, normed, `${w}.mlp.gate_proj`, [h, inter], features.mlpBias);
    const up = project(b, `${m}/up_proj`, normed, `${w}.mlp.up_proj`, [h, inter], features.mlpBias);
    const product = ownSiluMul
      ? b.op1(SILU_MUL.opType, `${m}/SiluMul`, [gate, up], {}, undefined, DECIDE_OP_DOMAIN)
      : b.op1('Mul', `${m}/Mul`, [activation(b, features, dtype, `${m}/act_fn`, gate), up]);
    s.pending = ctx.matmul(b, `${m}/down_proj/MatMul`, product, weight({ name: `${w}.mlp.down_proj.weight`, dims: [inter, h], init: normal }), [inter, h]);
    s.pendingBias = features.mlpBias ? weight({ name: `${w}.mlp.down_proj.bias`, dims: [h], init: zeros }) : '';
  };

  const finalNorm = (s: Stream, output?: string): string => skipNorm(s, `/model${s.tag}/norm/SkipSimplifiedLayerNormalization`, normWeight('model.norm.weight'), output);

  /** ONNX's Attention (opset 23) over past ++ new with the mask: grouped KV heads, no fold, no Concat. */
  const attend = (b: GraphBuilder, node: string, q: string, k: string, v: string, bias: string, past: [string, string], outputs: [string, string, string]): string[] =>
    b.op('Attention', node, [q, k, v, bias, past[0], past[1]], { q_num_heads: nh, kv_num_heads: kvh }, outputs);

  /** Every layer over the whole pass (its attention over past ++ new with the mask); the presents named by `present`. */
  const wholePass = (b: GraphBuilder, present: (i: number) => [string, string], output: string): string => {
    const s = stream(b, '', ctx.embeddings, 'position_ids');
    for (let i = 0; i < shape.numLayers; i++) {
      const { query, key, value } = attentionInputs(s, i);
      const a = `/model/layers.${i}/self_attn`;
      const [context] = attend(b, `${a}/Attention`, query, key, value, ctx.layerBias(i), [ctx.pastKey(i), ctx.pastValue(i)], [`${a}/Attention_output_0`, ...present(i)]) as [string];
      finishLayer(s, i, context);
    }
    return finalNorm(s, output);
  };

  const split = ctx.stateSplit;
  if (split === undefined) return wholePass(g, (i) => [ctx.presentKey(i), ctx.presentValue(i)], ctx.finalNormOutput);

  // Causal states: one If over the whole stack. A pass split into states and questions runs them as
  // two streams, split once after the embeddings and joined once after the final norm, so no layer
  // copies its activations into or out of parts (an If per layer around the attention alone needed
  // Splits of q, k and v and a Concat of the context in every layer: copies on CUDA). The cost is
  // twice the nodes per layer in that branch, each over part of the tokens.
  const info = (name: string, dims: (number | string)[]) => makeValueInfo(name, floatElemType(dtype), dims);
  const branchOutputs = (prefix: string) => [
    info(`${prefix}/norm_output`, ['batch_size', 'sequence_length', h]),
    ...Array.from({ length: shape.numLayers }, (_, i) => [
      info(`${prefix}/present.${i}.key`, ['batch_size', kvh, 'total_sequence_length', hd]),
      info(`${prefix}/present.${i}.value`, ['batch_size', kvh, 'total_sequence_length', hd]),
    ]).flat(),
  ];
  const presentsOf = (prefix: string) => (i: number): [string, string] => [`${prefix}/present.${i}.key`, `${prefix}/present.${i}.value`];
  const t = '/model/states_and_questions';
  const e = '/model/whole';
  const splitBranch = g.subgraph(t, branchOutputs(t), (b) => {
    const c = '/model/state_split';
    const [stateEmbeddings, questionEmbeddings] = b.op('Split', `${c}/Split_embeddings`, [ctx.embeddings, split.sizes], { axis: 1 }, 2) as [string, string];
    const [statePositions, questionPositions] = b.op('Split', `${c}/Split_positions`, ['position_ids', split.sizes], { axis: 1 }, 2) as [string, string];
    const st = stream(b, '/states', stateEmbeddings, statePositions);
    const qs = stream(b, '/questions', questionEmbeddings, questionPositions);
    const presents: string[] = [];
    for (let i = 0; i < shape.numLayers; i++) {
      const sIn = attentionInputs(st, i);
      const qIn = attentionInputs(qs, i);
      // The states through Attention with is_causal and no mask, the questions through Attention
      // with their rows of the mask over the states' KV and their own: the questions' present is the
      // layer's (states ++ questions). A row's state tokens sit at [0, its length) with any padding
      // after them, so a causal state token sees only its own row's real tokens; what a padding
      // token computes is never read (the questions' mask hides its keys). Without a mask ONNX
      // Runtime's CUDA Attention runs flash attention, which skips the causally hidden blocks.
      const sa = `/model/layers.${i}/states/self_attn`;
      const [stateContext, stateKey, stateValue] = b.op('Attention', `${sa}/Attention`, [sIn.query, sIn.key, sIn.value], { q_num_heads: nh, kv_num_heads: kvh, is_causal: 1 }, 3) as [string, string, string];
      const qa = `/model/layers.${i}/questions/self_attn`;
      const [questionContext] = attend(b, `${qa}/Attention`, qIn.query, qIn.key, qIn.value, split.questionBias, [stateKey, stateValue], [`${qa}/Attention_output_0`, ...presentsOf(t)(i)]) as [string];
      presents.push(...presentsOf(t)(i));
      finishLayer(st, i, stateContext);
      finishLayer(qs, i, questionContext);
    }
    const joined = b.op1('Concat', `${t}/Concat`, [finalNorm(st), finalNorm(qs)], { axis: 1 }, `${t}/norm_output`);
    return [joined, ...presents];
  });
  const wholeBranch = g.subgraph(e, branchOutputs(e), (b) => {
    const output = wholePass(b, presentsOf(e), `${e}/norm_output`);
    return [output, ...Array.from({ length: shape.numLayers }, (_, i) => presentsOf(e)(i)).flat()];
  });
  const outputs = [ctx.finalNormOutput, ...Array.from({ length: shape.numLayers }, (_, i) => [ctx.presentKey(i), ctx.presentValue(i)]).flat()];
  return g.op('If', '/model/state_split/If', [split.condition], { then_branch: splitBranch, else_branch: wholeBranch }, outputs)[0]!;
}

/** The MLP's gate activation: SiLU as one QuickGelu (x * sigmoid(1.0 * x)); the GELUs as the standard-op graph writes them. */
function activation(g: GraphBuilder, features: DecoderFeatures, dtype: FloatDtype, prefix: string, x: string): string {
  if (features.activation === 'silu') return g.op1('QuickGelu', `${prefix}/QuickGelu`, [x], { alpha: floatAttr(1) }, undefined, MS_DOMAIN);
  return geluNodes(g, dtype, features.activation, prefix, x);
}
