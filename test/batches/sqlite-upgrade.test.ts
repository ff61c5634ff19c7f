/**
 * A `batches.sqlite` written by an earlier release opens: the OpenAI file table made before uploads
 * expired gains `expires_at`, its rows read as kept until deleted (never swept), and new uploads
 * store their expiry; addMissingColumns leaves existing columns and rows alone.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { SqliteFileStore } from '../../src/batches/sqlite/sqlite-files.js';
import { addMissingColumns, openSqlite } from '../../src/batches/sqlite/sqlite-driver.js';
import { UploadStaging } from '../../src/batches/uploads.js';

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
});
