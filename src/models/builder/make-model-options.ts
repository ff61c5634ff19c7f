/**
 * The check of makeModel()'s options, before anything is written: a JavaScript caller can pass
 * anything, and an option name makeModel does not know (`segmentIds: true` beside `features`
 * instead of inside it, a typo) would otherwise be ignored and a model without it written. Refusals
 * are EngineError ERR_INPUT naming the option, as Engine.load's and DecisionService.open's are.
 */
import { EngineError } from '../../errors/engine-error.js';
import {
  checkBooleanOption,
  checkChoiceOption,
  checkFolderOption,
  checkFunctionOption,
  checkOptionNames,
  objectOption,
  refuseOption,
} from '../../support/option-checks.js';
import { causalStatesConflict, ownKernelsConflict, type DecoderFeatures } from './decoder-features.js';
import type { Int8Scheme, ModelDtype } from './dtypes.js';
import { PRESETS, type ModelShape } from './presets.js';
import { MODEL_DTYPES } from './quantize.js';

/** makeModel()'s options (declared here, beside their check; make-model.ts re-exports them). */
export interface MakeModelOptions {
  /** A key of PRESETS: 'tiny', 'small' or 'qwen3-0.6b'. */
  preset: string;
  outDir: string;
  /** Default 0. Same (preset, seed, dtype, shapeOverrides) => byte-identical files. */
  seed?: number;
  /**
   * 'fp16' stores fp16 weights and makes the graph compute and exchange fp16, as an Optimum fp16
   * export. 'int8' stores the projection, MLP and LM-head weights as int8 with per-column scales
   * (quantize.ts) and computes in fp32; its weights before quantization are the fp32 model's of the
   * same seed (its "fp32 twin").
   */
  dtype?: ModelDtype;
  /** With dtype 'int8': how (default DEFAULT_INT8_SCHEME; the other kernel is there to be measured). */
  int8?: Partial<Int8Scheme>;
  shapeOverrides?: Partial<ModelShape>;
  /** Store weights in onnx/model.onnx_data. Default 'auto': only when they exceed EXTERNAL_DATA_THRESHOLD bytes. */
  externalData?: boolean | 'auto';
  /** Graph features beyond the preset's (e.g. `segmentIds` for multi-item packing); the weights are the same. */
  features?: Partial<DecoderFeatures>;
  /**
   * Replace a model directory at outDir that make-model or import-model wrote (not a dated, pinned
   * id; output-dir.ts). Default false: an existing model is refused.
   */
  force?: boolean;
  /** Called after each weight tensor is written. */
  onProgress?: (writtenParams: number, totalParams: number) => void;
  /**
   * Runs on the finished model in its staging directory, before it is put in place (the CLI's int8
   * agreement check): when it throws, nothing is written at outDir.
   */
  beforePlacing?: (stagedDir: string) => Promise<void>;
}

/** Whose options the messages name. */
const WHERE = 'makeModel';

/** Every name of each options object, spelled out so that the compiler keeps the lists whole. */
const OPTION_NAMES = Object.keys({
  preset: true, outDir: true, seed: true, dtype: true, int8: true, shapeOverrides: true, externalData: true, features: true,
  force: true, onProgress: true, beforePlacing: true,
} satisfies Record<keyof MakeModelOptions, true>);
const FEATURE_NAMES = Object.keys({
  qkNorm: true, qkvBias: true, oBias: true, mlpBias: true, normStyle: true, embeddingScale: true, activation: true, invFreq: true,
  slidingWindow: true, segmentIds: true, attention: true, causalStates: true, ownKernels: true,
} satisfies Record<keyof DecoderFeatures, true>);
const SHAPE_NAMES = Object.keys({
  numLayers: true, hiddenSize: true, numHeads: true, numKvHeads: true, headDim: true, intermediateSize: true, vocabSize: true,
  maxPositionEmbeddings: true, ropeTheta: true, rmsNormEps: true, tieWordEmbeddings: true,
} satisfies Record<keyof ModelShape, true>);
const INT8_NAMES = Object.keys({ kernel: true, lmHead: true, block: true } satisfies Record<keyof Int8Scheme, true>);

/**
 * Refuses options makeModel cannot build from (ERR_INPUT naming the option): not an object, an
 * unknown name (in the options or in features, shapeOverrides, int8), a preset, seed, dtype, outDir
 * or force of the wrong kind, features.causalStates without the fused graph or with a sliding
 * window, features.ownKernels without the fused graph. The shape itself is validateShape's to check.
 */
export function checkMakeModelOptions(given: unknown): asserts given is MakeModelOptions {
  const opts = objectOption(given, 'options', WHERE) as Record<keyof MakeModelOptions, unknown>;
  checkOptionNames(opts, OPTION_NAMES, WHERE);
  for (const [name, known] of [['features', FEATURE_NAMES], ['shapeOverrides', SHAPE_NAMES], ['int8', INT8_NAMES]] as const) {
    if (opts[name] !== undefined) checkOptionNames(objectOption(opts[name], name, WHERE), known, `${WHERE}: ${name}`);
  }
  if (typeof opts.preset !== 'string' || !Object.hasOwn(PRESETS, opts.preset)) {
    refuseOption(WHERE, 'preset', `one of ${Object.keys(PRESETS).join(', ')}`, opts.preset);
  }
  checkFolderOption(opts.outDir, 'outDir', WHERE);
  if (opts.seed !== undefined && !(typeof opts.seed === 'number' && Number.isSafeInteger(opts.seed) && opts.seed >= 0)) {
    refuseOption(WHERE, 'seed', 'a non-negative integer', opts.seed);
  }
  checkChoiceOption(opts.dtype, MODEL_DTYPES, 'dtype', WHERE);
  if (opts.externalData !== undefined && typeof opts.externalData !== 'boolean' && opts.externalData !== 'auto') {
    refuseOption(WHERE, 'externalData', "true, false or 'auto'", opts.externalData);
  }
  checkBooleanOption(opts.force, 'force', WHERE);
  const conflict = causalStatesConflict((opts.features ?? {}) as Record<string, unknown>);
  if (conflict === 'attention') throw new EngineError('ERR_INPUT', `${WHERE}: features.causalStates: true needs features.attention: 'fused'`);
  if (conflict === 'sliding-window') throw new EngineError('ERR_INPUT', `${WHERE}: features.causalStates: true does not take a sliding window`);
  if (ownKernelsConflict((opts.features ?? {}) as Record<string, unknown>) === 'attention') {
    throw new EngineError('ERR_INPUT', `${WHERE}: features.ownKernels: true needs features.attention: 'fused'`);
  }
  checkFunctionOption(opts.onProgress, 'onProgress', WHERE);
  checkFunctionOption(opts.beforePlacing, 'beforePlacing', WHERE);
}
