/**
 * The FLOP accounting of the benchmark: the model's shape from its config.json, the model FLOPs of
 * a run (2 x params x tokens, see MFU_DEFINITION) and the MFU against the measured peak.
 */
import type { ModelShape } from '../src/models/builder/index.js';

export const MFU_DEFINITION =
  'MFU = model FLOPs / wall time / measured peak. Model FLOPs = 2 x (body params x tokens computed + LM-head params x decisions). ' +
  'Body params: the transformer layers and final norm (embedding excluded: it is a lookup). Tokens computed: real tokens run through the ' +
  'body (engine: prefix tokens not served from the prefix cache + every suffix token; baseline: every row\'s full prefix + suffix), padding ' +
  'excluded. LM-head params (hidden x vocab) count once per decision: both systems gather one position per row before the LM head. ' +
  'Attention score FLOPs (QK^T, softmax, PV) are not counted, as in the usual 2·N·D accounting; they grow with context, so long states ' +
  'lower the MFU of both systems. Peak: MatMul throughput of ONNX Runtime in the model\'s float type (fp32, or fp16 with --dtype fp16) on this machine at the same threads (bench/peak.ts): the best ' +
  'median of two shapes measured at the start, and of the short probes taken right before every timed run (on a shared machine the ' +
  'capacity drifts; the probes show it, and the best of them is the machine\'s limit).';

/** Model FLOPs: 2 x (body params x tokens computed + LM-head params x decisions). */
export function modelFlops(bodyParams: number, headFlopParams: number, tokensComputed: number, decisions: number): number {
  return 2 * (bodyParams * tokensComputed + headFlopParams * decisions);
}

/** Model FLOPs utilization of `flops` done in `seconds` on a machine of `peakGflops`. */
export function mfu(flops: number, seconds: number, peakGflops: number): number {
  return flops / seconds / (peakGflops * 1e9);
}

export function shapeOf(raw: Record<string, unknown>): ModelShape {
  const n = (key: string) => Number(raw[key]);
  return {
    numLayers: n('num_hidden_layers'),
    hiddenSize: n('hidden_size'),
    numHeads: n('num_attention_heads'),
    numKvHeads: n('num_key_value_heads'),
    headDim: n('head_dim'),
    intermediateSize: n('intermediate_size'),
    vocabSize: n('vocab_size'),
    maxPositionEmbeddings: n('max_position_embeddings'),
    ropeTheta: n('rope_theta'),
    rmsNormEps: n('rms_norm_eps'),
    tieWordEmbeddings: raw.tie_word_embeddings === true,
  };
}

