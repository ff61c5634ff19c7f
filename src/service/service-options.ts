/**
 * DecisionService.open()'s options: what each one is, and the check that refuses options no
 * service can run with (EngineError ERR_INPUT naming the option) before anything is created or
 * loaded, as Engine.load and the commands refuse theirs.
 */

import { VALIDATION_LIMIT_RANGES, type ValidationLimits } from '../api/validate.js';
import { folderOf, MODELS_FOLDER } from '../support/env-path.js';
import { checkEngineOptions, ENGINE_PASS_OPTION_NAMES, optionConflict, withEnvironment, type EngineLoadOptions } from '../engine/engine-options.js';
import { checkBooleanOption, checkFolderOption, checkOptionNames, objectOption, refuseOption as refuse, valueForMessage } from '../support/option-checks.js';
import { EngineError } from '../errors/engine-error.js';
import { deriveFusedGraph } from '../models/fused-graph.js';
import { directoryProblem } from '../models/make-directories.js';
import type { ModelRuntimeOptions } from '../runtime/model-runtime.js';
import { checkSchedulerOptions } from '../runtime/scheduler.js';
import { statIfExists } from '../support/stat-if-exists.js';

/**
 * How {@link DecisionService.open} opens the service; every field is optional.
 * @example
 * const svc = await DecisionService.open({ modelsDir: '/srv/models', preload: ['svc-alpha'], threads: 4 });
 */
export interface DecisionServiceOptions {
  /** Where model directories live; default DECIDE_MODELS_DIR (that variable unset or empty: ./models). An empty modelsDir is refused (ERR_INPUT), as an empty --models-dir is. */
  modelsDir?: string;
  /** Create the embedded default model (random weights) when missing; default true. */
  ensureDefaultModel?: boolean;
  /** Model ids or aliases loaded by open(); default [DEFAULT_MODEL_ALIAS] ('svc-alpha') when installed. */
  preload?: string[];
  /**
   * Create the default model and load `preload` after open() returns rather than before (default
   * false): a server can answer its probes meanwhile. The calls that need a model wait for that
   * work, and throw its error if it failed; whenPreloaded() settles when it is done.
   */
  preloadInBackground?: boolean;
  provider?: 'cpu' | 'cuda';
  threads?: number;
  /** Upper bound on state tokens; default DEFAULT_MAX_STATE_TOKENS (8,192). */
  maxStateTokens?: number;
  /** Request limits over DEFAULT_VALIDATION_LIMITS; each a whole number in VALIDATION_LIMIT_RANGES. */
  validation?: Partial<ValidationLimits>;
  runtime?: ModelRuntimeOptions;
  log?: (line: string) => void;
  /** What an operator should act on (an int8 path forced, int8 weights that saturate here); default `log`. */
  warn?: (line: string) => void;
}

/** Whose options the messages name. */
const WHERE = 'DecisionService.open';

/** DecisionServiceOptions' names, and those of its `runtime`: anything else is a typo. */
const SERVICE_OPTION_NAMES: ReadonlyArray<keyof DecisionServiceOptions> = [
  'modelsDir', 'ensureDefaultModel', 'preload', 'preloadInBackground', 'provider', 'threads', 'maxStateTokens', 'validation', 'runtime', 'log', 'warn',
];
const RUNTIME_OPTION_NAMES: ReadonlyArray<keyof ModelRuntimeOptions> = ['engine', 'scheduler', 'maxStateTokens'];

/**
 * The engine options every model of the service loads with (the runtime's own win over threads
 * and provider). deriveFusedGraph: a CUDA engine runs the fused graph of a standard-op model
 * (fusedAttention).
 */
export function engineOptionsOf(options: DecisionServiceOptions): Omit<EngineLoadOptions, 'modelDir'> {
  return { provider: options.provider, threads: options.threads, graphDeriver: deriveFusedGraph, ...options.runtime?.engine };
}

/**
 * Refuses options no service can run with (ERR_INPUT naming the option), before anything is
 * created or loaded: options of the wrong type, unknown names, engine options (with their
 * DECIDE_* variables), scheduler options and validation limits out of range, a models folder that
 * cannot be. Returns the models folder, resolved.
 */
export function checkServiceOptions(given: unknown): string {
  const options = objectOption(given, 'options', WHERE) as DecisionServiceOptions;
  checkOptionNames(options, SERVICE_OPTION_NAMES, WHERE);
  checkTypes(options);
  const modelsDir = folderOf(MODELS_FOLDER, options.modelsDir);
  if (options.runtime !== undefined) checkOptionNames(objectOption(options.runtime, 'runtime', WHERE), RUNTIME_OPTION_NAMES, `${WHERE}: runtime`);
  if (options.runtime?.engine !== undefined) checkOptionNames(objectOption(options.runtime.engine, 'runtime.engine', WHERE), ENGINE_PASS_OPTION_NAMES, `${WHERE}: runtime.engine`);
  if (options.runtime?.scheduler !== undefined) checkSchedulerOptions(objectOption(options.runtime.scheduler, 'runtime.scheduler', WHERE), 'runtime.scheduler');
  if (options.validation !== undefined) checkValidationLimits(objectOption(options.validation, 'validation', WHERE));
  const engine = withEnvironment(engineOptionsOf(options));
  checkEngineOptions(engine);
  const conflict = optionConflict(engine);
  if (conflict !== undefined) throw new EngineError('ERR_INPUT', `options.${conflict}`);
  for (const [name, value] of [['maxStateTokens', options.maxStateTokens], ['runtime.maxStateTokens', options.runtime?.maxStateTokens]] as const) {
    if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
      throw new EngineError('ERR_INPUT', `${name} must be a whole number of tokens of at least 1, got ${valueForMessage(value)}`);
    }
  }
  let folder;
  try {
    folder = statIfExists(modelsDir);
  } catch (err) {
    // A loop of links, no permission to look: the option's fault. (A path through a file is not
    // there, and is refused below as a folder that cannot be made.)
    throw new EngineError('ERR_INPUT', `modelsDir ${modelsDir} cannot be used: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (folder !== undefined && !folder.isDirectory()) {
    throw new EngineError('ERR_INPUT', `modelsDir ${modelsDir} is not a folder (it holds one folder per model)`);
  }
  // Where the default model would be created, the folder must be one that can be.
  const problem = folder === undefined && (options.ensureDefaultModel ?? true) ? directoryProblem(modelsDir) : undefined;
  if (problem !== undefined) throw new EngineError('ERR_INPUT', `modelsDir: ${problem}`);
  return modelsDir;
}

/** The options that are not engine, scheduler or limit numbers (those have their own checks). */
function checkTypes(options: DecisionServiceOptions): void {
  const { modelsDir, ensureDefaultModel, preload, preloadInBackground, log, warn } = options as Record<keyof DecisionServiceOptions, unknown>;
  if (modelsDir !== undefined) checkFolderOption(modelsDir, 'modelsDir', WHERE);
  checkBooleanOption(ensureDefaultModel, 'ensureDefaultModel', WHERE);
  checkBooleanOption(preloadInBackground, 'preloadInBackground', WHERE);
  if (preload !== undefined) {
    if (!Array.isArray(preload)) refuse(WHERE, 'preload', 'an array of model ids or aliases', preload);
    preload.forEach((id: unknown, i) => {
      if (typeof id !== 'string' || id === '') refuse(WHERE, `preload[${i}]`, 'a model id or alias', id);
    });
  }
  if (log !== undefined && typeof log !== 'function') refuse(WHERE, 'log', 'a function taking a line', log);
  if (warn !== undefined && typeof warn !== 'function') refuse(WHERE, 'warn', 'a function taking a line', warn);
}

/**
 * Unknown limit names and values outside VALIDATION_LIMIT_RANGES: a NaN or a string would turn a
 * limit off (every comparison with it is false), a negative one would refuse every request.
 */
function checkValidationLimits(validation: Partial<ValidationLimits>): void {
  checkOptionNames(validation, Object.keys(VALIDATION_LIMIT_RANGES), `${WHERE}: validation`);
  for (const [name, { min, max }] of Object.entries(VALIDATION_LIMIT_RANGES)) {
    const value: unknown = validation[name as keyof ValidationLimits];
    if (value !== undefined && !(typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max)) {
      const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
      throw new EngineError('ERR_INPUT', `validation.${name} must be a whole number ${range}, got ${valueForMessage(value)}`);
    }
  }
}
