/**
 * DecisionService.open()'s options: what each one is, and the check that refuses options no
 * service can run with (EngineError ERR_INPUT naming the option) before anything is created or
 * loaded, as Engine.load and the commands refuse theirs.
 */
import { existsSync, statSync } from 'node:fs';

import { VALIDATION_LIMIT_RANGES, type ValidationLimits } from '../api/validate.js';
import { checkEngineOptions, checkOptionNames, ENGINE_PASS_OPTION_NAMES, optionConflict, withEnvironment, type EngineLoadOptions } from '../engine/engine-options.js';
import { EngineError } from '../errors/engine-error.js';
import { deriveFusedGraph } from '../models/fused-graph.js';
import type { ModelRuntimeOptions } from '../runtime/model-runtime.js';
import { checkSchedulerOptions } from '../runtime/scheduler.js';

/**
 * How {@link DecisionService.open} opens the service; every field is optional.
 * @example
 * const svc = await DecisionService.open({ modelsDir: '/srv/models', preload: ['svc-alpha'], threads: 4 });
 */
export interface DecisionServiceOptions {
  /** Where model directories live; default DECIDE_MODELS_DIR (unset or empty: ./models). */
  modelsDir?: string;
  /** Create the embedded default model (random weights) when missing; default true. */
  ensureDefaultModel?: boolean;
  /** Model ids or aliases loaded by open(); default [DEFAULT_MODEL_ALIAS] ('svc-alpha') when installed. */
  preload?: string[];
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

/** DecisionServiceOptions' names, and those of its `runtime`: anything else is a typo. */
const SERVICE_OPTION_NAMES: ReadonlyArray<keyof DecisionServiceOptions> = [
  'modelsDir', 'ensureDefaultModel', 'preload', 'provider', 'threads', 'maxStateTokens', 'validation', 'runtime', 'log', 'warn',
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
 * created or loaded: unknown names, engine options (with their DECIDE_* variables), scheduler
 * options and validation limits out of range.
 */
export function checkServiceOptions(options: DecisionServiceOptions, modelsDir: string): void {
  checkOptionNames(options, SERVICE_OPTION_NAMES, 'DecisionService.open');
  if (options.runtime !== undefined) checkOptionNames(options.runtime, RUNTIME_OPTION_NAMES, 'DecisionService.open: runtime');
  if (options.runtime?.engine !== undefined) checkOptionNames(options.runtime.engine, ENGINE_PASS_OPTION_NAMES, 'DecisionService.open: runtime.engine');
  if (options.runtime?.scheduler !== undefined) checkSchedulerOptions(options.runtime.scheduler, 'runtime.scheduler');
  if (options.validation !== undefined) checkValidationLimits(options.validation);
  const engine = withEnvironment(engineOptionsOf(options));
  checkEngineOptions(engine);
  const conflict = optionConflict(engine);
  if (conflict !== undefined) throw new EngineError('ERR_INPUT', `options.${conflict}`);
  for (const [name, value] of [['maxStateTokens', options.maxStateTokens], ['runtime.maxStateTokens', options.runtime?.maxStateTokens]] as const) {
    if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
      throw new EngineError('ERR_INPUT', `${name} must be a whole number of tokens of at least 1, got ${String(value)}`);
    }
  }
  if (existsSync(modelsDir) && !statSync(modelsDir).isDirectory()) {
    throw new EngineError('ERR_INPUT', `modelsDir ${modelsDir} is not a folder (it holds one folder per model)`);
  }
}

/**
 * Unknown limit names and values outside VALIDATION_LIMIT_RANGES: a NaN or a string would turn a
 * limit off (every comparison with it is false), a negative one would refuse every request.
 */
function checkValidationLimits(validation: Partial<ValidationLimits>): void {
  checkOptionNames(validation, Object.keys(VALIDATION_LIMIT_RANGES), 'DecisionService.open: validation');
  for (const [name, { min, max }] of Object.entries(VALIDATION_LIMIT_RANGES)) {
    const value: unknown = validation[name as keyof ValidationLimits];
    if (value !== undefined && !(typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max)) {
      const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
      throw new EngineError('ERR_INPUT', `validation.${name} must be a whole number ${range}, got ${typeof value === 'string' ? `'${value.slice(0, 100)}'` : String(value)}`);
    }
  }
}
