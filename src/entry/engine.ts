/**
 * `decision-engine/engine`: the token-level engine alone (the native addon over ONNX Runtime) and
 * the tokenizer. Loads neither the decision service nor the HTTP server.
 */
export {
  Engine,
  type EngineLoadOptions,
  type ScoreGroup,
  type ScoreSuffix,
  type SuffixScore,
  type ScoreBatchResult,
  type EngineCounters,
  type EngineInfo,
  type AttentionChoice,
  type GraphDeriver,
} from '../engine/engine.js';
export { EngineError, type EngineErrorCode } from '../errors/engine-error.js';
// What derives a standard-op model's fused graph for Engine.load's fusedAttention (graphDeriver).
export { deriveFusedGraph } from '../models/fused-graph.js';
export { TextTokenizer } from '../runtime/tokenizer.js';
