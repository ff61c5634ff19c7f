/**
 * Where a body stops being JSON: every refusal names a place (or says the text ends early) and
 * never quotes the text, also for the tokens V8's messages name without a position (Python's NaN
 * and Infinity, a bare word, a cut-off literal).
 */
import { describe, expect, it } from 'vitest';

import { jsonSyntaxErrorOffset } from '../../src/api/json-syntax-error.js';
import { parseJsonText } from '../../src/api/json-text.js';

const reason = (text: string) => {
  const parsed = parseJsonText(text);
  if (parsed.ok) throw new Error(`accepted ${text}`);
  return parsed.reason;
};

describe('the place of a JSON syntax error', () => {
  it('names the line and column of the first character that is not JSON', () => {
    for (const [text, place] of [
      ['{"a":NaN}', 'line 1, column 6'],
      ['{"score": Infinity}', 'line 1, column 11'],
      ['{"a":-Infinity}', 'line 1, column 7'],
      ['hello', 'line 1, column 1'],
      ['{"a":tru}', 'line 1, column 6'],
      ['{\n  "state": {"x": NaN}\n}', 'line 2, column 18'],
      ['{"a":[{"b":nul}]}', 'line 1, column 12'],
      ['{"a" 1}', 'line 1, column 6'],
      ['{"a":1}}', 'line 1, column 8'],
      ['[1 2]', 'line 1, column 4'],
      ["{'model': 'x'}", 'line 1, column 2'],
    ] as const) {
      expect(reason(text), text).toBe(`not valid JSON (at ${place})`);
    }
  });

  it('says a text that ends inside a value ends early, and never quotes any of it', () => {
    for (const text of ['', '   ', '{"secret": "abc', '{"secret": [1, 2, ', '{"secret": tr']) {
      const said = reason(text);
      expect(said, text).toMatch(/^not valid JSON \((it ends early|at line \d+, column \d+)\)$/);
      expect(said).not.toContain('secret');
    }
  });

  it('finds nothing in valid JSON, however deep, and the fault past deep nesting', () => {
    expect(jsonSyntaxErrorOffset('{"a":true,"b":[null,false,-1.5e+3,"\\u00e9\\n"],"c":{},"d":[]}')).toBe(-1);
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    expect(jsonSyntaxErrorOffset(deep)).toBe(-1);
    expect(jsonSyntaxErrorOffset(`${'['.repeat(100_000)}x`)).toBe(100_000);
    // Faults inside strings: a bad escape, a raw control character, a short \u escape.
    expect(jsonSyntaxErrorOffset('{"a":"x\\q"}')).toBe(7);
    expect(jsonSyntaxErrorOffset('{"a":"\u0001"}')).toBe(6);
    expect(jsonSyntaxErrorOffset('["\\u12"]')).toBe(2);
    // Numbers as JSON writes them: no leading zero, digits after '.' and 'e'.
    expect(jsonSyntaxErrorOffset('[01]')).toBe(2);
    expect(jsonSyntaxErrorOffset('[1.]')).toBe(2);
    expect(jsonSyntaxErrorOffset('[1e]')).toBe(2);
  });
});
