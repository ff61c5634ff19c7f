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
} from '../engine/engine.js';
export { EngineError, type EngineErrorCode } from '../errors/engine-error.js';
export { TextTokenizer } from '../runtime/tokenizer.js';
