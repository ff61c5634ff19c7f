/**
 * The embedded file store (no DECIDE_DATABASE_URL): one row per file in `<dataDir>/batches.sqlite`
 * (table `files`, its own connection beside the job table's), the bytes in
 * `<dataDir>/files/<id>/content.jsonl`, private as the job files are (0700 dirs, 0600 files).
 * The bytes are moved in, fsynced, before the row commits; a crash between leaves a directory
 * without a row, removed at the next open.
 */
import { copyFile, link, open, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';

import { FileGoneError, type FileStore, type StagedUpload, type StoredFile } from '../ports.js';
import { privateDir, SQLITE_DATABASE_FILE } from '../private-files.js';
import { answeringStorageFailures } from '../storage-failures.js';
import { storedFileFromRow, type StoredFileRow } from '../sql-rows.js';
import { moveUploadInto, placeInNewDir } from '../uploads.js';
import { addMissingColumns, openSqlite, type SqliteDatabase } from '../sqlite-driver.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS files (
  id         TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,
  filename   TEXT NOT NULL,
  purpose    TEXT NOT NULL,
  bytes      INTEGER NOT NULL,
  records    INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS files_by_owner ON files (owner, id);
`;

/** Columns added after the first release: a database created before them gets them at open. */
const ADDED_COLUMNS: ReadonlyArray<[name: string, definition: string]> = [['expires_at', 'INTEGER']];

/** A file is listed while it has not expired at the time given. */
const LIVE = '(expires_at IS NULL OR expires_at > ?)';

export class SqliteFileStore implements FileStore {
  private readonly db: SqliteDatabase;
  private readonly filesDir: string;

  private constructor(dataDir: string) {
    // The job table (sqlite-jobs.ts) created the file 0600 in WAL mode before this opens it.
    this.db = openSqlite(path.join(dataDir, SQLITE_DATABASE_FILE));
    this.db.pragma('synchronous = FULL');
    this.db.exec(SCHEMA);
    addMissingColumns(this.db, 'files', ADDED_COLUMNS);
    this.filesDir = path.join(dataDir, 'files');
  }

  /** Opens the table and removes directories no row owns (a crash between the move and the commit). */
  static async open(dataDir: string): Promise<SqliteFileStore> {
    const store = new SqliteFileStore(dataDir);
    privateDir(store.filesDir);
    const known = new Set((store.db.prepare('SELECT id FROM files').all() as Array<{ id: string }>).map((r) => r.id));
    for (const name of await readdir(store.filesDir)) {
      if (!known.has(name)) await rm(path.join(store.filesDir, name), { recursive: true, force: true });
    }
    return answeringStorageFailures(store);
  }

  private contentPath(id: string): string {
    return path.join(this.filesDir, id, 'content.jsonl');
  }

  async create(file: StoredFile, upload: StagedUpload): Promise<StoredFile> {
    await moveUploadInto(upload, this.contentPath(file.id));
    this.db
      .prepare('INSERT INTO files (id, owner, filename, purpose, bytes, records, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(file.id, file.owner, file.filename, file.purpose, file.bytes, file.records, file.createdAt, file.expiresAt);
    return file;
  }

  async get(id: string): Promise<StoredFile | undefined> {
    const row = this.db.prepare('SELECT * FROM files WHERE id = ?').get(id) as StoredFileRow | undefined;
    return row && storedFileFromRow(row);
  }

  async list(owner: string, limit: number, order: 'asc' | 'desc', now: number, after?: string): Promise<StoredFile[]> {
    const dir = order === 'asc' ? 'ASC' : 'DESC';
    const cmp = order === 'asc' ? '>' : '<';
    const rows = (
      after === undefined
        ? this.db.prepare(`SELECT * FROM files WHERE owner = ? AND ${LIVE} ORDER BY id ${dir} LIMIT ?`).all(owner, now, limit)
        : this.db.prepare(`SELECT * FROM files WHERE owner = ? AND ${LIVE} AND id ${cmp} ? ORDER BY id ${dir} LIMIT ?`).all(owner, now, after, limit)
    ) as StoredFileRow[];
    return rows.map(storedFileFromRow);
  }

  async open(file: StoredFile): Promise<Readable> {
    // Opened before streaming, so a delete meanwhile cannot cut the download.
    const fh = await open(this.contentPath(file.id), 'r');
    return fh.createReadStream({ autoClose: true });
  }

  /**
   * A hard link: an upload's bytes never change, and deleting the upload removes only its own name.
   * Copied where a link cannot be made (the two directories on different file systems).
   */
  async copyTo(file: StoredFile, target: string): Promise<void> {
    const source = this.contentPath(file.id);
    try {
      await placeInNewDir(target, async () => {
        try {
          await link(source, target);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK') throw err;
          await copyFile(source, target);
          const fh = await open(target, 'r+');
          await fh.sync().finally(() => fh.close());
        }
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && (err as NodeJS.ErrnoException).path === source) throw new FileGoneError(file.id);
      throw err;
    }
  }

  async delete(id: string): Promise<boolean> {
    const { changes } = this.db.prepare('DELETE FROM files WHERE id = ?').run(id);
    await rm(path.join(this.filesDir, id), { recursive: true, force: true });
    return changes === 1;
  }

  async deleteExpired(now: number): Promise<string[]> {
    const ids = (this.db.prepare('SELECT id FROM files WHERE expires_at <= ?').all(now) as Array<{ id: string }>).map((r) => r.id);
    // Row first: from then on the file is not found, so removing its bytes cannot cut a reader short
    // (a download already streaming holds its file handle open).
    for (const id of ids) await this.delete(id);
    return ids;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
