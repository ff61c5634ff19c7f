/**
 * JSON text from a client (a /v1/decide body, a batch line, the batch `questions` field) parsed
 * with two rules JSON.parse does not keep:
 * - The error message never quotes the text. V8's messages sometimes do (`Unexpected token 'x',
 *   "{"state": "secret…" is not valid JSON`); ours give only a position.
 * - A key given twice in one object is an error. JSON.parse keeps the last value silently, so a
 *   request with two questions of the same id would lose one without anyone noticing.
 * - Every object keeps the order its keys were written in (src/domain/key-order.ts): JavaScript
 *   lists integer-like keys ("0", "10") first, so criteria {"0", "1", "10", "2"} would reach the
 *   model as 0, 1, 2, 10. keysInOrder() and jsonInOrder() read the written order back.
 * - Every number keeps the text it was written with where a double would write it otherwise
 *   ("1.0", "1e2", an id of 20 digits): an object state reaches the model as the client wrote it.
 */
import { recordKeyOrder, recordNumberText } from '../domain/key-order.js';
import { ApiError } from './errors.js';
import { jsonSyntaxErrorOffset } from './json-syntax-error.js';
import { hasLoneSurrogate } from './json-value.js';


/**
 * On a failure inside the value, `path` says where, as the text writes it (`questions[0].choices[1].value`,
 * `questions.q.criteria.a`): the repeated key, or the string with a lone surrogate (for a key, its object).
 */
export type JsonTextResult =
  | { ok: true; value: unknown }
  /**
   * `value`: JSON.parse's reading (a repeated key's last value kept) when the text is JSON and only
   * a rule above refuses it; a caller may still read what lies away from `path`.
   */
  | { ok: false; reason: string; path?: string; value?: unknown };

/**
 * Parses `text`. On failure `reason` is a short sentence without any part of the text, such as
 * `not valid JSON (at line 1, column 9)` or `duplicate key "value" in questions[0].choices[1]`.
 * @example
 * const parsed = parseJsonText('{"a": 1, "a": 2}'); // { ok: false, reason: 'duplicate key "a"; ...', path: 'a' }
 */
export function parseJsonText(text: string): JsonTextResult {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `not valid JSON${syntaxErrorPlace(text, String((err as Error)?.message))}` };
  }
  // Only objects can repeat a key or have an order; a scalar body needs no scan.
  if (typeof value === 'object' && value !== null) {
    const scan = scanKeys(text);
    if (scan.duplicate) {
      const key = scan.duplicate.key.slice(0, 128);
      const where = pathOf(scan.duplicate.path);
      return {
        ok: false,
        reason: `duplicate key ${JSON.stringify(key)}${where ? ` in ${where}` : ''}; each key may appear once`,
        path: pathOf([...scan.duplicate.path, key]),
        value,
      };
    }
    if (scan.loneSurrogate) {
      const where = pathOf(scan.loneSurrogate.path);
      return {
        ok: false,
        reason: `a string${where ? ` in ${where}` : ''} holds a lone surrogate escape (\\ud800-\\udfff without its pair): not Unicode text, and not writable as UTF-8`,
        ...(where ? { path: where } : {}),
        value,
      };
    }
    // JavaScript keeps the written order of every object without an integer-like key, and the text
    // of every number a double writes back the same way.
    if (scan.indexKeys || scan.numbers) recordWrittenForm(value, scan.objects, scan.numbers);
  }
  return { ok: true, value };
}

/** A request body's text read as JSON; on failure `path`: where in the body, when the JSON itself is fine. */
export type JsonBody = { ok: true; value: unknown } | { ok: false; message: string; path?: string };

/**
 * A request body's text (a byte-order mark dropped) read as parseJsonText reads it, a failure worded
 * as the body's: what the HTTP doors and the library's decide(text) share.
 */
export function readJsonBodyText(text: string): JsonBody {
  const parsed = parseJsonText(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  if (parsed.ok) return parsed;
  return { ok: false, message: `request body: ${parsed.reason}`, ...(parsed.path === undefined ? {} : { path: parsed.path }) };
}

/** The error of a body that does not read as JSON; `field` is the place in the body, where one is known. */
export function unreadableBodyError(read: Extract<JsonBody, { ok: false }>): ApiError {
  return new ApiError('invalid_question', read.message, read.path === undefined ? {} : { field: read.path });
}

/**
 * Records each object's written key order and each number's written text. `objects[i]` holds the
 * keys of the i-th object opened in the text, `numbers[j]` the j-th number's text; a walk of the
 * parsed value in text order (an object's values in written key order, an array's items in order)
 * meets the objects and the numbers in the same order. Iterative: JSON.parse accepts nesting far
 * deeper than the call stack. Only what JavaScript would not keep is recorded.
 */
function recordWrittenForm(root: object, objects: ReadonlyArray<ReadonlySet<string>>, numbers: readonly string[] | undefined): void {
  let nextObject = 0;
  let nextNumber = 0;
  const stack: Array<[value: unknown, container: object, key: string]> = [[root, root, '']];
  while (stack.length > 0) {
    const [v, container, key] = stack.pop()!;
    if (typeof v === 'number') {
      const text = numbers?.[nextNumber++];
      if (text !== undefined && !writesAs(v, text)) recordNumberText(container, key, text);
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], v, String(i)]);
      continue;
    }
    const keys = [...objects[nextObject++]!];
    const own = Object.keys(v);
    if (own.some((k, i) => k !== keys[i])) recordKeyOrder(v, keys);
    const obj = v as Record<string, unknown>;
    for (let i = keys.length - 1; i >= 0; i--) stack.push([obj[keys[i]!], v, keys[i]!]);
  }
}

/** Whether JSON.stringify writes `value` as `text`; cheap for the common case (a short integer). */
function writesAs(value: number, text: string): boolean {
  if (text.length <= 15 && /^-?[1-9]?[0-9]*$/.test(text) && text !== '-0') return true;
  return JSON.stringify(value) === text;
}

/**
 * Where the error is, as ' (at line L, column C)', never any of the text: V8's position where its
 * message has one, else where jsonSyntaxErrorOffset() finds it (V8 names some tokens without a place).
 */
function syntaxErrorPlace(text: string, message: string): string {
  const at = /at position (\d+)/.exec(message);
  const position = at ? Math.min(Number(at[1]), text.length) : /Unexpected end of JSON input/.test(message) ? text.length : jsonSyntaxErrorOffset(text);
  if (position === -1) return '';
  if (position >= text.length && !at) return ' (it ends early)';
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < position; i = text.indexOf('\n', i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  return ` (at line ${line}, column ${position - lineStart + 1})`;
}

/** A step of a path: an object's key or an array's index (a number, so no string is made per step). */
type Step = string | number;

interface Container {
  /** The keys seen so far; null for an array. */
  keys: Set<string> | null;
  /** In an object: the next string is a key (after `{` or `,`). */
  expectKey: boolean;
  /** The last key read in this object: the name of a container that follows it. */
  lastKey: string;
  /** In an array: the index of the item being read (the commas seen so far at this level). */
  index: number;
  /** How the parent names this container: its key, or its index in an array. */
  name: Step;
}

/** `questions[0].choices[1]` for a path of steps (see scanKeys), "" at the top. */
function pathOf(steps: Step[]): string {
  return steps.map((step, i) => (typeof step === 'number' ? `[${step}]` : i === 0 ? step : `.${step}`)).join('');
}


/**
 * One pass over valid JSON text (JSON.parse accepted it), tracking only strings, brackets and
 * commas: the keys of every object in the order the objects open and the keys are written (a Set
 * keeps that order), whether any key is integer-like, and the first key that appears twice in one
 * object, or the first string with a lone surrogate escape, with the path of keys and array
 * indices to it (the scan stops there).
 */
function scanKeys(text: string): {
  /** The repeated key and the path of the object holding it. */
  duplicate?: { key: string; path: Step[] };
  /** A string with an unpaired surrogate escape: the path of a value or an array item, of the object for a key. */
  loneSurrogate?: { path: Step[] };
  objects: Array<Set<string>>;
  indexKeys: boolean;
  /** Every number's text in text order, when one of them is not as a double writes it back (else undefined). */
  numbers?: string[];
} {
  const objects: Array<Set<string>> = [];
  let indexKeys = false;
  // Start and end of every number, in text order.
  const numberBounds: number[] = [];
  let inexact = false;
  const stack: Container[] = [];
  // Only a string with a \u escape can decode to a lone surrogate (valid UTF-8 holds none).
  let nextEscape = text.indexOf('\\u');
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      // Outside a string, in valid JSON, a minus or a digit starts a number. Only its bounds are
      // kept; a short integer (most numbers) is written back as it is and needs no check.
      let end = i + 1;
      let digitsOnly = c !== 0x2d;
      for (let d = text.charCodeAt(end); end < text.length && isNumberChar(d); d = text.charCodeAt(++end)) {
        if (d < 0x30 || d > 0x39) digitsOnly = false;
      }
      numberBounds.push(i, end);
      if (!inexact && !(digitsOnly && end - i <= 15)) {
        const written = text.slice(i, end);
        inexact = !writesAs(Number(written), written);
      }
      i = end - 1;
    } else if (c === 0x22 /* " */) {
      const end = closingQuote(text, i);
      const top = stack[stack.length - 1];
      if (nextEscape !== -1 && nextEscape < end) {
        if (nextEscape > i && hasLoneSurrogate(JSON.parse(text.slice(i, end + 1)) as string)) {
          const path = stack.slice(1).map((frame) => frame.name);
          if (top?.keys && !top.expectKey) path.push(top.lastKey);
          else if (top && !top.keys) path.push(top.index);
          return { loneSurrogate: { path }, objects, indexKeys };
        }
        nextEscape = text.indexOf('\\u', end);
      }
      if (top?.keys && top.expectKey) {
        const raw = text.slice(i + 1, end);
        // Escapes make "a" and "\u0061" the same key: decode those the way JSON.parse does.
        const key = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        if (top.keys.has(key)) return { duplicate: { key, path: stack.slice(1).map((frame) => frame.name) }, objects, indexKeys };
        top.keys.add(key);
        if (!indexKeys && isIndexKey(key)) indexKeys = true;
        top.expectKey = false;
        top.lastKey = key;
      }
      i = end;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const parent = stack[stack.length - 1];
      const name = parent ? (parent.keys ? parent.lastKey : parent.index) : '';
      const keys = c === 0x7b ? new Set<string>() : null;
      if (keys) objects.push(keys);
      stack.push({ keys, expectKey: c === 0x7b, lastKey: '', index: 0, name });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.keys) top.expectKey = true;
      else if (top) top.index += 1;
    }
  }
  if (!inexact) return { objects, indexKeys };
  const numbers = Array.from({ length: numberBounds.length / 2 }, (_, j) => text.slice(numberBounds[2 * j]!, numberBounds[2 * j + 1]!));
  return { objects, indexKeys, numbers };
}

/** A character of a JSON number after its first: digits, '.', 'e', 'E', '+', '-'. */
function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;
}

/** A key JavaScript lists before the others: an array index ("0", "12"; not "01", "-1" or "1.5"). */
function isIndexKey(key: string): boolean {
  const first = key.charCodeAt(0);
  return first >= 0x30 && first <= 0x39 && /^(?:0|[1-9][0-9]*)$/.test(key) && Number(key) < 4294967295;
}

/** Index of the quote that closes the string opened at `open` (one not escaped by a backslash). */
function closingQuote(text: string, open: number): number {
  let at = text.indexOf('"', open + 1);
  for (;;) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === 0x5c) backslashes += 1;
    if (backslashes % 2 === 0) return at;
    at = text.indexOf('"', at + 1);
  }
}
