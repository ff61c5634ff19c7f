export { makeModel, hfConfig, int8Record, EXTERNAL_DATA_THRESHOLD, GRAPH_VERSION, type MakeModelOptions, type MadeModel } from './make-model.js';
export { PRESETS, paramCount, validateShape, type ModelShape, type ParamCount } from './presets.js';
export {
  buildDecoderGraph,
  DEFAULT_FEATURES,
  LM_HEAD_NODE,
  LM_HEAD_INPUT,
  LM_HEAD_WEIGHT,
  DIM_BATCH,
  DIM_SEQUENCE,
  DIM_PAST,
  DIM_TOTAL,
  SEGMENT_IDS_INPUT,
  STATE_SPAN_INPUT,
  pastKeyName,
  pastValueName,
  presentKeyName,
  presentValueName,
  type DecoderGraph,
  type DecoderFeatures,
  type WeightDecl,
  type WeightInit,
} from './decoder-graph.js';
export { float16ToFloat32, float32ToFloat16, type FloatDtype } from './onnx-writer.js';
export { readQwen3TokenizerFiles, readSpecialTokenIds, writeTokenizerFiles } from './tokenizer-files.js';
export {
  computeDtype,
  DEFAULT_INT8_SCHEME,
  MODEL_DTYPES,
  type Int8Kernel,
  type Int8Scheme,
  type ModelDtype,
} from './quantize.js';
