/**
 * BatchService across a restart in one process: a job stopped by close() resumes when the service
 * is opened again on the same data dir; a job left `cancelling` becomes `cancelled`; a job whose
 * model disappeared, before it started or while it ran, or whose version was written again while
 * it ran, fails with the reason (keeping the rows finished before); crash leftovers (staging files, job dirs without a row)
 * are removed at open.
 */
import { cpSync, existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src/api/errors.js';
import type { NormalizedDecideRequest } from '../../src/api/validate.js';
import { BatchService, type BatchDecisionService } from '../../src/batches/batch-service.js';
import { DecisionService } from '../../src/service/decision-service.js';
import type { VersionPin } from '../../src/service/version-pin.js';
import { tinyModelDir } from '../helpers/tiny-model.js';
import { goodLines, MODEL_ID, parseRows, streamText, tempWorkspace } from './helpers.js';

let workDir: string;
let modelsDir: string;
let svc: DecisionService;

beforeAll(async () => {
  ({ dir: workDir, modelsDir } = await tempWorkspace('batch-service'));
  svc = await DecisionService.open({ modelsDir, preload: [MODEL_ID] });
});

afterAll(async () => {
  await svc?.close();
  await rm(workDir, { recursive: true, force: true });
});

/** A real service (`real`, default the shared one), its decideRecords held after `passes` calls until release(). */
function gatedService(passes: number, real: DecisionService = svc) {
  let left = passes;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const service: BatchDecisionService = {
    resolveModel: (id) => real.resolveModel(id),
    runtime: (id) => real.runtime(id),
    async decideRecords(model: string, requests: NormalizedDecideRequest[], priority?: 'live' | 'batch', pin?: VersionPin) {
      if (left-- <= 0) await released;
      return real.decideRecords(model, requests, priority, pin);
    },
  };
  return { service, release };
}

async function waitFor(batches: BatchService, owner: string, id: string, statuses: string[]) {
  const until = Date.now() + 30_000;
  for (;;) {
    const b = await batches.get(owner, id);
    if (statuses.includes(b.status)) return b;
    if (Date.now() > until) throw new Error(`still ${b.status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function progressAtLeast(batches: BatchService, id: string, rows: number) {
  const until = Date.now() + 30_000;
  while ((await batches.get('o', id)).progress.completed < rows) {
    if (Date.now() > until) throw new Error('no progress');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('BatchService restart', () => {
  it('resumes an in_progress job after close() and reopen, and finishes a cancelling one as cancelled', async () => {
    const dataDir = path.join(workDir, 'data');
    const lines = goodLines(40, 21, 'z');
    const gated = gatedService(2);
    const first = await BatchService.open({ service: gated.service, dataDir, chunk: { chunkRecords: 4 } });
    const running = await first.create({ owner: 'o', model: 'svc-alpha', upload: await first.stageUpload(Readable.from([lines.join('\n')])) });
    const cancelled = await first.create({ owner: 'o', model: 'svc-alpha', upload: await first.stageUpload(Readable.from([lines.slice(0, 10).join('\n')])) });
    await progressAtLeast(first, running.id, 8);
    expect((await first.get('o', cancelled.id)).status).toBe('in_progress');
    expect((await first.cancel('o', cancelled.id)).status).toBe('cancelling');
    const closing = first.close();
    gated.release();
    await closing;

    // Crash leftovers the next open must clear.
    await writeFile(path.join(dataDir, 'batches', '.staging', 'partial.jsonl'), 'half an upload');
    await mkdir(path.join(dataDir, 'batches', 'batch_01ARZ3NDEKTSV4RRFFQ69G5FAV'));

    const second = await BatchService.open({ service: svc, dataDir, chunk: { chunkRecords: 4 } });
    try {
      expect(existsSync(path.join(dataDir, 'batches', '.staging', 'partial.jsonl'))).toBe(false);
      expect(existsSync(path.join(dataDir, 'batches', 'batch_01ARZ3NDEKTSV4RRFFQ69G5FAV'))).toBe(false);
      const c = await waitFor(second, 'o', cancelled.id, ['cancelled']);
      expect(c.progress.completed).toBeLessThan(10);
      const done = await waitFor(second, 'o', running.id, ['completed']);
      expect(done.progress).toEqual({ total: 40, completed: 40, failed: 0 });
      const { stream } = await second.openResults('o', running.id);
      let text = '';
      for await (const chunk of stream) text += String(chunk);
      expect(parseRows(text).map((r) => r.custom_id)).toEqual(lines.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id));
    } finally {
      await second.close();
    }
  });

  it('fails a job whose model cannot be used, with the reason', async () => {
    const dataDir = path.join(workDir, 'gone');
    const gone: BatchDecisionService = {
      resolveModel: (id) => svc.resolveModel(id),
      runtime: async () => {
        throw new ApiError('not_found', "model 'svc-alpha-2026-10' is not installed");
      },
      decideRecords: (m, r, p) => svc.decideRecords(m, r, p),
    };
    const batches = await BatchService.open({ service: gone, dataDir });
    try {
      const b = await batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([goodLines(2)[0]!])) });
      const failed = await waitFor(batches, 'o', b.id, ['failed']);
      expect(failed.error).toEqual({ code: 'not_found', message: "model svc-alpha-2026-10 could not be used: model 'svc-alpha-2026-10' is not installed" });
      expect(typeof failed.completed_at).toBe('string');
    } finally {
      await batches.close();
    }
  });

  it('fails a job whose model is removed while it runs, with the reason, keeping the rows finished before', async () => {
    const own = await tempWorkspace('batch-model-gone');
    const real = await DecisionService.open({ modelsDir: own.modelsDir, preload: [MODEL_ID] });
    const { service, release } = gatedService(2, real);
    const batches = await BatchService.open({ service, dataDir: path.join(own.dir, 'data'), chunk: { chunkRecords: 4 } });
    try {
      const lines = goodLines(40, 5, 'g');
      const b = await batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([lines.join('\n')])) });
      await progressAtLeast(batches, b.id, 8);
      await rm(path.join(own.modelsDir, MODEL_ID)); // the model is uninstalled mid-run
      release();
      const failed = await waitFor(batches, 'o', b.id, ['failed', 'completed']);
      expect(failed.status).toBe('failed');
      expect(failed.error).toMatchObject({ code: 'not_found', message: expect.stringMatching(/^model svc-alpha-2026-10 could not be used: .*not installed/) });
      expect(failed.progress.failed).toBe(0);
      expect(failed.progress.completed).toBeGreaterThanOrEqual(8);
      expect(failed.progress.completed).toBeLessThan(40);
      const rows = parseRows(await streamText((await batches.openResults('o', b.id)).stream));
      expect(rows.map((r) => r.custom_id)).toEqual(lines.slice(0, failed.progress.completed).map((l) => (JSON.parse(l) as { custom_id: string }).custom_id));
      expect(rows.every((r) => !r.error)).toBe(true);
    } finally {
      await batches.close();
      await real.close();
      await rm(own.dir, { recursive: true, force: true });
    }
  });

  it('fails a job whose version is written again under its id while it runs: no row is scored by the new one', async () => {
    const own = await tempWorkspace('batch-model-replaced');
    const real = await DecisionService.open({ modelsDir: own.modelsDir, preload: [MODEL_ID] });
    const { service, release } = gatedService(2, real);
    const batches = await BatchService.open({ service, dataDir: path.join(own.dir, 'data'), chunk: { chunkRecords: 4 } });
    try {
      const lines = goodLines(40, 5, 'v');
      const b = await batches.create({ owner: 'o', model: 'svc-alpha-2026-10', upload: await batches.stageUpload(Readable.from([lines.join('\n')])) });
      await progressAtLeast(batches, b.id, 8);
      // The same id written again with another calibration: other answers from the same weights.
      const dir = path.join(own.modelsDir, MODEL_ID);
      const staged = path.join(own.modelsDir, '.replacement');
      cpSync(await tinyModelDir(), staged, { recursive: true, dereference: true });
      const decision = JSON.parse(await readFile(path.join(staged, 'decision.json'), 'utf8')) as Record<string, unknown>;
      await writeFile(path.join(staged, 'decision.json'), JSON.stringify({ ...decision, calibration: { temperature: { noul: 4, choice: 4, score: 4 } } }));
      await rm(dir);
      await rename(staged, dir);
      release();
      const failed = await waitFor(batches, 'o', b.id, ['failed', 'completed']);
      expect(failed.status).toBe('failed');
      expect(failed.error).toMatchObject({ code: 'server_error', message: expect.stringMatching(/^model svc-alpha-2026-10 could not be used: model svc-alpha-2026-10 changed while the job ran/) });
      expect(failed.progress.failed).toBe(0);
      expect(failed.progress.completed).toBeGreaterThanOrEqual(8);
      expect(failed.progress.completed).toBeLessThan(40);
      // The rows kept are the old version's: each equals the record asked of a service opened before the change.
      const rows = parseRows(await streamText((await batches.openResults('o', b.id)).stream));
      expect(rows.map((r) => r.custom_id)).toEqual(lines.slice(0, failed.progress.completed).map((l) => (JSON.parse(l) as { custom_id: string }).custom_id));
      const first = JSON.parse(lines[0]!) as { state: string; questions: unknown };
      const asked = await svc.decide({ model: MODEL_ID, state: first.state, questions: first.questions });
      expect((rows[0] as { answers: unknown }).answers).toEqual(asked.answers);
    } finally {
      await batches.close();
      await real.close();
      await rm(own.dir, { recursive: true, force: true });
    }
  });

  it('a job whose store refuses writes is tried again after a pause, not in a loop, and completes once the store takes writes', async () => {
    const dataDir = path.join(workDir, 'refusing-store');
    const logged: string[] = [];
    const { service, release } = gatedService(0);
    const batches = await BatchService.open({ service, dataDir, log: (line) => logged.push(line) });
    // The store's own SQLite connection, made to refuse writes as a full disk would.
    const db = (batches.store as unknown as { table: { db: { pragma(sql: string): unknown } } }).table.db;
    try {
      const lines = goodLines(6, 3, 'w');
      const b = await batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([lines.join('\n')])) });
      db.pragma('query_only = ON');
      release();
      await new Promise((r) => setTimeout(r, 2_500));
      const errors = logged.filter((l) => l.includes('runner error'));
      // Without a pause this was hundreds of attempts a second; with one, at most one try and its two retries.
      expect(errors.length).toBeGreaterThanOrEqual(1);
      expect(errors.length).toBeLessThanOrEqual(3);
      expect(errors[0]).toMatch(/runner error \(attempt 1; trying again in 1 s\)/);
      db.pragma('query_only = OFF');
      const done = await waitFor(batches, 'o', b.id, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      expect(done.progress).toMatchObject({ total: 6, completed: 6, failed: 0 });
    } finally {
      db.pragma('query_only = OFF');
      await batches.close();
    }
  }, 60_000);

  it('a store that refuses writes (a full or read-only disk) answers 503 with Retry-After, and takes jobs again afterwards', async () => {
    const dataDir = path.join(workDir, 'read-only-store');
    const batches = await BatchService.open({ service: svc, dataDir });
    const db = (batches.store as unknown as { table: { db: { pragma(sql: string): unknown } } }).table.db;
    try {
      db.pragma('query_only = ON');
      const refused = batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([goodLines(2, 1, 'r').join('\n')])) });
      await expect(refused).rejects.toMatchObject({ status: 503, retryAfterSeconds: 30, code: 'server_error', message: expect.stringMatching(/^the batch store cannot write to its disk \(SQLITE_READONLY[A-Z_]*: full, read-only or failing\); nothing was stored/) });
      expect(await batches.list('o')).toMatchObject({ data: [] });
      db.pragma('query_only = OFF');
      const b = await batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([goodLines(2, 1, 'r').join('\n')])) });
      expect((await waitFor(batches, 'o', b.id, ['completed'])).status).toBe('completed');
    } finally {
      db.pragma('query_only = OFF');
      await batches.close();
    }
  });

  it('a results file the disk refuses (ENOSPC: /dev/full) pauses the job, which completes once it can write; it never fails', async () => {
    const dataDir = path.join(workDir, 'full-results');
    const lines = goodLines(5, 2, 'f');
    // Created by a service that runs nothing, so that its results path can be pointed at /dev/full first.
    const idle = await BatchService.open({ service: svc, dataDir, resume: false });
    const b = await idle.create({ owner: 'o', model: 'svc-alpha', upload: await idle.stageUpload(Readable.from([lines.join('\n')])) });
    await idle.close();
    const results = path.join(dataDir, 'batches', b.id, 'results.jsonl');
    await symlink('/dev/full', results);
    const logged: string[] = [];
    const batches = await BatchService.open({ service: svc, dataDir, log: (line) => logged.push(line) });
    try {
      const until = Date.now() + 30_000;
      while (!logged.some((l) => l.includes('runner error'))) {
        if (Date.now() > until) throw new Error(`no runner error; log: ${logged.join('\n')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(logged.find((l) => l.includes('runner error'))).toMatch(/runner error \(attempt 1; trying again in 1 s\): Error: ENOSPC/);
      expect((await batches.get('o', b.id)).status).toBe('in_progress');
      await rm(results);
      const done = await waitFor(batches, 'o', b.id, ['completed', 'failed']);
      expect(done.status).toBe('completed');
      expect(done.progress).toMatchObject({ total: 5, completed: 5, failed: 0 });
    } finally {
      await batches.close();
    }
  });

  it('keeps the input on disk and fsynced before the job exists; a job row always has its input', async () => {
    const dataDir = path.join(workDir, 'durable');
    const batches = await BatchService.open({ service: svc, dataDir });
    try {
      const text = goodLines(3, 2, 'd').join('\n');
      const upload = await batches.stageUpload(Readable.from([text]));
      expect(await readFile(upload.path, 'utf8')).toBe(text);
      const b = await batches.create({ owner: 'o', model: 'svc-alpha', upload });
      expect(existsSync(upload.path)).toBe(false);
      expect(await readFile(path.join(dataDir, 'batches', b.id, 'input.jsonl'), 'utf8')).toBe(text);
      await waitFor(batches, 'o', b.id, ['completed']);
      // A rejected create removes its staged upload.
      const bad = await batches.stageUpload(Readable.from([text]));
      await expect(batches.create({ owner: 'o', model: 'nope', upload: bad })).rejects.toMatchObject({ code: 'not_found' });
      expect(existsSync(bad.path)).toBe(false);
    } finally {
      await batches.close();
    }
  });
});
