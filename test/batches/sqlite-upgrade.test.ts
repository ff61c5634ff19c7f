/**
 * A `batches.sqlite` written by an earlier release opens: the OpenAI file table made before uploads
 * expired gains `expires_at`, its rows read as kept until deleted (never swept), and new uploads
 * store their expiry; a job table made before row statuses were kept gains `failed_bytes`, and each
 * job's status file is written once at open from its rows; addMissingColumns leaves existing columns
 * and rows alone.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { resolveBatchSettings } from '../../src/batches/settings.js';
import { SqliteFileStore } from '../../src/batches/sqlite/sqlite-files.js';
import { addMissingColumns, openSqlite } from '../../src/batches/sqlite-driver.js';
import { SqliteBatchStore } from '../../src/batches/sqlite/sqlite-store.js';
import { UploadStaging } from '../../src/batches/uploads.js';
import { streamText } from './helpers.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'decide-sqlite-upgrade-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('an older batches.sqlite', () => {
  it('addMissingColumns adds only what is missing, with its default on the rows already there', () => {
    const db = openSqlite(path.join(dir, 't.sqlite'));
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, a INTEGER NOT NULL) STRICT');
    db.prepare('INSERT INTO t VALUES (?, ?)').run('x', 1);
    const columns: Array<[string, string]> = [
      ['a', 'INTEGER NOT NULL DEFAULT 7'],
      ['b', 'INTEGER NOT NULL DEFAULT 5'],
      ['c', 'TEXT'],
    ];
    addMissingColumns(db, 't', columns);
    addMissingColumns(db, 't', columns); // a second open changes nothing
    expect((db.prepare('PRAGMA table_info(t)').all() as Array<{ name: string }>).map((c) => c.name)).toEqual(['id', 'a', 'b', 'c']);
    expect(db.prepare('SELECT * FROM t').get()).toEqual({ id: 'x', a: 1, b: 5, c: null });
    db.close();
  });

  it('keeps the uploads of a file table made before expiry, and new uploads get theirs', async () => {
    const db = openSqlite(path.join(dir, 'batches.sqlite'));
    db.exec(`CREATE TABLE files (id TEXT PRIMARY KEY, owner TEXT NOT NULL, filename TEXT NOT NULL, purpose TEXT NOT NULL,
             bytes INTEGER NOT NULL, records INTEGER NOT NULL, created_at INTEGER NOT NULL) STRICT`);
    db.prepare('INSERT INTO files VALUES (?, ?, ?, ?, ?, ?, ?)').run('file-01OLD', 'k', 'old.jsonl', 'batch', 3, 1, 1000);
    db.close();

    const store = await SqliteFileStore.open(dir);
    try {
      const farFuture = Date.now() + 10 * 365 * 86_400_000;
      expect(await store.get('file-01OLD')).toMatchObject({ id: 'file-01OLD', expiresAt: null });
      expect(await store.deleteExpired(farFuture)).toEqual([]);
      expect((await store.list('k', 10, 'desc', farFuture)).map((f) => f.id)).toEqual(['file-01OLD']);

      const staging = new UploadStaging(path.join(dir, 'staging'), { maxFileBytes: 1 << 20, maxRecords: 10 });
      await staging.clear();
      const upload = await staging.stage(Readable.from([Buffer.from('{"custom_id":"a"}\n')]));
      const now = Date.now();
      await store.create({ id: 'file-02NEW', owner: 'k', filename: 'new.jsonl', purpose: 'batch', bytes: upload.bytes, records: upload.records, createdAt: now, expiresAt: now + 3_600_000 }, upload);
      expect((await store.get('file-02NEW'))?.expiresAt).toBe(now + 3_600_000);
      expect(await store.deleteExpired(now + 3_600_000)).toEqual(['file-02NEW']);
      expect(await store.get('file-01OLD')).toBeDefined();
    } finally {
      await store.close();
    }
  });

  it('records the row statuses of jobs written before they were kept, once, at open', async () => {
    // The job table as the release before row statuses made it, with one finished OpenAI-dialect job.
    const db = openSqlite(path.join(dir, 'batches.sqlite'));
    db.exec(`CREATE TABLE batches (id TEXT PRIMARY KEY, owner TEXT NOT NULL, model TEXT NOT NULL, requested_model TEXT NOT NULL,
             status TEXT NOT NULL, total INTEGER NOT NULL, completed INTEGER NOT NULL DEFAULT 0, failed INTEGER NOT NULL DEFAULT 0,
             created_at INTEGER NOT NULL, started_at INTEGER, completed_at INTEGER, expires_at INTEGER, error_code TEXT,
             error_message TEXT, questions TEXT, input_path TEXT NOT NULL, input_bytes INTEGER NOT NULL, results_path TEXT NOT NULL,
             input_offset INTEGER NOT NULL DEFAULT 0, input_line INTEGER NOT NULL DEFAULT 0, results_bytes INTEGER NOT NULL DEFAULT 0,
             openai TEXT, input_tokens INTEGER NOT NULL DEFAULT 0, cached_tokens INTEGER NOT NULL DEFAULT 0,
             output_tokens INTEGER NOT NULL DEFAULT 0, cancelling_at INTEGER) STRICT`);
    const id = 'batch_01JOLDOLDOLDOLDOLDOLDOLDOL';
    const row = (customId: string, status: number | null) =>
      `${JSON.stringify({ id: `batch_req_${customId}`, custom_id: customId, response: status === null ? null : { status_code: status, request_id: 'r', body: {} }, error: status === null ? { code: 'invalid_question', message: 'bad' } : null })}\n`;
    const rows = [row('a', 200), row('b', 400), row('c', 200), row('d', null), row('e', 200)];
    // A row written after the last commit (a crash): not committed, never served.
    const results = rows.join('') + row('f', 200);
    const committed = Buffer.byteLength(rows.join(''));
    await mkdir(path.join(dir, 'batches', id), { recursive: true });
    await writeFile(path.join(dir, 'batches', id, 'input.jsonl'), 'x\n'.repeat(6));
    await writeFile(path.join(dir, 'batches', id, 'results.jsonl'), results);
    const now = Date.now();
    db.prepare(
      `INSERT INTO batches (id, owner, model, requested_model, status, total, completed, failed, created_at, completed_at, expires_at,
       input_path, input_bytes, results_path, input_offset, input_line, results_bytes, openai)
       VALUES (?, 'k', 'm', 'm', 'completed', 5, 3, 2, ?, ?, ?, ?, 12, ?, 12, 6, ?, ?)`,
    ).run(id, now, now, now + 3_600_000, path.join('batches', id, 'input.jsonl'), path.join('batches', id, 'results.jsonl'), committed, JSON.stringify({ endpoint: '/v1/decide', inputFileId: 'file-x', completionWindow: '24h', metadata: null }));
    db.close();

    const open = () =>
      SqliteBatchStore.open({
        dataDir: dir,
        settings: resolveBatchSettings({ env: {} }),
        service: { decideRecords: async () => [], resolveModel: (m) => m, runtime: async () => undefined },
        work: false,
        log: () => undefined,
      });
    const store = await open();
    try {
      const job = (await store.get(id))!;
      const failedRows = rows[1]! + rows[3]!;
      expect(job.failedBytes).toBe(Buffer.byteLength(failedRows));
      const answered = await store.openResults(job, 'answered');
      expect(answered.bytes).toBe(committed - Buffer.byteLength(failedRows));
      expect(await streamText(answered.stream)).toBe(rows[0]! + rows[2]! + rows[4]!);
      const failed = await store.openResults(job, 'failed');
      expect([failed.bytes, await streamText(failed.stream)]).toEqual([Buffer.byteLength(failedRows), failedRows]);
      expect(await streamText((await store.openResults(job, 'all')).stream)).toBe(rows.join(''));
      expect(await readFile(path.join(dir, 'batches', id, 'row-status'), 'latin1')).toBe('01010');
    } finally {
      await store.close();
    }
    // Once: a second open finds every job indexed and leaves the status file alone.
    await rm(path.join(dir, 'batches', id, 'row-status'));
    const again = await open();
    await again.close();
    expect(existsSync(path.join(dir, 'batches', id, 'row-status'))).toBe(false);
  });
});
