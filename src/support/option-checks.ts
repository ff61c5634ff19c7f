/**
 * The refusals every library options object shares (createServer's, DecisionService.open's,
 * Engine.load's, the scheduler's, makeModel's, importModel's): objectOption, checkOptionNames,
 * refuseOption, and one per kind of option: checkFolderOption, checkBooleanOption,
 * checkChoiceOption, checkFunctionOption. Each is EngineError ERR_INPUT naming whose option it is
 * (`where`), the option and the value given. The engine's own kinds of option value (integers in a
 * range, path prefixes, ...) and their readings of flags and variables are
 * src/engine/option-checks.ts.
 */
import { EngineError } from '../errors/engine-error.js';

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
  if (value !== undefined && !(typeof value === 'string' && values.includes(value))) refuseOption(where, name, choiceRule(values), value);
}

/** One of `values` in words, as messages, --help and the docs write it: "fp32, fp16 or int8". */
export function choiceRule(values: readonly string[]): string {
  return `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
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
