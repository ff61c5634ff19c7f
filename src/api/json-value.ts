/**
 * What kind of JSON value a client sent, for every validator that reads one (each dialect, batch
 * lines and batch creation), and what a model's JSON files hold (decision.json's calibration,
 * safetensors headers): one definition, so a value is an object to all of them or to none.
 */

/**
 * A JSON object: not null, not an array, and a plain object (what JSON.parse makes; a library
 * caller's class instance or Map is not one).
 */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** A JSON value's type in words, for messages: 'null', 'array', or typeof. */
export function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/**
 * A value a client sent (or left out), shown in a message: a string quoted (its first 100
 * characters), 'nothing' for a missing field (never JavaScript's `undefined`), else its JSON type.
 */
export function shownValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (typeof v === 'string') return JSON.stringify(v.slice(0, 100));
  return jsonType(v) === 'array' ? 'an array' : jsonType(v);
}

/** An unpaired UTF-16 surrogate: JSON's \ud800 escape without its partner decodes to one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether `s` holds a lone surrogate: not Unicode text, and not writable as UTF-8 (an answer keyed
 * by it could not be read back by any UTF-8 client).
 */
export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE.test(s);
}
