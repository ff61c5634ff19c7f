/**
 * SqliteJobTable: the batch jobs in an embedded SQLite database (`<dataDir>/batches.sqlite`, WAL mode,
 * synchronous=FULL). Every state change is one transaction, so after a crash the row says exactly
 * which input bytes have their result rows on disk: `input_offset` (the next unread input byte),
 * `results_bytes` (the valid length of the results file), `failed_bytes` (the failed rows' share of
 * it) and the counts move together. Each row's status is one byte of the job's status file
 * (`row-status` beside the results, RunOptions.statusPath): `completed + failed` bytes are valid.
 *
 * Statuses: queued -> in_progress -> completed; failed; cancelling -> cancelled; expired.
 * Final statuses: completed, failed, cancelled, expired.
 */
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';

import { openAiFieldsToText } from '../openai/job-fields.js';
import { PRIVATE_FILE_MODE, privateFile } from '../private-files.js';
import { OPEN_STATUSES, RESULT_STATUSES, sqlStatusList, type BatchJob, type BatchStatus, type JobProgress, type NewBatch } from '../ports.js';

const OPEN_SQL = sqlStatusList(OPEN_STATUSES);
const RESULT_SQL = sqlStatusList(RESULT_STATUSES);
import { batchJobFromColumns, type BatchJobColumns } from '../sql-rows.js';
import { addMissingColumns, openSqlite, type SqliteDatabase, type SqliteStatement } from '../sqlite-driver.js';

/** A job row: the common job fields, where its files are and how far its runner got. */
export interface JobRow extends BatchJob, JobProgress {
  /** Relative to the data dir. */
  inputPath: string;
  inputBytes: number;
  resultsPath: string;
  /** Each row's status, one byte per row (runner.ts ROW_FAILED); relative to the data dir. */
  statusPath: string;
}

export interface NewJob extends NewBatch {
  inputPath: string;
  inputBytes: number;
  resultsPath: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS batches (
  id              TEXT PRIMARY KEY,
  owner           TEXT NOT NULL,
  model           TEXT NOT NULL,
  requested_model TEXT NOT NULL,
  status          TEXT NOT NULL,
  total           INTEGER NOT NULL,
  completed       INTEGER NOT NULL DEFAULT 0,
  failed          INTEGER NOT NULL DEFAULT 0,
  created_at      INTEGER NOT NULL,
  started_at      INTEGER,
  completed_at    INTEGER,
  expires_at      INTEGER,
  error_code      TEXT,
  error_message   TEXT,
  questions       TEXT,
  input_path      TEXT NOT NULL,
  input_bytes     INTEGER NOT NULL,
  results_path    TEXT NOT NULL,
  input_offset    INTEGER NOT NULL DEFAULT 0,
  input_line      INTEGER NOT NULL DEFAULT 0,
  results_bytes   INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX IF NOT EXISTS batches_by_owner ON batches (owner, id);
CREATE INDEX IF NOT EXISTS batches_by_status ON batches (status);
`;

interface SqlRow extends Omit<BatchJobColumns, 'failed_bytes'> {
  input_path: string;
  input_bytes: number;
  results_path: string;
  input_offset: number;
  input_line: number;
  /** Null for a job written before row statuses were kept, until reindexed (result-rows.ts). */
  failed_bytes: number | null;
}

/** The status file of a job whose results are at `resultsPath`. */
export function statusPathOf(resultsPath: string): string {
  return path.join(path.dirname(resultsPath), 'row-status');
}

function fromSql(r: SqlRow): JobRow {
  return {
    ...batchJobFromColumns({ ...r, failed_bytes: r.failed_bytes ?? 0 }),
    inputPath: r.input_path,
    inputBytes: r.input_bytes,
    resultsPath: r.results_path,
    statusPath: statusPathOf(r.results_path),
    inputOffset: r.input_offset,
    inputLine: r.input_line,
  };
}

function progressParams(id: string, p: JobProgress) {
  const { inputTokens, cachedTokens, outputTokens } = p.usage;
  return {
    id,
    inputOffset: p.inputOffset,
    inputLine: p.inputLine,
    resultsBytes: p.resultsBytes,
    failedBytes: p.failedBytes,
    completed: p.completed,
    failed: p.failed,
    inputTokens,
    cachedTokens,
    outputTokens,
  };
}

/**
 * When a job ends: the caller's clock (@completedAt), but never before a stamp the job already has.
 * A wall clock set back (by hand, NTP, a restart on another host) would otherwise end a job before
 * it was created, and count its retention from then. Every stamp written here is held the same way
 * (start, cancelling), so created_at <= started_at <= cancelling_at <= completed_at always.
 */
const FINISHED_AT = 'MAX(@completedAt, created_at, COALESCE(started_at, created_at), COALESCE(cancelling_at, created_at))';

/** Columns added after the first release: a database created before them gets them at open. */
const ADDED_COLUMNS: ReadonlyArray<[name: string, definition: string]> = [
  ['openai', 'TEXT'],
  ['input_tokens', 'INTEGER NOT NULL DEFAULT 0'],
  ['cached_tokens', 'INTEGER NOT NULL DEFAULT 0'],
  ['output_tokens', 'INTEGER NOT NULL DEFAULT 0'],
  ['cancelling_at', 'INTEGER'],
  // Null on the jobs of a database made before it: their statuses are worked out once at open (result-rows.ts).
  ['failed_bytes', 'INTEGER'],
  // The final status an expired job had (null on jobs expired before it was kept).
  ['expired_from', 'TEXT'],
];

export class SqliteJobTable {
  private readonly db: SqliteDatabase;
  private readonly stmt: Record<string, SqliteStatement>;

  /** Opens (creating if needed) the database file. */
  constructor(readonly file: string) {
    // Created 0600 before SQLite opens it: SQLite gives its -wal and -shm files the database
    // file's mode. Files an older version left wider are tightened.
    closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
    for (const f of [file, `${file}-wal`, `${file}-shm`]) privateFile(f);
    this.db = openSqlite(file);
    this.db.pragma('journal_mode = WAL');
    // FULL: a committed row survives power loss too, not only a process crash.
    this.db.pragma('synchronous = FULL');
    this.db.exec(SCHEMA);
    addMissingColumns(this.db, 'batches', ADDED_COLUMNS);
    const p = (sql: string) => this.db.prepare(sql);
    this.stmt = {
      insert: p(`INSERT INTO batches (id, owner, model, requested_model, status, total, created_at, questions, input_path, input_bytes, results_path, openai, failed_bytes)
                 VALUES (@id, @owner, @model, @requestedModel, 'queued', @total, @createdAt, @questions, @inputPath, @inputBytes, @resultsPath, @openai, 0)`),
      get: p('SELECT * FROM batches WHERE id = ?'),
      listFirst: p('SELECT * FROM batches WHERE owner = ? ORDER BY id DESC LIMIT ?'),
      listAfter: p('SELECT * FROM batches WHERE owner = ? AND id < ? ORDER BY id DESC LIMIT ?'),
      unfinished: p(`SELECT * FROM batches WHERE status IN ${OPEN_SQL} ORDER BY id ASC`),
      start: p(`UPDATE batches SET status = 'in_progress', started_at = COALESCE(started_at, MAX(?, created_at)) WHERE id = ? AND status = 'queued'`),
      progress: p(`UPDATE batches SET input_offset = @inputOffset, input_line = @inputLine, results_bytes = @resultsBytes, failed_bytes = @failedBytes,
                   completed = @completed, failed = @failed, input_tokens = @inputTokens, cached_tokens = @cachedTokens,
                   output_tokens = @outputTokens WHERE id = @id AND status IN ('in_progress', 'cancelling')`),
      finish: p(`UPDATE batches SET status = @status, completed_at = ${FINISHED_AT}, expires_at = ${FINISHED_AT} + @retentionMs,
                 error_code = @errorCode, error_message = @errorMessage,
                 cancelling_at = CASE WHEN @status = 'cancelled' THEN COALESCE(cancelling_at, ${FINISHED_AT}) ELSE cancelling_at END
                 WHERE id = @id AND status IN ${OPEN_SQL}`),
      cancelling: p(`UPDATE batches SET status = 'cancelling', cancelling_at = MAX(?, created_at, COALESCE(started_at, created_at)) WHERE id = ? AND status = 'in_progress'`),
      due: p(`SELECT * FROM batches WHERE expires_at IS NOT NULL AND expires_at <= ? AND status IN ${RESULT_SQL} ORDER BY expires_at ASC LIMIT ?`),
      // An expired job keeps its row (GET names it expired) but not its form's questions: up to a
      // MiB of text each that no one reads again, which would grow the database job after job.
      expire: p(`UPDATE batches SET expired_from = status, status = 'expired', questions = NULL WHERE id = ? AND status IN ${RESULT_SQL}`),
      ids: p('SELECT id, status FROM batches'),
      withoutStatuses: p('SELECT * FROM batches WHERE failed_bytes IS NULL'),
      setFailedBytes: p('UPDATE batches SET failed_bytes = ? WHERE id = ?'),
    };
  }

  insert(job: NewJob): JobRow {
    this.stmt.insert!.run({ ...job, openai: openAiFieldsToText(job.openai) });
    return this.get(job.id)!;
  }

  get(id: string): JobRow | undefined {
    const row = this.stmt.get!.get(id) as SqlRow | undefined;
    return row && fromSql(row);
  }

  /** The caller's jobs, newest first; `after` is the id of the last job of the previous page. */
  list(owner: string, limit: number, after?: string): JobRow[] {
    const rows = (after === undefined ? this.stmt.listFirst!.all(owner, limit) : this.stmt.listAfter!.all(owner, after, limit)) as SqlRow[];
    return rows.map(fromSql);
  }

  /** Jobs to (re)start: queued, in_progress and cancelling, oldest first. */
  unfinished(): JobRow[] {
    return (this.stmt.unfinished!.all() as SqlRow[]).map(fromSql);
  }

  /** queued -> in_progress. False when the job was not queued. */
  markStarted(id: string, now: number): boolean {
    return this.stmt.start!.run(now, id).changes === 1;
  }

  /** Records the progress of a running job. Call only after the results up to `resultsBytes` are fsynced. */
  commitProgress(id: string, progress: JobProgress): boolean {
    return this.stmt.progress!.run(progressParams(id, progress)).changes === 1;
  }

  /**
   * Moves an unfinished job to a final status at `now` (or at its latest stamp, when that is later),
   * kept `retentionMs` from then; with the progress of its last rows in the same transaction when given.
   */
  finish(
    id: string,
    outcome: { status: 'completed' | 'failed' | 'cancelled'; now: number; retentionMs: number; error?: { code: string; message: string } },
    progress?: JobProgress,
  ): boolean {
    return this.db.transaction(() => {
      if (progress) this.stmt.progress!.run(progressParams(id, progress));
      return (
        this.stmt.finish!.run({
          id,
          status: outcome.status,
          completedAt: outcome.now,
          retentionMs: outcome.retentionMs,
          errorCode: outcome.error?.code ?? null,
          errorMessage: outcome.error?.message ?? null,
        }).changes === 1
      );
    })();
  }

  /** in_progress -> cancelling, asked for at `now`. */
  markCancelling(id: string, now: number): boolean {
    return this.stmt.cancelling!.run(now, id).changes === 1;
  }

  /** Finished jobs whose retention ended at `now`. */
  dueForExpiry(now: number, limit = 100): JobRow[] {
    return (this.stmt.due!.all(now, limit) as SqlRow[]).map(fromSql);
  }

  markExpired(id: string): boolean {
    return this.stmt.expire!.run(id).changes === 1;
  }

  /** Every job id with its status (for cleaning up files that no job owns). */
  allIds(): Map<string, BatchStatus> {
    const rows = this.stmt.ids!.all() as Array<{ id: string; status: BatchStatus }>;
    return new Map(rows.map((r) => [r.id, r.status]));
  }

  /** Jobs of an older database whose row statuses were never kept (failed_bytes null). */
  withoutRowStatuses(): JobRow[] {
    return (this.stmt.withoutStatuses!.all() as SqlRow[]).map(fromSql);
  }

  /** Records a job's failed bytes once its status file is written (result-rows.ts). */
  setFailedBytes(id: string, bytes: number): void {
    this.stmt.setFailedBytes!.run(bytes, id);
  }

  /** Idempotent. */
  close(): void {
    if (this.db.open) this.db.close();
  }
}
