/**
 * The embedded batch store (the default, without DECIDE_DATABASE_URL): job rows in
 * `<dataDir>/batches.sqlite` (sqlite-jobs.ts), each job's input and results as files in
 * `<dataDir>/batches/<id>/`, worked by this process's job pump (job-pump.ts) and expired by its
 * retention sweep (retention.ts). One process owns the data dir (data-dir-lock.ts). Everything
 * there is private to the service's user: directories 0700, files 0600 (private-files.ts).
 *
 * - create: the input is durable in the job's directory (a staged upload moved there, an uploaded
 *   file linked) before the job row is committed (queued).
 * - cancel: queued -> cancelled at once; in_progress -> cancelling -> cancelled at the next chunk
 *   boundary, keeping the rows finished before it.
 */
import path from 'node:path';

import type { BatchInput, BatchJob, BatchResults, BatchStore, NewBatch, ResultRows, StoreContext } from '../ports.js';
import { prepareDataDir, privateDir, SQLITE_DATABASE_FILE } from '../private-files.js';
import { answeringStorageFailures } from '../storage-failures.js';
import { lockDataDir } from './data-dir-lock.js';
import { JobPump } from './job-pump.js';
import { openResultRows, reindexOldJobs } from './result-rows.js';
import { RetentionSweeper } from './retention.js';
import { SqliteJobTable, type JobRow } from './sqlite-jobs.js';

/** What every store is opened with; here `dataDir` holds batches.sqlite and batches/. */
export type SqliteStoreOptions = StoreContext & { dataDir: string };

export class SqliteBatchStore implements BatchStore {
  readonly kind = 'sqlite';
  private readonly jobsDir: string;
  private readonly pump: JobPump;
  private readonly retention: RetentionSweeper;
  private closed = false;

  private constructor(
    private readonly table: SqliteJobTable,
    private readonly options: SqliteStoreOptions,
    private readonly unlock: () => void,
  ) {
    this.jobsDir = path.join(options.dataDir, 'batches');
    this.pump = new JobPump(table, options.service, options.settings, options.dataDir, options.log);
    this.retention = new RetentionSweeper(table, this.jobsDir, options.log);
  }

  /** Opens the database, removes crash leftovers, expires what is due, then resumes unfinished jobs. */
  static async open(options: SqliteStoreOptions): Promise<SqliteBatchStore> {
    const warning = prepareDataDir(options.dataDir);
    if (warning) (options.warn ?? options.log)(`batch store: ${warning}`);
    privateDir(path.join(options.dataDir, 'batches'));
    const unlock = lockDataDir(options.dataDir);
    let table: SqliteJobTable | undefined;
    let store: SqliteBatchStore;
    try {
      table = new SqliteJobTable(path.join(options.dataDir, SQLITE_DATABASE_FILE));
      store = new SqliteBatchStore(table, options, unlock);
      await store.retention.removeOrphans();
      await store.retention.sweep();
      await reindexOldJobs(table, options.dataDir, options.log);
    } catch (err) {
      table?.close();
      unlock();
      throw err;
    }
    store.retention.start(options.settings.sweepIntervalMs);
    if (options.work) store.pump.pump();
    // A full or read-only disk answers 503 + Retry-After, as a Postgres outage does.
    return answeringStorageFailures(store);
  }

  async create(job: NewBatch, input: BatchInput): Promise<BatchJob> {
    // Creation's checks throw from the reading, before anything exists; the lines themselves are
    // read again from the job's file by its runner.
    if (input.checked) for await (const _ of input.lines());
    const inputPath = path.join('batches', job.id, 'input.jsonl');
    await input.placeAt(path.join(this.options.dataDir, inputPath));
    // The input is durable; committing the row makes the job exist.
    const row = this.table.insert({ ...job, inputPath, inputBytes: input.bytes, resultsPath: path.join('batches', job.id, 'results.jsonl') });
    if (this.options.work) this.pump.pump();
    return row;
  }

  async get(id: string): Promise<BatchJob | undefined> {
    return this.table.get(id);
  }

  async list(owner: string, limit: number, after?: string): Promise<BatchJob[]> {
    return this.table.list(owner, limit, after);
  }

  async cancel(id: string, now: number): Promise<BatchJob> {
    const job = this.table.get(id)!;
    if (job.status === 'queued' && !this.pump.isRunning(id)) {
      this.table.finish(id, { status: 'cancelled', now, retentionMs: this.options.settings.retentionMs });
    } else if (job.status === 'in_progress' || job.status === 'queued') {
      this.table.markCancelling(id, now);
      this.pump.stop(id);
    }
    return this.table.get(id)!;
  }

  async openResults(job: BatchJob, rows: ResultRows = 'all'): Promise<BatchResults> {
    // The row the caller checked (a final job's results no longer change), else a fresh read.
    const row = 'resultsPath' in job ? (job as JobRow) : this.table.get(job.id)!;
    return openResultRows(this.options.dataDir, row, rows);
  }

  async sweep(now: number): Promise<void> {
    await this.retention.sweep(now);
  }

  async whenIdle(): Promise<void> {
    await this.pump.whenIdle();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pump.close();
    await this.retention.stop();
    this.table.close();
    this.unlock();
  }
}
