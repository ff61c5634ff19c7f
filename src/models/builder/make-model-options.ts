/**
 * The check of makeModel()'s options, before anything is written: a JavaScript caller can pass
 * anything, and an option name makeModel does not know (`segmentIds: true` beside `features`
 * instead of inside it, a typo) would otherwise be ignored and a model without it written. Refusals
 * are EngineError ERR_INPUT naming the option, as Engine.load's and DecisionService.open's are.
 */
import {
  checkBooleanOption,
  checkChoiceOption,
  checkFolderOption,
  checkFunctionOption,
  checkOptionNames,
  objectOption,
  refuseOption,
} from '../../support/option-checks.js';
import type { DecoderFeatures } from './decoder-features.js';
import type { Int8Scheme } from './dtypes.js';
import type { MakeModelOptions } from './make-model.js';
import { PRESETS, type ModelShape } from './presets.js';
import { MODEL_DTYPES } from './quantize.js';

/** Whose options the messages name. */
const WHERE = 'makeModel';

/** Every name of each options object, spelled out so that the compiler keeps the lists whole. */
const OPTION_NAMES = Object.keys({
  preset: true, outDir: true, seed: true, dtype: true, int8: true, shapeOverrides: true, externalData: true, features: true,
  force: true, onProgress: true, beforePlacing: true,
} satisfies Record<keyof MakeModelOptions, true>);
const FEATURE_NAMES = Object.keys({
  qkNorm: true, qkvBias: true, oBias: true, mlpBias: true, normStyle: true, embeddingScale: true, activation: true, invFreq: true,
  slidingWindow: true, segmentIds: true, attention: true, causalStates: true,
} satisfies Record<keyof DecoderFeatures, true>);
const SHAPE_NAMES = Object.keys({
  numLayers: true, hiddenSize: true, numHeads: true, numKvHeads: true, headDim: true, intermediateSize: true, vocabSize: true,
  maxPositionEmbeddings: true, ropeTheta: true, rmsNormEps: true, tieWordEmbeddings: true,
} satisfies Record<keyof ModelShape, true>);
const INT8_NAMES = Object.keys({ kernel: true, lmHead: true, block: true } satisfies Record<keyof Int8Scheme, true>);

/**
 * Refuses options makeModel cannot build from (ERR_INPUT naming the option): not an object, an
 * unknown name (in the options or in features, shapeOverrides, int8), a preset, seed, dtype, outDir
 * or force of the wrong kind. The shape itself is validateShape's to check.
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
  checkFunctionOption(opts.onProgress, 'onProgress', WHERE);
  checkFunctionOption(opts.beforePlacing, 'beforePlacing', WHERE);
}
