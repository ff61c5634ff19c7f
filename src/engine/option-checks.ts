/**
 * The kinds of value an engine option takes, and the three readings of each: a library value
 * checked as given, a text (a `decide` flag or a DECIDE_* variable) parsed, and the rule in words
 * for error messages, --help and the docs. ENGINE_OPTIONS (engine-options.ts) names one per option.
 * The refusals every library options object shares, the engine's included, are
 * src/support/option-checks.ts.
 */
import path from 'node:path';

import { choiceRule } from '../support/option-checks.js';
import { statIfExists } from '../support/stat-if-exists.js';

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
      return choiceRule(check.values);
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
      return typeof value === 'string' && value !== '' && statIfExists(prefixFolder(value))?.isDirectory() === true;
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
