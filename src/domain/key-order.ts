/**
 * Object keys in the order a client wrote them. A JavaScript object lists integer-like keys
 * ("0", "12": array indices) first, in ascending order, whatever order they were written in, so
 * criteria `{"0": ..., "1": ..., "10": ..., "2": ...}` would become 0, 1, 2, 10, and every
 * JSON.stringify of it too. The options of a question are shown to the model in that order, so the
 * same question asked as an array (OpenAI's choices) and as an object (criteria) would differ.
 *
 * An object's written key order is remembered beside it (a WeakMap: the object itself is not
 * changed): the JSON text parser (src/api/json-text.ts) records it for every object it makes, and
 * code that builds an object in a meaningful order (answers by question id, probs by option)
 * records it with objectInOrder(). keysInOrder() reads it back, and jsonInOrder() writes JSON text
 * in it. An object without a recorded order lists its keys as JavaScript does.
 */

const WRITTEN_ORDER = new WeakMap<object, readonly string[]>();
/** Per object or array: key (or index) -> a number's text as the client wrote it, where JSON.stringify would write it otherwise. */
const WRITTEN_NUMBERS = new WeakMap<object, Map<string, string>>();

/** Records `keys` (each an own key of `obj`, each once) as the order of `obj`'s keys; returns `obj`. */
export function recordKeyOrder<T extends object>(obj: T, keys: readonly string[]): T {
  WRITTEN_ORDER.set(obj, keys);
  return obj;
}

/**
 * Records the text a client wrote for the number at `container[key]` ("1.0", "12345678901234567890",
 * "1e2"): a double would be written back as "1", "12345678901234567000", "100", and the model would
 * read another text than the one sent. jsonInOrder() writes it while the value is still that number.
 */
export function recordNumberText(container: object, key: string, text: string): void {
  let texts = WRITTEN_NUMBERS.get(container);
  if (!texts) WRITTEN_NUMBERS.set(container, (texts = new Map()));
  texts.set(key, text);
}

/** The text the client wrote for the number at `container[key]`, where one was recorded. */
export function writtenNumberText(container: object, key: string): string | undefined {
  return WRITTEN_NUMBERS.get(container)?.get(key);
}

/**
 * Whether JSON.stringify would write `obj` otherwise than jsonInOrder(): a recorded key order (else
 * its keys are listed as JavaScript lists them) or a number's written text among its members.
 */
export function hasWrittenForm(obj: object): boolean {
  return WRITTEN_ORDER.has(obj) || WRITTEN_NUMBERS.has(obj);
}

/**
 * A plain object with these entries whose keys keep this order (keysInOrder, jsonInOrder). Built as
 * Object.fromEntries builds it, so a key "__proto__" is an own key, not the prototype.
 * @example
 * jsonInOrder(objectInOrder([['10', 1], ['2', 2]])); // '{"10":1,"2":2}'
 */
export function objectInOrder<V>(entries: Iterable<readonly [string, V]>): Record<string, V> {
  const list = [...entries];
  const obj = Object.fromEntries(list) as Record<string, V>;
  return recordKeyOrder(obj, [...new Set(list.map(([key]) => key))]);
}

/**
 * `obj`'s own enumerable string keys in the order they were written (recorded), else as
 * Object.keys lists them. Keys added after the order was recorded follow the recorded ones.
 */
export function keysInOrder(obj: object): string[] {
  const own = Object.keys(obj);
  const written = WRITTEN_ORDER.get(obj);
  if (!written) return own;
  if (written.length === own.length && written.every((k) => Object.prototype.propertyIsEnumerable.call(obj, k))) return [...written];
  const known = new Set(written);
  return [...written.filter((k) => Object.prototype.propertyIsEnumerable.call(obj, k)), ...own.filter((k) => !known.has(k))];
}

/** [key, value] pairs of `obj` in keysInOrder() order. */
export function entriesInOrder<V>(obj: Record<string, V>): Array<[string, V]> {
  return keysInOrder(obj).map((k) => [k, obj[k]!]);
}

/**
 * JSON text of `value` as JSON.stringify(value, null, indent) writes it, except that every object's
 * keys come in keysInOrder() order and a number keeps the text it was written with (recordNumberText). For data: plain objects, arrays, strings, numbers, booleans,
 * null, and values with toJSON(); a cycle throws a TypeError as JSON.stringify does. `indent`: the
 * number of spaces per level (0, the default: compact).
 * @example
 * jsonInOrder(parsedCriteria); // '{"0":"a","10":"b","2":"c"}' when the text wrote them so
 */
export function jsonInOrder(value: unknown, indent = 0): string {
  return write(value, '', new Set(), ' '.repeat(Math.min(10, Math.max(0, indent))), '') ?? 'null';
}

function write(value: unknown, key: string, open: Set<object>, step: string, at: string): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return JSON.stringify(value);
  if (open.has(value)) throw new TypeError('Converting circular structure to JSON');
  open.add(value);
  const inner = at + step;
  // Members one per line, indented, when indenting; empty containers stay [] and {}.
  const wrap = (parts: string[], [left, right]: string) =>
    parts.length === 0 ? `${left}${right}` : step ? `${left}\n${inner}${parts.join(`,\n${inner}`)}\n${at}${right}` : `${left}${parts.join(',')}${right}`;
  let text: string;
  const numbers = WRITTEN_NUMBERS.get(value);
  // A member's text: a number as written while it still holds that value, else as JSON writes it.
  const member = (item: unknown, k: string) => {
    const written = typeof item === 'number' ? numbers?.get(k) : undefined;
    return written !== undefined && Number(written) === item ? written : write(item, k, open, step, inner);
  };
  if (Array.isArray(value)) {
    text = wrap(value.map((item, i) => member(item, String(i)) ?? 'null'), '[]');
  } else {
    const parts: string[] = [];
    const obj = value as Record<string, unknown>;
    for (const k of keysInOrder(obj)) {
      const item = member(obj[k], k);
      if (item !== undefined) parts.push(`${JSON.stringify(k)}:${step ? ' ' : ''}${item}`);
    }
    text = wrap(parts, '{}');
  }
  open.delete(value);
  return text;
}

/** The written forms inside one value (writtenFormsOf), to give to a copy of it (giveWrittenForms). */
export type WrittenForms = Array<{ at: number; order?: readonly string[]; numbers?: Array<[string, string]> }>;

/**
 * The recorded key orders and number texts of every object and array inside `root`, by the
 * position of each in a walk of `root`. They live beside the objects (WeakMaps), so a copy made by
 * structuredClone or postMessage (a value read in a worker thread) has none: giveWrittenForms()
 * gives them to the copy, whose walk meets the same containers in the same order.
 * @example
 * worker side:  port.postMessage({ call, forms: writtenFormsOf(call) });
 * main side:    giveWrittenForms(message.call, message.forms);
 */
export function writtenFormsOf(root: unknown): WrittenForms {
  const forms: WrittenForms = [];
  walkContainers(root, (container, at) => {
    const order = WRITTEN_ORDER.get(container);
    const numbers = WRITTEN_NUMBERS.get(container);
    if (order || numbers) forms.push({ at, ...(order ? { order } : {}), ...(numbers ? { numbers: [...numbers] } : {}) });
  });
  return forms;
}

/** Records `forms` (from writtenFormsOf on the original) on `copy`, a structured clone of it. */
export function giveWrittenForms(copy: unknown, forms: WrittenForms): void {
  if (forms.length === 0) return;
  const byPosition = new Map(forms.map((form) => [form.at, form]));
  walkContainers(copy, (container, at) => {
    const form = byPosition.get(at);
    if (form?.order) WRITTEN_ORDER.set(container, form.order);
    if (form?.numbers) WRITTEN_NUMBERS.set(container, new Map(form.numbers));
  });
}

/**
 * Calls `visit` for every object, array and Map inside `root` (and root itself), each once, with
 * its position in a depth-first walk in key order (a Map: its values). A structured clone keeps
 * the keys' order and the sharing of objects, so its walk gives every container the same position.
 */
function walkContainers(root: unknown, visit: (container: object, at: number) => void): void {
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (value === null || typeof value !== 'object' || seen.has(value)) continue;
    seen.add(value);
    visit(value, seen.size - 1);
    const members = value instanceof Map ? [...value.values()] : Object.values(value);
    for (let i = members.length - 1; i >= 0; i--) stack.push(members[i]);
  }
}
