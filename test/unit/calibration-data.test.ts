// The calibration data file: what counts as a usable expected label, what is only reported, and
// what refuses the whole file.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { readCalibrationData } from '../../src/calibration/data.js';

const QUESTIONS = {
  topic: { type: 'choice', instructions: 'Topic?', criteria: { billing: 'Charges', shipping: 'Parcels' } },
  refund: { type: 'noul', instructions: 'Refund?' },
  urgency: { type: 'score', instructions: 'How urgent?', criteria: { '1': 'not', '2': 'somewhat', '3': 'very', '0.5': 'barely' } },
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'calibration-data-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function read(lines: unknown[]) {
  const file = path.join(dir, `d-${Math.random().toString(36).slice(2)}.jsonl`);
  await writeFile(file, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n'));
  return readCalibrationData(file, 'svc-alpha');
}

const row = (expected: Record<string, unknown>) => ({ state: 'my parcel', questions: QUESTIONS, expected });

describe('expected labels', () => {
  it('option keys, score levels as numbers or other spellings, noul answers as booleans', async () => {
    const data = await read([row({ topic: 'shipping', refund: 'yes', urgency: '3' }), row({ refund: false, urgency: 2 }), row({ urgency: '0.50' }), row({ refund: true, urgency: 0.5 })]);
    // Options in presentation order: noul [no, yes]; score ascending (0.5, 1, 2, 3).
    expect(data.rows.map((r) => Object.fromEntries(r.expected))).toEqual([
      { topic: 1, refund: 1, urgency: 3 },
      { refund: 0, urgency: 2 },
      { urgency: 0 },
      { refund: 1, urgency: 0 },
    ]);
    expect(data.unusable).toEqual([]);
  });

  it('a value that names no option is reported with the options, and the rest of the row is used', async () => {
    const data = await read([row({ topic: 'weather', refund: 'maybe', urgency: 7, nope: 'x' }), row({ topic: 2, refund: null, urgency: '3' })]);
    expect(data.unusable).toEqual([
      { line: 1, question: 'topic', reason: '"weather" is not an option (options: billing, shipping)' },
      { line: 1, question: 'refund', reason: '"maybe" is not an option (options: no, yes)' },
      { line: 1, question: 'urgency', reason: '7 is not an option (options: 0.5, 1, 2, 3)' },
      { line: 1, question: 'nope', reason: 'no question "nope" in this row' },
      { line: 2, question: 'topic', reason: '2 is not an option (options: billing, shipping)' },
      { line: 2, question: 'refund', reason: 'null is not an option (options: no, yes)' },
    ]);
    expect(data.rows.map((r) => Object.fromEntries(r.expected))).toEqual([{}, { urgency: 3 }]);
  });
});

describe('score labels name levels exactly as /v1/decide compares them', () => {
  const BIG = {
    s: { type: 'score', instructions: 'How big?', criteria: { '100000000000000000000': 'low', '100000000000000000001': 'high', '0.3': 'mid', '0.30000000000000001': 'mid+' } },
  };
  const big = (expected: string) => `{"state": "x", "questions": ${JSON.stringify(BIG)}, "expected": {"s": ${expected}}}`;

  it('as exact decimals, never through a double: a number keeps the digits it was written with', async () => {
    // Options ascending: 0.3, 0.30000000000000001, 1e20, 1e20 + 1.
    const data = await read([
      big('100000000000000000001'),
      big('"100000000000000000001.0"'),
      big('100000000000000000000'),
      big('"0.30000000000000001"'),
      big('0.300'),
      big('"0.3"'),
    ]);
    expect(data.rows.map((r) => r.expected.get('s'))).toEqual([3, 3, 2, 1, 0, 0]);
    expect(data.unusable).toEqual([]);
  });

  it('a value that names no level, or a spelling /v1/decide refuses for a score key, is reported and left out', async () => {
    const data = await read([
      big('100000000000000000002'),
      big('"0.3000000000000000100001"'),
      row({ urgency: '0x3' }),
      row({ urgency: '+2' }),
      row({ urgency: '1e0' }),
      row({ urgency: ' 3' }),
      row({ urgency: 1e0 }),
      '{"state": "x", "questions": ' + JSON.stringify(QUESTIONS) + ', "expected": {"urgency": 1e0}}',
    ]);
    const levels = 'options: 0.3, 0.30000000000000001, 100000000000000000000, 100000000000000000001';
    const spelling = 'is not a score level as /v1/decide writes them ("0", "2.5", "-1": no spaces, "+", hex or exponent) (options: 0.5, 1, 2, 3)';
    expect(data.unusable).toEqual([
      { line: 1, question: 's', reason: `100000000000000000002 is not an option (${levels})` },
      { line: 2, question: 's', reason: `"0.3000000000000000100001" is not an option (${levels})` },
      { line: 3, question: 'urgency', reason: `"0x3" ${spelling}` },
      { line: 4, question: 'urgency', reason: `"+2" ${spelling}` },
      { line: 5, question: 'urgency', reason: `"1e0" ${spelling}` },
      { line: 6, question: 'urgency', reason: `" 3" ${spelling}` },
      { line: 8, question: 'urgency', reason: `1e0 ${spelling}` },
    ]);
    // The number 1 (JSON.stringify wrote 1e0 as 1) names the level "1".
    expect(data.rows.map((r) => Object.fromEntries(r.expected))).toEqual([{}, {}, {}, {}, {}, {}, { urgency: 1 }, {}]);
  });
});

describe('fields of a decide request besides state and questions', () => {
  it('label_mass (a logged request or batch record) is accepted, checked as /v1/decide checks it, and not used', async () => {
    const data = await read([{ ...row({ topic: 'billing' }), label_mass: true }, { ...row({ refund: 'no' }), label_mass: false, custom_id: 'r2', model: 'x' }]);
    expect(data.rows.map((r) => Object.fromEntries(r.expected))).toEqual([{ topic: 0 }, { refund: 0 }]);
    expect(data.rows.map((r) => 'labelMass' in r.request)).toEqual([false, false]);
    await expect(read([{ ...row({ topic: 'billing' }), label_mass: 1 }])).rejects.toThrow(/line 1: label_mass: must be true or false, got number/);
  });
});

describe('files that are refused', () => {
  it('an empty file', async () => {
    await expect(read(['', '  '])).rejects.toThrow(/has no rows/);
  });

  it('bad lines are listed by number, and nothing is read', async () => {
    await expect(read([row({ topic: 'billing' }), '{oops', { state: 'x', questions: QUESTIONS }, [1], { ...row({}), extra: 1 }])).rejects.toThrow(
      /4 bad lines; nothing was fitted:\n {2}line 2: not valid JSON.*\n {2}line 3: expected: required.*\n {2}line 4: must be a JSON object.*\n {2}line 5: unknown field "extra"/,
    );
  });
});
