/**
 * Where JSON text stops being JSON, for the messages of V8's JSON.parse that name a token but not
 * its place (`Unexpected token 'N', "…" is not valid JSON`: Python's NaN and Infinity, a bare
 * word, a cut-off literal). Only run on text JSON.parse has refused, so it needs to be right, not
 * fast; iterative, as JSON may nest deeper than the call stack.
 */

const WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERALS = ['true', 'false', 'null'];
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);

/** The offset of the first character a JSON parser cannot take (text.length: the text ends early); -1 for valid JSON. */
export function jsonSyntaxErrorOffset(text: string): number {
  const closers: string[] = [];
  let i = 0;
  const skipSpace = () => {
    while (i < text.length && WHITESPACE.has(text.charCodeAt(i))) i++;
  };
  // The end of the string opening at i (the offset after its closing quote), or the offset of its fault.
  const stringEnd = (): { end: number } | { fault: number } => {
    for (let at = i + 1; at < text.length; at++) {
      const c = text.charCodeAt(at);
      if (c === 0x22) return { end: at + 1 };
      if (c < 0x20) return { fault: at };
      if (c === 0x5c) {
        const next = text[at + 1];
        if (next === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(at + 2, at + 6))) return { fault: at };
          at += 5;
        } else if (next !== undefined && ESCAPES.has(next)) {
          at += 1;
        } else {
          return { fault: at };
        }
      }
    }
    return { fault: text.length };
  };
  // A key and its colon at i; the offset of a fault, or -1 when the value follows.
  const keyAndColon = (): number => {
    skipSpace();
    if (text[i] !== '"') return i;
    const key = stringEnd();
    if ('fault' in key) return key.fault;
    i = key.end;
    skipSpace();
    if (text[i] !== ':') return i;
    i += 1;
    return -1;
  };

  for (;;) {
    // A value starts at i.
    skipSpace();
    const c = text[i];
    let complete = true;
    if (c === '{' || c === '[') {
      i += 1;
      skipSpace();
      const closer = c === '{' ? '}' : ']';
      if (text[i] === closer) {
        i += 1;
      } else {
        closers.push(closer);
        if (c === '{') {
          const fault = keyAndColon();
          if (fault !== -1) return fault;
        }
        complete = false;
      }
    } else if (c === '"') {
      const string = stringEnd();
      if ('fault' in string) return string.fault;
      i = string.end;
    } else if (c === undefined) {
      return i;
    } else {
      const literal = LITERALS.find((word) => text.startsWith(word, i));
      if (literal) {
        i += literal.length;
      } else {
        NUMBER.lastIndex = i;
        if (!NUMBER.test(text)) return i;
        i = NUMBER.lastIndex;
      }
    }
    if (!complete) continue;
    // After a value: a comma, the closer of its container, or the end.
    for (;;) {
      skipSpace();
      const closer = closers[closers.length - 1];
      if (closer === undefined) return i < text.length ? i : -1;
      if (text[i] === closer) {
        closers.pop();
        i += 1;
        continue;
      }
      if (text[i] !== ',') return i;
      i += 1;
      if (closer === '}') {
        const fault = keyAndColon();
        if (fault !== -1) return fault;
      }
      break;
    }
  }
}
