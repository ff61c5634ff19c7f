/**
 * Batch lines of OFF_THREAD_BODY_BYTES or more are read in the record thread
 * (src/batches/record-thread.ts), shorter ones on the main thread, through the real runner on the
 * tiny model:
 * - the same file with every line made large (trailing spaces, which JSON ignores) gives the same
 *   rows, in both formats: ours (good, broken, duplicate, invalid, over-long, envelope lines) and
 *   OpenAI's envelopes for /v1/systemone (score legends given as objects keep their written key
 *   order; a duplicate custom_id, a refused body, another model and a body with a key given twice
 *   fail as before);
 * - while a large line is read, the JavaScript thread runs other work: a timer saw the thread
 *   holding a line (proven by ordering: before the record thread, a line was parsed on the spot and
 *   the thread never held one).
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { OFF_THREAD_BODY_BYTES } from '../../src/api/body-limit.js';
import { parseJsonText } from '../../src/api/json-text.js';
import { zeroUsage, type JobProgress } from '../../src/batches/ports.js';
import { recordThreadStats } from '../../src/batches/record-thread.js';
import { runBatch, type RunOptions } from '../../src/batches/runner.js';
import { jsonInOrder } from '../../src/domain/key-order.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { MODEL_ID, mixedFile, tempWorkspace } from './helpers.js';

let workDir: string;
let svc: DecisionService;
const ZERO: JobProgress = { inputOffset: 0, inputLine: 0, resultsBytes: 0, failedBytes: 0, completed: 0, failed: 0, usage: zeroUsage() };

beforeAll(async () => {
  let modelsDir: string;
  ({ dir: workDir, modelsDir } = await tempWorkspace('batch-large-lines'));
  svc = await DecisionService.open({ modelsDir, preload: [MODEL_ID], threads: 1 });
});

afterAll(async () => {
  await svc?.close();
  await rm(workDir, { recursive: true, force: true });
});

/** Every line padded past the thread's threshold with spaces after its JSON. */
const padded = (text: string) =>
  text
    .split('\n')
    .map((line, i, all) => (i === all.length - 1 ? line : `${line}${' '.repeat(OFF_THREAD_BODY_BYTES + 1)}`))
    .join('\n');

/** A run's rows as written (key order kept), without what differs from run to run (ids, cached tokens). */
async function run(name: string, text: string, extra: Partial<RunOptions> = {}): Promise<string[]> {
  const inputPath = path.join(workDir, `${name}.jsonl`);
  const resultsPath = path.join(workDir, `${name}.out.jsonl`);
  await writeFile(inputPath, text);
  const result = await runBatch({ scorer: svc, model: MODEL_ID, requestedModel: 'svc-alpha', inputPath, resultsPath, start: ZERO, commit: () => undefined, chunkRecords: 8, ...extra });
  expect(result.finished).toBe(true);
  const rows = (await readFile(resultsPath, 'utf8')).split('\n').filter((l) => l !== '');
  return rows.map((row) => {
    const parsed = parseJsonText(row);
    if (!parsed.ok) throw new Error(parsed.reason);
    const value = parsed.value as Record<string, unknown>;
    delete value.id;
    delete value.usage;
    const response = value.response as Record<string, unknown> | null | undefined;
    if (response) delete response.request_id;
    return jsonInOrder(value).replace(/"(dec|req|ts)_[0-9A-Za-z]+"/g, '"<id>"');
  });
}

/**
 * The same rows: errors word for word, answers in the same key order with probabilities within
 * 1e-6 (a padded file's longer lines cut its chunks elsewhere, so the engine calls hold other
 * records: answers are the same within 1e-6 whatever the batch).
 */
function expectSameRows(a: string[], b: string[]): void {
  expect(a).toHaveLength(b.length);
  const numbers = /-?\d+\.\d+/g;
  a.forEach((row, i) => {
    expect(row.replace(numbers, '#')).toBe(b[i]!.replace(numbers, '#'));
    const x = row.match(numbers) ?? [];
    const y = b[i]!.match(numbers) ?? [];
    x.forEach((n, j) => expect(Math.abs(Number(n) - Number(y[j]))).toBeLessThanOrEqual(1e-6 + 1e-12));
  });
}

describe('a large batch line is read as a small one', () => {
  it('ours: the same rows, every kind of line', async () => {
    const { text } = mixedFile();
    const before = recordThreadStats().linesRead;
    const small = await run('ours-small', text);
    expect(recordThreadStats().linesRead).toBe(before);
    const large = await run('ours-large', padded(text));
    // Every non-blank line went through the thread.
    expect(recordThreadStats().linesRead - before).toBe(small.length);
    expectSameRows(large, small);
    expect(small.filter((r) => r.includes('"error":{')).length).toBeGreaterThanOrEqual(5);
  });

  it("ours with the form's questions: criteria written out of JavaScript's order keep it in the thread", async () => {
    const parsed = parseJsonText('{"q": {"type": "choice", "instructions": "Which line?", "criteria": {"10": "cable", "2": "charger", "1": "neither"}}}');
    if (!parsed.ok) throw new Error(parsed.reason);
    const text = `${['one', 'two', 'three'].map((state, i) => JSON.stringify({ custom_id: `f${i}`, state })).join('\n')}\n`;
    const small = await run('form-small', text, { formQuestions: parsed.value });
    const large = await run('form-large', padded(text), { formQuestions: parsed.value });
    expectSameRows(large, small);
    expect(small[0]).toContain('"probs":{"10":');
  });

  it("OpenAI's envelopes for /v1/systemone: the same rows, legends in their written key order", async () => {
    const body = (state: string, extra: Record<string, unknown> = {}) =>
      `{"model": "svc-alpha", "state": ${JSON.stringify(state)}, "questions": {"level": {"type": "score", "instructions": "How angry?", "criteria": [{"2": "b", "1": "a"}, {"n": 1.0}, "very"]}}${Object.keys(extra).length ? `, ${JSON.stringify(extra).slice(1, -1)}` : ''}}`;
    const line = (id: string, b: string) => `{"custom_id": ${JSON.stringify(id)}, "method": "POST", "url": "/v1/systemone", "body": ${b}}`;
    const text = `${[
      line('a', body('one')),
      line('b', body('two')),
      line('a', body('again')),
      line('c', body('refused', { colour: 1 })),
      line('d', body('other model').replace('"svc-alpha"', '"svc-beta"')),
      '{"custom_id": "e", "method": "GET"}',
      // A body that does not read as JSON (a key given twice): the endpoint's own 422.
      line('f', body('twice').replace('"state"', '"state": "x", "state"')),
    ].join('\n')}\n`;
    const small = await run('systemone-small', text, { endpoint: '/v1/systemone' });
    const large = await run('systemone-large', padded(text), { endpoint: '/v1/systemone' });
    expectSameRows(large, small);
    expect(small[0]).toContain('"legend":{"0":{"2":"b","1":"a"}');
    expect(small[2]).toContain('duplicate');
    expect(small[6]).toContain('"status_code":422');
  });
});

it('the JavaScript thread runs other work while a large line is read', async () => {
  const lines = Array.from({ length: 6 }, (_, r) => {
    const state: Record<string, number | string> = {};
    for (let i = 0; i < 30_000; i++) state[`k${i}`] = i % 2 ? i + 0.5 : `v${r}-${i}`;
    return JSON.stringify({ custom_id: `big-${r}`, state, questions: { q: { type: 'noul', instructions: 'x?' } } });
  });
  let seenHolding = 0;
  const timer = setInterval(() => {
    if (recordThreadStats().inProgress > 0) seenHolding += 1;
  }, 1);
  try {
    const rows = await run('probe', `${lines.join('\n')}\n`);
    expect(rows).toHaveLength(6);
  } finally {
    clearInterval(timer);
  }
  expect(seenHolding).toBeGreaterThan(0);
});
