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
