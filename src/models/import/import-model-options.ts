/**
 * The check of importModel()'s options, before the checkpoint is read or anything written: a
 * JavaScript caller can pass anything, and an option name importModel does not know (a typo, or
 * one of makeModel's such as `features`) would otherwise be ignored and a model without it written.
 * Refusals are EngineError ERR_INPUT naming the option, as makeModel's (make-model-options.ts) are;
 * problems of the checkpoint itself are ImportError (ERR_MODEL_IMPORT), found later.
 */
import { EngineError } from '../../errors/engine-error.js';
import {
  checkBooleanOption,
  checkChoiceOption,
  checkFolderOption,
  checkFunctionOption,
  checkOptionNames,
  objectOption,
} from '../../support/option-checks.js';
import { causalStatesConflict, ownKernelsConflict } from '../builder/decoder-features.js';
import { MODEL_DTYPES } from '../builder/quantize.js';
import type { ModelDtype } from '../builder/dtypes.js';

/** importModel()'s options (declared here, beside their check; import-model.ts re-exports them). */
export type ImportDtype = ModelDtype | 'bf16';

export interface ImportModelOptions {
  /** The Hugging Face checkpoint folder. */
  hfDir: string;
  /** The model directory to write; it must not exist yet (or be empty) unless `force`. */
  outDir: string;
  /**
   * Weight and compute type of the graph; default 'fp32'. 'bf16' is refused (see bf16Unsupported).
   * 'int8': projection, MLP and LM-head weights stored as int8 with scales, computed in fp32
   * (make-model's DEFAULT_INT8_SCHEME; docs/models.md, int8 weights).
   */
  dtype?: ImportDtype;
  /** Replace an existing model directory at outDir (atomically). */
  force?: boolean;
  /**
   * Write the graph with multi-item packing (DecoderFeatures.segmentIds: the decide_segment_ids
   * input, docs/models.md); default PACKED_IMPORTS_BY_DEFAULT.
   */
  segmentIds?: boolean;
  /**
   * 'fused' writes each layer from fused ops, its attention as ONNX's Attention (DecoderFeatures.attention,
   * docs/models.md "Fused attention"); default 'ops', standard ONNX ops.
   */
  attention?: 'ops' | 'fused';
  /** With attention 'fused': DecoderFeatures.causalStates (docs/models.md). Default false. */
  causalStates?: boolean;
  /** With attention 'fused': DecoderFeatures.ownKernels, the engine's own operators (docs/models.md). Default false. */
  ownKernels?: boolean;
  /**
   * Runs on the finished model in its staging directory, before it is put in place (the CLI's int8
   * agreement check): when it throws, nothing is written at outDir and the import can be retried.
   */
  beforePlacing?: (stagedDir: string) => Promise<void>;
  /** Called with a line for each warning (default: none are printed). */
  onWarning?: (message: string) => void;
  /** Called after each weight tensor is written. */
  onProgress?: (writtenParams: number, totalParams: number) => void;
}

/** Whose options the messages name. */
const WHERE = 'importModel';

/** Every option name, spelled out so that the compiler keeps the list whole. */
const OPTION_NAMES = Object.keys({
  hfDir: true, outDir: true, dtype: true, force: true, segmentIds: true, attention: true, causalStates: true, ownKernels: true,
  beforePlacing: true, onWarning: true, onProgress: true,
} satisfies Record<keyof ImportModelOptions, true>);
/** The graphs ImportModelOptions.attention names. */
const ATTENTION_GRAPHS: readonly NonNullable<ImportModelOptions['attention']>[] = ['ops', 'fused'];

/**
 * Why a bf16 graph is refused, naming the types to use instead as the caller writes them
 * (`--dtype fp16` for the command, `dtype: 'fp16'` for the library).
 */
export function bf16Unsupported(dtypeTerm: (dtype: string) => string): string {
  return (
    'bf16 output is not supported: ONNX Runtime CPU has no bfloat16 MatMul/attention kernels, so a bf16 graph cannot run on the ' +
    `CPU provider. Use ${dtypeTerm('fp16')} (the same size on disk; bf16 weights convert to fp16 exactly only within its range: ` +
    'magnitudes above 65504 become infinite, and below ~6.1e-5 (fp16 subnormals) they lose precision, reaching 0 below ~6e-8) ' +
    `or ${dtypeTerm('fp32')} (the default, exact for bf16 checkpoints)`
  );
}

/**
 * Refuses options importModel cannot import with (ERR_INPUT naming the option): not an object, an
 * unknown name, an hfDir or outDir that is not a path, a dtype (bf16 with the reason), attention,
 * force, segmentIds, causalStates, ownKernels or callback of the wrong kind, causalStates or ownKernels
 * without the fused graph.
 */
export function checkImportModelOptions(given: unknown): asserts given is ImportModelOptions {
  const opts = objectOption(given, 'options', WHERE) as Record<keyof ImportModelOptions, unknown>;
  checkOptionNames(opts, OPTION_NAMES, WHERE);
  checkFolderOption(opts.hfDir, 'hfDir', WHERE);
  checkFolderOption(opts.outDir, 'outDir', WHERE);
  if (opts.dtype === 'bf16') throw new EngineError('ERR_INPUT', `${WHERE}: dtype 'bf16': ${bf16Unsupported((d) => `dtype: '${d}'`)}`);
  checkChoiceOption(opts.dtype, MODEL_DTYPES, 'dtype', WHERE);
  checkChoiceOption(opts.attention, ATTENTION_GRAPHS, 'attention', WHERE);
  for (const name of ['force', 'segmentIds', 'causalStates', 'ownKernels'] as const) checkBooleanOption(opts[name], name, WHERE);
  // The causal kernel exists only in the fused graph (a checkpoint's sliding window is found later).
  if (causalStatesConflict(opts) === 'attention') {
    throw new EngineError('ERR_INPUT', `${WHERE}: causalStates: true needs attention: 'fused'`);
  }
  if (ownKernelsConflict(opts) === 'attention') throw new EngineError('ERR_INPUT', `${WHERE}: ownKernels: true needs attention: 'fused'`);
  for (const name of ['beforePlacing', 'onWarning', 'onProgress'] as const) checkFunctionOption(opts[name], name, WHERE);
}
