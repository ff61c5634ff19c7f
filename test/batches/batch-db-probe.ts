/**
 * The test's own connection to a server's `<data-dir>/batches.sqlite`: reads a job's committed
 * progress, and holds the database's write lock. The server commits every chunk in a transaction
 * (src/batches/sqlite/sqlite-jobs.ts), so while the test holds the lock the server can still score
 * and write rows but commits nothing and cannot finish the job: a SIGKILL sent then lands mid-job
 * for certain, whatever the machine's speed. WAL mode lets both sides read meanwhile.
 */
import { createRequire } from 'node:module';

import { sqliteDriverPackage } from '../../src/batches/sqlite-driver.js';

interface Database {
  prepare(sql: string): { get(...params: unknown[]): unknown };
  exec(sql: string): void;
  close(): void;
}

export interface CommittedJob {
  status: string;
  total: number;
  /** Rows committed: completed + failed. */
  rows: number;
  /** Committed length of the results file. */
  resultsBytes: number;
  /** Relative to the data dir. */
  resultsPath: string;
}

const require = createRequire(import.meta.url);

export class BatchDbProbe {
  private readonly db: Database;

  /** `file` must already exist: open it after the server has created it. */
  constructor(file: string) {
    // The driver the store itself uses on this Node: better-sqlite3 12 compiled for Node 24.19 or
    // later aborts the test process when its database is collected (src/batches/sqlite-driver.ts).
    const Sqlite = require(sqliteDriverPackage()) as new (file: string, options: { fileMustExist: boolean; timeout: number }) => Database;
    // The server holds the lock only for one short transaction at a time.
    this.db = new Sqlite(file, { fileMustExist: true, timeout: 30_000 });
  }

  job(id: string): CommittedJob {
    const row = this.db
      .prepare('SELECT status, total, completed + failed AS rows, results_bytes AS resultsBytes, results_path AS resultsPath FROM batches WHERE id = ?')
      .get(id) as CommittedJob | undefined;
    if (!row) throw new Error(`no batch ${id} in the database`);
    return row;
  }

  /** Takes the write lock (after the server's transaction in progress, if any) until unlock(). */
  lock(): void {
    this.db.exec('BEGIN IMMEDIATE');
  }

  unlock(): void {
    this.db.exec('ROLLBACK');
  }

  close(): void {
    this.db.close();
  }
}
