/**
 * What kind of JSON value a client sent, for every validator that reads one (each dialect, batch
 * lines and batch creation): one definition, so a value is an object to all of them or to none.
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
