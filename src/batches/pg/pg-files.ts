/**
 * The Postgres file store (DECIDE_DATABASE_URL): a row per file in decide_files and its bytes in
 * decide_file_parts, parts of at most 1 MiB read from the staged upload one at a time and written
 * in the same transaction as the row (a file exists whole or not at all). A download reads one part
 * per query. Every API host and worker sees every file. Tables: migration 3 (pg/migrations.ts),
 * applied when the batch store opens, which BatchService does before opening this.
 */
import { open as openFile } from 'node:fs/promises';
import { Readable } from 'node:stream';

import { PRIVATE_FILE_MODE } from '../private-files.js';
import { placeInNewDir } from '../uploads.js';

import { FileGoneError, type FileStore, type StagedUpload, type StoredFile } from '../ports.js';
import { storedFileFromRow, type StoredFileRow } from '../sql-rows.js';
import { inTransaction, openPool, type Pool } from './database.js';
import { answeringDatabaseOutages } from './outage.js';

/** Bytes per stored part (and the most a part holds in memory, in either direction). */
export const FILE_PART_BYTES = 1024 * 1024;

const COLUMNS = 'id, owner, filename, purpose, bytes::float8 AS bytes, records, created_at::float8 AS created_at, expires_at::float8 AS expires_at';

/** A file is listed while it has not expired at the time given (parameter $2). */
const LIVE = '(expires_at IS NULL OR expires_at > $2)';

export class PgFileStore implements FileStore {
  private constructor(private readonly pool: Pool) {}

  /** The store, its calls answering a database outage with a 503 (outage.ts). */
  static async open(url: string): Promise<PgFileStore> {
    return answeringDatabaseOutages(new PgFileStore(openPool(url, 3)));
  }

  async create(file: StoredFile, upload: StagedUpload): Promise<StoredFile> {
    const fh = await openFile(upload.path, 'r');
    try {
      await inTransaction(this.pool, async (client) => {
        await client.query('INSERT INTO decide_files (id, owner, filename, purpose, bytes, records, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
          file.id,
          file.owner,
          file.filename,
          file.purpose,
          file.bytes,
          file.records,
          file.createdAt,
          file.expiresAt,
        ]);
        const buf = Buffer.allocUnsafe(FILE_PART_BYTES);
        for (let seq = 0, position = 0; ; seq++) {
          const { bytesRead } = await fh.read(buf, 0, buf.length, position);
          if (bytesRead === 0) break;
          position += bytesRead;
          await client.query('INSERT INTO decide_file_parts (file_id, seq, data) VALUES ($1, $2, $3)', [file.id, seq, buf.subarray(0, bytesRead)]);
        }
      });
    } finally {
      await fh.close();
    }
    return file;
  }

  async get(id: string): Promise<StoredFile | undefined> {
    const { rows } = await this.pool.query<StoredFileRow>(`SELECT ${COLUMNS} FROM decide_files WHERE id = $1`, [id]);
    return rows[0] && storedFileFromRow(rows[0]);
  }

  async list(owner: string, limit: number, order: 'asc' | 'desc', now: number, after?: string): Promise<StoredFile[]> {
    const dir = order === 'asc' ? 'ASC' : 'DESC';
    const cmp = order === 'asc' ? '>' : '<';
    const { rows } =
      after === undefined
        ? await this.pool.query<StoredFileRow>(`SELECT ${COLUMNS} FROM decide_files WHERE owner = $1 AND ${LIVE} ORDER BY id ${dir} LIMIT $3`, [owner, now, limit])
        : await this.pool.query<StoredFileRow>(`SELECT ${COLUMNS} FROM decide_files WHERE owner = $1 AND ${LIVE} AND id ${cmp} $4 ORDER BY id ${dir} LIMIT $3`, [
            owner,
            now,
            limit,
            after,
          ]);
    return rows.map(storedFileFromRow);
  }

  async open(file: StoredFile): Promise<Readable> {
    const { pool } = this;
    async function* parts(): AsyncGenerator<Buffer> {
      // One part per query: a delete that commits between two of them leaves the rest missing.
      let read = 0;
      for (let seq = 0; ; seq++) {
        const { rows } = await pool.query<{ data: Buffer }>('SELECT data FROM decide_file_parts WHERE file_id = $1 AND seq = $2', [file.id, seq]);
        if (rows.length === 0) {
          if (read < file.bytes) throw new FileGoneError(file.id);
          return;
        }
        read += rows[0]!.data.length;
        yield rows[0]!.data;
      }
    }
    return Readable.from(parts(), { objectMode: false });
  }

  /** The parts, one at a time, into a private file, fsynced. */
  async copyTo(file: StoredFile, target: string): Promise<void> {
    await placeInNewDir(target, async () => {
      const out = await openFile(target, 'wx', PRIVATE_FILE_MODE);
      try {
        let position = 0;
        for await (const part of await this.open(file)) {
          const buf = part as Buffer;
          for (let done = 0; done < buf.length; ) {
            const { bytesWritten } = await out.write(buf, done, buf.length - done, position);
            done += bytesWritten;
            position += bytesWritten;
          }
        }
        await out.sync();
      } finally {
        await out.close();
      }
    });
  }

  async delete(id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('DELETE FROM decide_files WHERE id = $1', [id]);
    return rowCount === 1;
  }

  async deleteExpired(now: number): Promise<string[]> {
    // Every host sweeps; DELETE ... RETURNING hands each row to one of them. The parts go with it (ON DELETE CASCADE).
    const { rows } = await this.pool.query<{ id: string }>('DELETE FROM decide_files WHERE expires_at <= $1 RETURNING id', [now]);
    return rows.map((r) => r.id);
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}
