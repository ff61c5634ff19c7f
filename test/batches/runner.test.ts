/**
 * The runner in-process with the tiny model: a crash between writing a chunk and committing it (at
 * the first, second, middle and last chunk boundary), a torn last row, out-of-order scoring, a
 * failing shared engine call, and batch rows equal to /v1/decide answers. One thread per forward
 * pass: the answers are the same, and no spinning ONNX Runtime threads cost CPU.
 */
import { appendFile, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src/api/errors.js';
import type { NormalizedDecideRequest } from '../../src/api/validate.js';
import { runBatch, type RecordScorer, type RunOptions } from '../../src/batches/runner.js';
import { zeroUsage, type JobProgress, type TokenUsage } from '../../src/batches/ports.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { goodLines, maxProbDiff, MODEL_ID, mixedFile, parseRows, QUESTIONS, tempWorkspace, type ResultRow } from './helpers.js';

let workDir: string;
let svc: DecisionService;
let inputPath: string;
let reference: ResultRow[];
/** Chunks (commits) and decideRecords calls of a whole run. */
let chunks: number;
let scoreCalls: number;
/** The whole reference run's usage. */
let referenceUsage: TokenUsage;
/** The good records before the mixed ones. */
const firstLines = goodLines(12, 3, 'p');
const ZERO: JobProgress = { inputOffset: 0, inputLine: 0, resultsBytes: 0, failedBytes: 0, completed: 0, failed: 0, usage: zeroUsage() };

function options(resultsPath: string, extra: Partial<RunOptions> = {}): RunOptions {
  return { scorer: svc, model: MODEL_ID, requestedModel: 'svc-alpha', inputPath, resultsPath, start: ZERO, commit: () => undefined, chunkRecords: 8, ...extra };
}

beforeAll(async () => {
  let modelsDir: string;
  ({ dir: workDir, modelsDir } = await tempWorkspace('batch-runner'));
  svc = await DecisionService.open({ modelsDir, preload: [MODEL_ID], threads: 1 });
  const mixed = mixedFile().text.trimEnd().split('\n');
  inputPath = path.join(workDir, 'input.jsonl');
  await writeFile(inputPath, `${[...firstLines, ...mixed, ...goodLines(12, 4, 'q')].join('\n')}\n`);
  const out = path.join(workDir, 'reference.jsonl');
  chunks = 0;
  scoreCalls = 0;
  const counting: RecordScorer = { decideRecords: (...args) => (scoreCalls++, svc.decideRecords(...args)) };
  const result = await runBatch(options(out, { scorer: counting, commit: () => void chunks++ }));
  expect(result.finished).toBe(true);
  expect(chunks).toBeGreaterThanOrEqual(6);
  reference = parseRows(await readFile(out, 'utf8'));
  expect(result.progress.completed + result.progress.failed).toBe(reference.length);
  referenceUsage = result.progress.usage;
  expect(referenceUsage).toEqual(usageOfRows(reference));
});

/** What the answered rows add up to: their input and cached tokens, one output token per answer. */
function usageOfRows(rows: ResultRow[]): TokenUsage {
  const answered = rows.filter((r) => r.answers !== undefined) as Array<ResultRow & { usage: { input_tokens: number; cached_tokens: number } }>;
  expect(answered.length).toBeGreaterThan(0);
  return {
    inputTokens: answered.reduce((n, r) => n + r.usage.input_tokens, 0),
    cachedTokens: answered.reduce((n, r) => n + r.usage.cached_tokens, 0),
    outputTokens: answered.reduce((n, r) => n + Object.keys(r.answers!).length, 0),
  };
}

afterAll(async () => {
  await svc?.close();
  await rm(workDir, { recursive: true, force: true });
});

function expectSameRows(rows: ResultRow[]): void {
  expect(rows.map((r) => r.custom_id)).toEqual(reference.map((r) => r.custom_id));
  rows.forEach((r, i) => expect(maxProbDiff(r, reference[i]!)).toBeLessThanOrEqual(1e-6 + 1e-12));
}

describe('runBatch crash safety', () => {
  it('a crash after the rows of chunk k are written but before they are committed: the resumed run repeats none and loses none', async () => {
    // One run crashes at the first chunk, its resumed run at the second, and so on: each crash
    // point is resumed from, and the final output shows any row a resume lost or repeated.
    const out = path.join(workDir, 'crash.jsonl');
    let committed = ZERO;
    let commits = 0;
    for (const k of [0, 1, Math.floor(chunks / 2), chunks - 1]) {
      const crashed = runBatch(
        options(out, {
          start: committed,
          commit: (p) => {
            if (commits === k) throw new Error('simulated crash between fsync and commit');
            committed = p;
            commits++;
          },
        }),
      );
      await expect(crashed).rejects.toThrow('simulated crash');
      expect(commits).toBe(k);
      // The file holds rows past the committed length; a torn row on top of them makes it worse.
      await appendFile(out, '{"custom_id":"torn","ans');
    }
    const resumed = await runBatch(options(out, { start: committed, commit: (p) => void (committed = p) }));
    expect(resumed.finished).toBe(true);
    expectSameRows(parseRows(await readFile(out, 'utf8')));
    expect(committed.completed + committed.failed).toBe(reference.length);
    // Resumed from the committed sums: each row counted once (the cached part depends on the cache).
    expect({ ...committed.usage, cachedTokens: 0 }).toEqual({ ...referenceUsage, cachedTokens: 0 });
  });

  it('a stop at a chunk boundary keeps the committed rows; resuming finishes the same output', async () => {
    const out = path.join(workDir, 'stop.jsonl');
    let committed = ZERO;
    let commits = 0;
    const first = await runBatch(options(out, { commit: (p) => void ((committed = p), commits++), shouldStop: () => commits >= 3 }));
    expect(first.finished).toBe(false);
    expect(first.progress).toEqual(committed);
    expect(parseRows(await readFile(out, 'utf8'))).toHaveLength(committed.completed + committed.failed);
    const second = await runBatch(options(out, { start: committed }));
    expect(second.finished).toBe(true);
    expectSameRows(parseRows(await readFile(out, 'utf8')));
  });
});

describe('runBatch ordering and failures', () => {
  it('writes rows in input order even when later chunks are scored first', async () => {
    // Call 2j answers only after call 2j+1 has answered (where there is one): every pair completes
    // in the reverse of its submission order. With 3 chunks in flight, call 2j+1 is always submitted
    // before the runner waits for call 2j.
    const answered: Array<{ promise: Promise<void>; resolve: () => void }> = [];
    const gate = (i: number) => {
      if (!answered[i]) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        answered[i] = { promise, resolve };
      }
      return answered[i];
    };
    const completion: number[] = [];
    let calls = 0;
    const scorer: RecordScorer = {
      async decideRecords(model, requests, priority) {
        const mine = calls++;
        const outcomes = await svc.decideRecords(model, requests, priority);
        if (mine % 2 === 0 && mine + 1 < scoreCalls) await gate(mine + 1).promise;
        completion.push(mine);
        gate(mine).resolve();
        return outcomes;
      },
    };
    const out = path.join(workDir, 'order.jsonl');
    await runBatch(options(out, { scorer, pipelineDepth: 3 }));
    expect(completion.slice(0, 4)).toEqual([1, 0, 3, 2]);
    expectSameRows(parseRows(await readFile(out, 'utf8')));
  });

  it('a failing shared engine call fails only the record that breaks it (server_error), the others are answered', async () => {
    const poisoned = JSON.parse(firstLines[5]!) as { state: string };
    const scorer: RecordScorer = {
      async decideRecords(model: string, requests: NormalizedDecideRequest[], priority?: 'live' | 'batch') {
        if (requests.some((r) => r.stateText === poisoned.state)) throw new ApiError('server_error', 'the engine failed to score the request');
        return svc.decideRecords(model, requests, priority);
      },
    };
    const out = path.join(workDir, 'poison.jsonl');
    const result = await runBatch(options(out, { scorer }));
    expect(result.finished).toBe(true);
    const rows = parseRows(await readFile(out, 'utf8'));
    expect(rows.map((r) => r.custom_id)).toEqual(reference.map((r) => r.custom_id));
    rows.forEach((r, i) => {
      if (r.custom_id === 'p-5') expect(r.error).toEqual({ code: 'server_error', message: 'the engine failed to score the request' });
      else expect(maxProbDiff(r, reference[i]!)).toBeLessThanOrEqual(1e-6 + 1e-12);
    });
  });

  it('answers a record exactly as decide() does', async () => {
    for (const i of [0, 7, 11]) {
      const record = JSON.parse(firstLines[i]!) as { custom_id: string; state: string };
      const live = await svc.decide({ model: 'svc-alpha', state: record.state, questions: QUESTIONS });
      const row = reference.find((r) => r.custom_id === record.custom_id)!;
      expect(maxProbDiff({ custom_id: record.custom_id, answers: live.answers }, row)).toBeLessThanOrEqual(1e-6 + 1e-12);
      expect(row.usage!.input_tokens).toBe(live.usage.input_tokens);
    }
  });
});
