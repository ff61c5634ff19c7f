/**
 * The BatchStore contract, run against both stores through BatchService with the real engine (tiny
 * model): SQLite under a data dir, and Postgres (a real server started here). The same mixed file
 * gives the same rows, in input order, with the same failure codes; ownership, listing, cancel and
 * retention behave alike, and a job created under a clock ahead of the one that ends it is never
 * stamped before its creation. Postgres only: a job created through one service is read, downloaded and
 * cancelled through another on the same database (API hosts keep no state), and several stores
 * opening a fresh database at once apply each migration exactly once. SQLite only: an upload deleted
 * while it is downloaded is served in full (docs/compatibility.md says what each store does).
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BatchService, type BatchServiceOptions } from '../../src/batches/batch-service.js';
import { FileGoneError } from '../../src/batches/ports.js';
import { FILE_EXPIRY_SECONDS, OpenAiBatchApi } from '../../src/batches/openai/openai-batches.js';
import { OpenAiWireError } from '../../src/batches/openai/errors.js';
import type { OpenAiBatch } from '../../src/batches/openai/wire.js';
import { MIGRATION_VERSIONS } from '../../src/batches/pg/migrations.js';
import { openSqlite } from '../../src/batches/sqlite-driver.js';
import type { DecisionService } from '../../src/service/decision-service.js';
import type { TestPostgres } from '../helpers/postgres.js';
import { closePgWorkspace, goodLines, maxProbDiff, mixedFile, openPgWorkspace, parseRows, type ResultRow, streamText } from './helpers.js';

let workDir: string;
let modelsDir: string;
let svc: DecisionService;
let postgres: TestPostgres;
let dbCount = 0;

beforeAll(async () => {
  ({ workDir, modelsDir, svc, postgres } = await openPgWorkspace('batch-store'));
}, 120_000);

afterAll(async () => {
  await closePgWorkspace({ workDir, svc, postgres });
});

async function waitFor(batches: BatchService, owner: string, id: string, statuses: string[]) {
  const until = Date.now() + 60_000;
  for (;;) {
    const b = await batches.get(owner, id);
    if (statuses.includes(b.status)) return b;
    if (['completed', 'failed', 'cancelled', 'expired'].includes(b.status)) throw new Error(`batch ${id} ended ${b.status}: ${JSON.stringify(b.error)}`);
    if (Date.now() > until) throw new Error(`batch ${id} still ${b.status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const stores: Array<{ kind: string; options: () => Promise<Partial<BatchServiceOptions>> }> = [
  { kind: 'sqlite', options: async () => ({ databaseUrl: '' }) },
  { kind: 'postgres', options: async () => ({ databaseUrl: await postgres.database(`contract_${++dbCount}`) }) },
];

const outputs = new Map<string, ResultRow[]>();

describe.each(stores)('BatchStore contract: $kind', ({ kind, options }) => {
  let batches: BatchService;
  let databaseUrl: string | undefined;
  beforeAll(async () => {
    const opened = await options();
    databaseUrl = opened.databaseUrl || undefined;
    batches = await BatchService.open({ service: svc, dataDir: path.join(workDir, kind), chunk: { chunkRecords: 4 }, ...opened });
    expect(batches.store.kind).toBe(kind);
  });
  afterAll(async () => batches?.close());

  it('completes the mixed file: one row per non-blank line, in order, with the failure codes', async () => {
    const { text: file, expected } = mixedFile();
    const b = await batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([file])) });
    expect(b.status).toBe('queued');
    const done = await waitFor(batches, 'o', b.id, ['completed']);
    expect(done.progress).toEqual({ total: expected.length, completed: expected.filter((e) => !e.code).length, failed: expected.filter((e) => e.code).length });
    const { stream, bytes } = await batches.openResults('o', b.id);
    const body = await streamText(stream);
    expect(Buffer.byteLength(body)).toBe(bytes);
    const rows = parseRows(body);
    expect(rows.map((r) => ({ custom_id: r.custom_id, ...(r.error ? { code: r.error.code } : {}) }))).toEqual(expected);
    outputs.set(kind, rows);
    if (outputs.size === 2) {
      const [a, c] = [...outputs.values()];
      a!.forEach((row, i) => expect(maxProbDiff(row, c![i]!)).toBeLessThanOrEqual(1e-6 + 1e-12)); // rows round probabilities to 6 decimals
    }
  });

  it('hides another owner\'s job, refuses results before the end, lists newest first', async () => {
    const first = await batches.create({ owner: 'lister', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([goodLines(2).join('\n')])) });
    const second = await batches.create({ owner: 'lister', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([goodLines(2).join('\n')])) });
    await expect(batches.get('someone-else', first.id)).rejects.toMatchObject({ code: 'not_found' });
    const page = await batches.list('lister', { limit: '1' });
    expect(page.data.map((b) => b.id)).toEqual([second.id]);
    expect(page.has_more).toBe(true);
    const next = await batches.list('lister', { limit: '1', after: second.id });
    expect(next.data.map((b) => b.id)).toEqual([first.id]);
    await waitFor(batches, 'lister', first.id, ['completed']);
    await waitFor(batches, 'lister', second.id, ['completed']);
  });

  it('cancels a job, keeping only rows committed before it, and expires results after retention', async () => {
    const lines = goodLines(400, 3, 'c');
    const b = await batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([lines.join('\n')])) });
    const cancelled = await batches.cancel('o', b.id);
    expect(['cancelling', 'cancelled']).toContain(cancelled.status);
    const final = await waitFor(batches, 'o', b.id, ['cancelled']);
    expect(final.progress.completed).toBeLessThan(400);
    await batches.whenIdle();
    const rows = parseRows(await streamText((await batches.openResults('o', b.id)).stream));
    // The rows kept are exactly the first ones, in order, and as many as the progress says.
    expect(rows.map((r) => r.custom_id)).toEqual(lines.slice(0, rows.length).map((l) => (JSON.parse(l) as { custom_id: string }).custom_id));
    expect(rows.length).toBe((await batches.get('o', b.id)).progress.completed);
    await batches.sweep(Date.now() + batches.retentionMs + 1);
    expect((await batches.get('o', b.id)).status).toBe('expired');
    await expect(batches.openResults('o', b.id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it("an expired job keeps its row but not its form's questions (text no one reads again)", async () => {
    const questions = JSON.stringify({ q: { type: 'noul', instructions: `Is it urgent? ${'Consider every detail. '.repeat(100)}` } });
    const states = ['parcel late', 'charged twice'].map((state, i) => JSON.stringify({ custom_id: `x-${i}`, state }));
    const b = await batches.create({ owner: 'o', model: 'svc-alpha', questions, upload: await batches.stageUpload(Readable.from([states.join('\n')])) });
    await waitFor(batches, 'o', b.id, ['completed']);
    expect((await batches.store.get(b.id))?.questions).toBe(questions);
    await batches.sweep(Date.now() + batches.retentionMs + 1);
    expect((await batches.get('o', b.id)).status).toBe('expired');
    expect((await batches.store.get(b.id))?.questions).toBeNull();
  });

  it("serves an OpenAI batch's output and error files by the status stored with each row: no row is read to count or split them", async () => {
    const api = await OpenAiBatchApi.open(batches);
    try {
      const questions = { q: { type: 'noul', instructions: 'Is it urgent?' } };
      const lines = Array.from({ length: 10 }, (_, i) =>
        JSON.stringify({ custom_id: `s-${i}`, method: 'POST', url: '/v1/decide', body: i % 3 === 2 ? { model: 'svc-alpha', state: 'x', questions: { q: { type: 'bogus', instructions: '?' } } } : { model: 'svc-alpha', state: `ticket ${i}`, questions } }),
      );
      const file = await api.upload('s', { purpose: 'batch', filename: 's.jsonl', upload: await batches.stageUpload(Readable.from([`${lines.join('\n')}\n`])) });
      const batch = await api.createBatch('s', { input_file_id: file.id, endpoint: '/v1/decide', completion_window: '24h' });
      if (kind === 'sqlite') {
        // The batch's input is the upload itself, linked, not a second copy staged from it.
        const dataDir = path.join(workDir, kind);
        expect((await stat(path.join(dataDir, 'batches', batch.id, 'input.jsonl'))).ino).toBe((await stat(path.join(dataDir, 'files', file.id, 'content.jsonl'))).ino);
      }
      expect((await waitFor(batches, 's', batch.id, ['completed'])).progress).toEqual({ total: 10, completed: 7, failed: 3 });
      const ids = { output: `file-output-${batch.id.slice('batch_'.length)}`, errors: `file-errors-${batch.id.slice('batch_'.length)}` };
      const served = { output: await streamText(await api.fileContent('s', ids.output)), errors: await streamText(await api.fileContent('s', ids.errors)) };
      for (const kindOf of ['output', 'errors'] as const) expect((await api.getFile('s', ids[kindOf])).bytes).toBe(Buffer.byteLength(served[kindOf]));
      const statusOf = (text: string) => text.trim().split('\n').map((l) => [(JSON.parse(l) as { custom_id: string }).custom_id, (JSON.parse(l) as { response: { status_code: number } }).response.status_code]);
      expect(statusOf(served.output)).toEqual(['s-0', 's-1', 's-3', 's-4', 's-6', 's-7', 's-9'].map((id) => [id, 200]));
      expect(statusOf(served.errors)).toEqual(['s-2', 's-5', 's-8'].map((id) => [id, 400]));

      // Every row's bytes replaced (same lengths) by text that is no JSON at all: the file objects
      // and the split are unchanged, so neither reads a row (the split and the counts were worked out
      // again from each row's JSON on every call before).
      const blank = (row: string) => `${'x'.repeat(Buffer.byteLength(row) - 1)}\n`;
      if (kind === 'sqlite') {
        const results = path.join(workDir, kind, 'batches', batch.id, 'results.jsonl');
        const rows = (await readFile(results, 'utf8')).split(/(?<=\n)/);
        await writeFile(results, rows.map(blank).join(''));
      } else {
        const db = new pg.Client({ connectionString: databaseUrl });
        await db.connect();
        await db.query(`UPDATE decide_batch_results SET row = repeat('x', octet_length(row) - 1) || E'\\n' WHERE job_id = $1`, [batch.id]).finally(() => db.end());
      }
      for (const kindOf of ['output', 'errors'] as const) {
        expect((await api.getFile('s', ids[kindOf])).bytes).toBe(Buffer.byteLength(served[kindOf]));
        expect(await streamText(await api.fileContent('s', ids[kindOf]))).toBe(served[kindOf].split(/(?<=\n)/).map(blank).join(''));
      }
    } finally {
      await api.close();
    }
  });

  it('lets an unexpected file store error through batch creation as itself, not as a missing input file', async () => {
    const api = await OpenAiBatchApi.open(batches);
    const line = JSON.stringify({ custom_id: 'u-0', method: 'POST', url: '/v1/decide', body: { model: 'svc-alpha', state: 'x', questions: { q: { type: 'noul', instructions: 'Is it?' } } } });
    const file = await api.upload('u', { purpose: 'batch', filename: 'u.jsonl', upload: await batches.stageUpload(Readable.from([`${line}\n`])) });
    await api.close(); // its store closed: reading the file's row now fails
    const refused = await api.createBatch('u', { input_file_id: file.id, endpoint: '/v1/decide', completion_window: '24h' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(Error);
    expect(refused).not.toBeInstanceOf(OpenAiWireError);
  });

  it('keeps how an OpenAI batch ended once it expires: completed_at or cancelled_at stays, the others stay null', async () => {
    const api = await OpenAiBatchApi.open(batches);
    try {
      const line = (i: number) => JSON.stringify({ custom_id: `e-${i}`, method: 'POST', url: '/v1/decide', body: { model: 'svc-alpha', state: `ticket ${i}`, questions: { q: { type: 'noul', instructions: 'Is it urgent?' } } } });
      const make = async (n: number) => {
        const file = await api.upload('exp', { purpose: 'batch', filename: 'e.jsonl', upload: await batches.stageUpload(Readable.from([`${Array.from({ length: n }, (_, i) => line(i)).join('\n')}\n`])) });
        return api.createBatch('exp', { input_file_id: file.id, endpoint: '/v1/decide', completion_window: '24h' });
      };
      const done = await make(2);
      await waitFor(batches, 'exp', done.id, ['completed']);
      const cancelled = await make(400);
      await batches.cancel('exp', cancelled.id);
      await waitFor(batches, 'exp', cancelled.id, ['cancelled']);
      const shown = async () => ({ done: (await batches.show('exp', done.id)) as OpenAiBatch, cancelled: (await batches.show('exp', cancelled.id)) as OpenAiBatch });
      const before = await shown();
      expect(before.done.completed_at).toEqual(expect.any(Number));
      expect(before.cancelled.cancelled_at).toEqual(expect.any(Number));
      await batches.whenIdle();
      await batches.sweep(Date.now() + batches.retentionMs + 1);
      const after = await shown();
      expect(after.done).toMatchObject({ status: 'expired', completed_at: before.done.completed_at, failed_at: null, cancelled_at: null, output_file_id: null });
      expect(after.done.expired_at).toEqual(expect.any(Number));
      expect(after.cancelled).toMatchObject({ status: 'expired', completed_at: null, failed_at: null, cancelled_at: before.cancelled.cancelled_at });
    } finally {
      await api.close();
    }
  });

  it("expires uploads as OpenAI's Files API does: hidden once due, swept with their bytes; a batch made from one keeps its input", async () => {
    const api = await OpenAiBatchApi.open(batches);
    try {
      const line = JSON.stringify({ custom_id: 'x', method: 'POST', url: '/v1/decide', body: { model: 'svc-alpha', state: 'a ticket', questions: { q: { type: 'noul', instructions: 'Is it urgent?' } } } });
      const stage = async () => batches.stageUpload(Readable.from([`${line}\n`]));
      const hour = await api.upload('f', { purpose: 'batch', filename: 'hour.jsonl', upload: await stage(), expiresAfter: { anchor: 'created_at', seconds: '3600' } });
      const month = await api.upload('f', { purpose: 'batch', filename: 'month.jsonl', upload: await stage() });
      expect(hour.expires_at).toBe(hour.created_at + 3600);
      expect(month.expires_at).toBe(month.created_at + FILE_EXPIRY_SECONDS.default);
      const batch = await api.createBatch('f', { input_file_id: hour.id, endpoint: '/v1/decide', completion_window: '24h' });

      const past = (expiresAt: number) => expiresAt * 1000 + 1000;
      // Listed until due; once due it is gone from the list even before a sweep deletes it.
      expect((await api.files.list('f', 10, 'asc', Date.now())).map((f) => f.id)).toEqual([hour.id, month.id]);
      expect((await api.files.list('f', 10, 'asc', past(hour.expires_at!))).map((f) => f.id)).toEqual([month.id]);
      await api.sweepExpiredFiles(past(hour.expires_at!));
      expect(await api.files.get(hour.id)).toBeUndefined();
      await expect(api.getFile('f', hour.id)).rejects.toMatchObject({ wire: { status: 404 } });
      await expect(api.fileContent('f', hour.id)).rejects.toMatchObject({ wire: { status: 404 } });
      expect((await api.getFile('f', month.id)).id).toBe(month.id);
      expect(await streamText(await api.fileContent('f', month.id))).toBe(`${line}\n`);

      const done = await waitFor(batches, 'f', batch.id, ['completed']);
      expect(done.progress).toEqual({ total: 1, completed: 1, failed: 0 });
      await api.sweepExpiredFiles(past(month.expires_at!));
      expect(await api.files.get(month.id)).toBeUndefined();
    } finally {
      await api.close();
    }
  });
});

describe.each(stores)('a wall clock set back between runs: $kind', ({ kind, options }) => {
  it("never stamps a job before its own earlier stamps, and counts its retention from the stamp it got", async () => {
    const { databaseUrl = '' } = await options();
    const open = (resume: boolean) => BatchService.open({ service: svc, dataDir: path.join(workDir, `${kind}-clock-back`), chunk: { chunkRecords: 4 }, databaseUrl, resume });
    let batches = await open(false);
    const create = async () => (await batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([goodLines(6).join('\n')])) })).id;
    const [ran, cancelled] = [await create(), await create()];
    await batches.close();
    // Created (queued) under a clock a day ahead of the one that now runs and cancels them.
    const ahead = Date.now() + 86_400_000;
    if (kind === 'sqlite') {
      const db = openSqlite(path.join(workDir, `${kind}-clock-back`, 'batches.sqlite'));
      db.prepare('UPDATE batches SET created_at = ?').run(ahead);
      db.close();
    } else {
      const db = new pg.Client({ connectionString: databaseUrl });
      await db.connect();
      await db.query('UPDATE decide_batch_jobs SET created_at = $1', [ahead]).finally(() => db.end());
    }
    batches = await open(false);
    expect((await batches.cancel('o', cancelled)).status).toBe('cancelled');
    await batches.close();
    batches = await open(true);
    try {
      await waitFor(batches, 'o', ran, ['completed']);
      const [done, gone] = [(await batches.store.get(ran))!, (await batches.store.get(cancelled))!];
      expect(done.createdAt).toBe(ahead);
      expect(done.startedAt).toBeGreaterThanOrEqual(done.createdAt);
      expect(done.completedAt).toBeGreaterThanOrEqual(done.startedAt!);
      expect(done.expiresAt).toBe(done.completedAt! + batches.retentionMs);
      expect(gone).toMatchObject({ createdAt: ahead, completedAt: ahead, cancellingAt: ahead, expiresAt: ahead + batches.retentionMs });
      // Retention runs from the stamps kept: a second before it ends, neither job expires (from this
      // clock's own stamps, both would be a day past it).
      await batches.sweep(ahead + batches.retentionMs - 1000);
      expect((await batches.get('o', ran)).status).toBe('completed');
      expect((await batches.get('o', cancelled)).status).toBe('cancelled');
    } finally {
      await batches.close();
    }
  });
});

describe('SQLite: an upload deleted while it is downloaded', () => {
  it('is served in full: the download reads the file it opened before the delete (Postgres breaks off instead, below)', async () => {
    const batches = await BatchService.open({ service: svc, dataDir: path.join(workDir, 'sqlite-delete-mid-read'), databaseUrl: '', resume: false });
    const api = await OpenAiBatchApi.open(batches);
    try {
      const bytes = Buffer.from(`${goodLines(20_000, 5, 'd').join('\n')}\n`); // several read pieces
      const file = await api.upload('d', { purpose: 'batch', filename: 'd.jsonl', upload: await batches.stageUpload(Readable.from([bytes])) });
      const stream = await api.fileContent('d', file.id);
      const pieces: Buffer[] = [];
      const iterator = stream[Symbol.asyncIterator]();
      const first = await iterator.next();
      pieces.push(first.value as Buffer);
      expect(pieces[0]!.length).toBeLessThan(bytes.length);
      await api.deleteFile('d', file.id);
      await expect(api.getFile('d', file.id)).rejects.toMatchObject({ wire: { status: 404 } });
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) pieces.push(next.value as Buffer);
      expect(Buffer.concat(pieces).equals(bytes)).toBe(true);
    } finally {
      await api.close();
      await batches.close();
    }
  });
});

describe('Postgres: hosts keep no state; migrations', () => {
  it('creates on one service, reads, downloads and cancels on another on the same database', async () => {
    const url = await postgres.database('two_hosts');
    // Host A only serves: nothing works on the job until host B (which works) opens.
    const a = await BatchService.open({ service: svc, dataDir: path.join(workDir, 'host-a'), databaseUrl: url, resume: false });
    const lines = goodLines(30, 9, 'h');
    const created = await a.create({ owner: 'o', model: 'svc-alpha', upload: await a.stageUpload(Readable.from([lines.join('\n')])) });
    const b = await BatchService.open({ service: svc, dataDir: path.join(workDir, 'host-b'), databaseUrl: url, chunk: { chunkRecords: 4 } });
    try {
      expect((await b.get('o', created.id)).id).toBe(created.id);
      await waitFor(a, 'o', created.id, ['completed']);
      const fromA = parseRows(await streamText((await a.openResults('o', created.id)).stream));
      const fromB = parseRows(await streamText((await b.openResults('o', created.id)).stream));
      expect(fromA.map((r) => r.custom_id)).toEqual(lines.map((l) => (JSON.parse(l) as { custom_id: string }).custom_id));
      expect(fromB).toEqual(fromA);
      const other = await a.create({ owner: 'o', model: 'svc-alpha', upload: await a.stageUpload(Readable.from([goodLines(300, 4, 'k').join('\n')])) });
      expect((await b.cancel('o', other.id)).status).toBe('cancelled');
      expect((await a.get('o', other.id)).status).toBe('cancelled');
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('never makes a batch or a download from an upload cut short while it is read (its parts deleted meanwhile)', async () => {
    const url = await postgres.database('cut_upload');
    const batches = await BatchService.open({ service: svc, dataDir: path.join(workDir, 'cut-upload'), databaseUrl: url, resume: false });
    const api = await OpenAiBatchApi.open(batches);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const body = { model: 'svc-alpha', state: 'x'.repeat(1000), questions: { q: { type: 'noul', instructions: 'Is it urgent?' } } };
      const lines = Array.from({ length: 2500 }, (_, i) => JSON.stringify({ custom_id: `c-${i}`, method: 'POST', url: '/v1/decide', body })).join('\n');
      const file = await api.upload('o', { purpose: 'batch', filename: 'big.jsonl', upload: await batches.stageUpload(Readable.from([lines])) });
      expect(file.bytes).toBeGreaterThan(2 * 1024 * 1024);
      // What a reader sees when a delete commits between its part reads: the first part, then nothing.
      await db.query('DELETE FROM decide_file_parts WHERE file_id = $1 AND seq >= 1', [file.id]);
      await expect(api.createBatch('o', { input_file_id: file.id, endpoint: '/v1/decide', completion_window: '24h' })).rejects.toMatchObject({
        wire: { status: 404, body: { error: { param: 'input_file_id', message: expect.stringContaining('deleted while the batch was being created') } } },
      });
      expect((await batches.list('o', {})).data).toEqual([]);
      // A download fails instead of ending early (a 200 with part of the file would look complete).
      await expect(streamText(await api.fileContent('o', file.id))).rejects.toBeInstanceOf(FileGoneError);
    } finally {
      await db.end();
      await api.close();
      await batches.close();
    }
  });

  it('a result download that outlives its job (expired meanwhile) fails instead of ending early', async () => {
    const url = await postgres.database('expiring_results');
    const batches = await BatchService.open({ service: svc, dataDir: path.join(workDir, 'expiring-results'), databaseUrl: url, chunk: { chunkRecords: 4 } });
    try {
      const b = await batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([goodLines(6, 2, 'r').join('\n')])) });
      await waitFor(batches, 'o', b.id, ['completed']);
      const { stream } = await batches.openResults('o', b.id);
      await batches.sweep(Date.now() + batches.retentionMs + 1);
      await expect(streamText(stream)).rejects.toThrow(/deleted \(expired\) while they were read/);
    } finally {
      await batches.close();
    }
  });

  it('migration 7 works out the status of every row written before it, and the failed rows\' bytes', async () => {
    const url = await postgres.database('row_status');
    const open = () => BatchService.open({ service: svc, dataDir: path.join(workDir, 'row-status'), databaseUrl: url, chunk: { chunkRecords: 4 } });
    let batches = await open();
    let api = await OpenAiBatchApi.open(batches);
    const questions = { q: { type: 'noul', instructions: 'Is it urgent?' } };
    const lines = Array.from({ length: 9 }, (_, i) =>
      JSON.stringify({ custom_id: `m-${i}`, method: 'POST', url: '/v1/decide', body: { model: 'svc-alpha', state: `t ${i}`, questions: i % 4 === 1 ? { q: { type: 'bogus', instructions: '?' } } : questions } }),
    );
    const file = await api.upload('o', { purpose: 'batch', filename: 'm.jsonl', upload: await batches.stageUpload(Readable.from([lines.join('\n')])) });
    const openaiJob = await api.createBatch('o', { input_file_id: file.id, endpoint: '/v1/decide', completion_window: '24h' });
    const mixed = await batches.create({ owner: 'o', model: 'svc-alpha', upload: await batches.stageUpload(Readable.from([mixedFile().text])) });
    await waitFor(batches, 'o', openaiJob.id, ['completed']);
    await waitFor(batches, 'o', mixed.id, ['completed']);
    const suffix = openaiJob.id.slice('batch_'.length);
    const read = async () => ({
      output: await streamText(await api.fileContent('o', `file-output-${suffix}`)),
      errors: await streamText(await api.fileContent('o', `file-errors-${suffix}`)),
      errorBytes: (await api.getFile('o', `file-errors-${suffix}`)).bytes,
      jobs: (await batches.store.get(openaiJob.id))!.failedBytes + (await batches.store.get(mixed.id))!.failedBytes,
    });
    const before = await read();
    expect(before.errors.trim().split('\n').map((l) => (JSON.parse(l) as { custom_id: string }).custom_id)).toEqual(['m-1', 'm-5']);
    await api.close();
    await batches.close();

    // The database as migration 6 left it: rows without a status, jobs without failed bytes.
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      await db.query('ALTER TABLE decide_batch_results DROP COLUMN failed');
      await db.query('ALTER TABLE decide_batch_jobs DROP COLUMN failed_bytes');
      await db.query('DELETE FROM decide_schema_migrations WHERE version = 7');
    } finally {
      await db.end();
    }
    batches = await open();
    api = await OpenAiBatchApi.open(batches);
    try {
      expect(await read()).toEqual(before);
      const mixedErrors = parseRows(await streamText((await batches.openResults('o', mixed.id)).stream)).filter((r) => r.error);
      expect(mixedErrors.length).toBe((await batches.get('o', mixed.id)).progress.failed);
    } finally {
      await api.close();
      await batches.close();
    }
  });

  it('applies each migration once when several processes open a fresh database at once', async () => {
    const url = await postgres.database('migrate_race');
    const opened = await Promise.all(
      Array.from({ length: 4 }, (_, i) => BatchService.open({ service: svc, dataDir: path.join(workDir, `race-${i}`), databaseUrl: url, resume: false })),
    );
    await Promise.all(opened.map((s) => s.close()));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ version: number }>('SELECT version FROM decide_schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(MIGRATION_VERSIONS);
    } finally {
      await client.end();
    }
  });
});
