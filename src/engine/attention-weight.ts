/** The pass cost model's number from the model's shape (its formula: native/pass_planner.h). */
import type { ModelConfig } from './model-dir.js';

/**
 * Attention FLOPs per (query token, key position) relative to the body FLOPs of one token:
 * QK^T and PV cost 4 x heads x head_dim per key and layer, the body 2 x its parameters. The
 * native pass planner uses it to weigh padded past positions when it splits rows into passes.
 */
export function attentionWeight(config: ModelConfig): number {
  const { numLayers: layers, hiddenSize: hidden, numHeads: heads, numKvHeads: kvHeads, headDim } = config;
  const intermediate = typeof config.raw.intermediate_size === 'number' ? config.raw.intermediate_size : 4 * hidden;
  const body = layers * (2 * hidden * heads * headDim + 2 * hidden * kvHeads * headDim + 3 * hidden * intermediate);
  return (4 * heads * headDim * layers) / (2 * body);
}
