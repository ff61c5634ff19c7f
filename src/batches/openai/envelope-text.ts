/**
 * A batch line whose JSON is refused only because of what is inside its `body` (a key given twice
 * there, which JSON.parse would silently collapse): the envelope is still readable, and the body is
 * the endpoint's to judge, so the line becomes that line's error-file entry with the status and body
 * the synchronous endpoint gives an unreadable body, not a refusal of the whole file. A key given
 * twice in the envelope itself (custom_id twice) stays the line's own error.
 */
import { parseJsonText } from '../../api/json-text.js';
import { isPlainObject } from '../../api/json-value.js';
import type { DecodedLine } from '../records.js';

/** A line's envelope, with the reason its body cannot be read (as the endpoint words it for a body of its own). */
export interface UnreadableBody {
  value: Record<string, unknown>;
  bodyReason: string;
  /** Where in the body (parseJsonText's path), as the endpoint names the place for a body of its own. */
  bodyPath?: string;
}

/**
 * For a line decodeLine() refused: its envelope and why its body is unreadable, when that is all
 * that is wrong; undefined otherwise (the line's error stands).
 */
export function unreadableBody(bytes: Buffer | null, decoded: DecodedLine): UnreadableBody | undefined {
  if (!('error' in decoded) || bytes === null) return undefined;
  let text: string;
  let value: unknown;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch {
    return undefined; // not UTF-8 or not JSON: nothing inside a body is to blame
  }
  if (!isPlainObject(value)) return undefined;
  const members = topLevelMembers(text);
  if (new Set(members.map((m) => m.key)).size !== members.length) return undefined; // the envelope repeats a key
  const body = members.find((m) => m.key === 'body');
  if (!body) return undefined;
  // Every other member read alone must be fine: then the body is where the line's problem is.
  for (const m of members) if (m !== body && !parseJsonText(text.slice(m.from, m.to)).ok) return undefined;
  const judged = parseJsonText(text.slice(body.from, body.to));
  if (judged.ok) return undefined;
  return { value, bodyReason: judged.reason, ...(judged.path === undefined ? {} : { bodyPath: judged.path }) };
}

/**
 * The keys of the top-level object of `text` (valid JSON, an object) with the span of each value,
 * in written order.
 */
function topLevelMembers(text: string): Array<{ key: string; from: number; to: number }> {
  const members: Array<{ key: string; from: number; to: number }> = [];
  let at = text.indexOf('{') + 1;
  const skipSpace = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at]!)) at++;
  };
  const skipString = () => {
    // at is on the opening quote
    for (at++; text[at] !== '"'; at++) if (text[at] === '\\') at++;
    at++;
  };
  for (;;) {
    skipSpace();
    if (text[at] === '}') return members;
    const keyStart = at;
    skipString();
    const key = JSON.parse(text.slice(keyStart, at)) as string;
    skipSpace();
    at++; // ':'
    skipSpace();
    const from = at;
    let depth = 0;
    for (; at < text.length; at++) {
      const c = text[at]!;
      if (c === '"') {
        skipString();
        at--;
      } else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        if (depth === 0) break;
        depth--;
      } else if (c === ',' && depth === 0) break;
    }
    let to = at;
    while (to > from && ' \t\n\r'.includes(text[to - 1]!)) to--;
    members.push({ key, from, to });
    if (text[at] === ',') at++;
  }
}
