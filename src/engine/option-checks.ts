/**
 * The kinds of value an engine option takes, and the three readings of each: a library value
 * checked as given, a text (a `decide` flag or a DECIDE_* variable) parsed, and the rule in words
 * for error messages, --help and the docs. ENGINE_OPTIONS (engine-options.ts) names one per option.
 * Also the refusals every library options object shares (objectOption, checkOptionNames, refuseOption,
 * and one per kind of option: checkFolderOption, checkBooleanOption, checkChoiceOption, checkFunctionOption).
 */
import { statSync } from 'node:fs';
import path from 'node:path';

import { EngineError } from '../errors/engine-error.js';

export type OptionCheck =
  | { kind: 'integer'; min: number; max: number }
  /** A number of at least `min`; Infinity allowed (what it means is the option's own). */
  | { kind: 'number'; min: number }
  | { kind: 'boolean' }
  | { kind: 'choice'; values: readonly string[] }
  /** A non-empty path. */
  | { kind: 'path' }
  /**
   * A file name prefix whose folder exists: the file is written only when the engine closes, so a
   * mistyped folder would otherwise lose it without a word.
   */
  | { kind: 'prefix' };

export type OptionValue = number | boolean | string;

/** The rule in words: "an integer from 1 to 1024", "on or off", "cpu or cuda", ... */
export function ruleOf(check: OptionCheck): string {
  switch (check.kind) {
    case 'integer':
      return check.max === Number.MAX_SAFE_INTEGER ? `an integer of at least ${check.min}` : `an integer from ${check.min} to ${check.max}`;
    case 'number':
      return `a number of at least ${check.min}, or Infinity`;
    case 'boolean':
      return 'on or off';
    case 'choice':
      return `${check.values.slice(0, -1).join(', ')} or ${check.values.at(-1)}`;
    case 'path':
      return 'a non-empty path';
    case 'prefix':
      return 'a path prefix in a folder that exists';
  }
}

/** The value's placeholder in a usage line: N, X, on|off, cpu|cuda, PATH. */
export function placeholderOf(check: OptionCheck): string {
  switch (check.kind) {
    case 'integer':
      return 'N';
    case 'number':
      return 'X';
    case 'boolean':
      return 'on|off';
    case 'choice':
      return check.values.join('|');
    case 'path':
    case 'prefix':
      return 'PATH';
  }
}

/** Whether a library value (Engine.load's options) passes the check. */
export function accepts(check: OptionCheck, value: unknown): boolean {
  switch (check.kind) {
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value) && value >= check.min && value <= check.max;
    case 'number':
      return typeof value === 'number' && !Number.isNaN(value) && value >= check.min;
    case 'boolean':
      return typeof value === 'boolean';
    case 'choice':
      return typeof value === 'string' && check.values.includes(value);
    case 'path':
      return typeof value === 'string' && value !== '';
    case 'prefix':
      return typeof value === 'string' && value !== '' && statSync(prefixFolder(value), { throwIfNoEntry: false })?.isDirectory() === true;
  }
}

/** The value a text stands for (a flag's or a variable's), or undefined when the check refuses it. */
export function parseText(check: OptionCheck, text: string): OptionValue | undefined {
  const t = text.trim();
  let value: OptionValue | undefined;
  switch (check.kind) {
    case 'integer':
      value = /^\d+$/.test(t) ? Number(t) : undefined;
      break;
    case 'number':
      value = /^(?:\d+(?:\.\d*)?|\.\d+)(?:e\d+)?$/i.test(t) ? Number(t) : /^infinity$/i.test(t) ? Number.POSITIVE_INFINITY : undefined;
      break;
    case 'boolean':
      value = t === 'on' || t === 'true' ? true : t === 'off' || t === 'false' ? false : undefined;
      break;
    case 'choice':
    case 'path':
    case 'prefix':
      value = t;
      break;
  }
  return value !== undefined && accepts(check, value) ? value : undefined;
}

/** A value as a flag or the docs write it: on/off for booleans. */
export function showValue(value: OptionValue): string {
  return typeof value === 'boolean' ? (value ? 'on' : 'off') : String(value);
}

/** The folder a prefix's files go in: the prefix itself when it ends with a separator (`dir/`). */
function prefixFolder(prefix: string): string {
  return /[\\/]$/.test(prefix) ? prefix : path.dirname(path.resolve(prefix));
}

/**
 * `value` as an options object (createServer's, DecisionService.open's, one of their nested ones),
 * or ERR_INPUT naming it: null, an array or a scalar holds no options.
 */
export function objectOption(value: unknown, name: string, where: string): object {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuseOption(where, name, 'an object', value);
  return value;
}

/**
 * Refuses an options object that names an option not in `known` (ERR_INPUT, `where` says whose):
 * a typo such as `thread` would otherwise be ignored and the default used.
 */
export function checkOptionNames(given: object, known: readonly string[], where: string): void {
  for (const key of Object.keys(given)) {
    if (known.includes(key)) continue;
    const lower = key.toLowerCase();
    const near = known.find((n) => n.toLowerCase().startsWith(lower) || lower.startsWith(n.toLowerCase()));
    throw new EngineError('ERR_INPUT', `${where}: unknown option '${key.slice(0, 100)}'${near ? ` (did you mean '${near}'?)` : ''}`);
  }
}

/** An optional true/false option: absent, or a boolean, or ERR_INPUT naming it. */
export function checkBooleanOption(value: unknown, name: string, where: string): void {
  if (value !== undefined && typeof value !== 'boolean') refuseOption(where, name, 'true or false', value);
}

/** An optional option that takes one of `values`: absent, or one of them, or ERR_INPUT naming it and them ("fp32, fp16 or int8"). */
export function checkChoiceOption(value: unknown, values: readonly string[], name: string, where: string): void {
  const check: OptionCheck = { kind: 'choice', values };
  if (value !== undefined && !accepts(check, value)) refuseOption(where, name, ruleOf(check), value);
}

/** An optional callback (onProgress, beforePlacing, ...): absent, or a function, or ERR_INPUT naming it. */
export function checkFunctionOption(value: unknown, name: string, where: string): void {
  if (value !== undefined && typeof value !== 'function') refuseOption(where, name, 'a function', value);
}

/** ERR_INPUT for a library option of the wrong type or range: `<where>: <name> must be <rule>, got <value>`. */
export function refuseOption(where: string, name: string, rule: string, value: unknown): never {
  throw new EngineError('ERR_INPUT', `${where}: ${name} must be ${rule}, got ${valueForMessage(value)}`);
}

/** A value as a message shows it: strings quoted (and cut), arrays, objects and functions by kind. */
export function valueForMessage(value: unknown): string {
  if (typeof value === 'string') return `'${value.slice(0, 100)}'`;
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}

/**
 * A folder option (modelsDir, dataDir): a string that names one. An empty one is refused, as the
 * commands refuse an empty --models-dir: path.resolve('') is the current directory, where a model
 * or a batch database would otherwise be written.
 */
export function checkFolderOption(value: unknown, name: string, where: string): void {
  if (typeof value !== 'string') refuseOption(where, name, 'a path (a string)', value);
  if (value.trim() === '') throw new EngineError('ERR_INPUT', `${where}: ${name} must name a folder, got an empty value`);
}
