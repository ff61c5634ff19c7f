/**
 * The job pump: runs up to `concurrency` unfinished jobs at once, oldest first; each job's chunks go
 * through the engine's scheduler as batch work, behind live /v1/decide requests. Every unfinished
 * job (queued, in_progress, cancelling) is resumed at start from its last committed row. A job
 * asked to stop (cancel, close) stops at its next chunk boundary, keeping the rows before it.
 */
import path from 'node:path';

import { ModelUnusableError } from '../chunk-scoring.js';
import type { BatchDecisionService, BatchSettings, JobProgress } from '../ports.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';
import { storedFormQuestions } from '../query.js';
import { isStorageFailure } from '../storage-failures.js';
import { runBatch } from '../runner.js';
import type { JobRow, SqliteJobTable } from './sqlite-jobs.js';

interface RunningJob {
  /** Set by stop() or close(); the runner stops at its next chunk boundary. */
  stop: boolean;
  done: Promise<void>;
}

/** The pause before a job whose run failed outside its records is started again: doubling from the first to the most. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MOST_MS = 60_000;

export class JobPump {
  private readonly running = new Map<string, RunningJob>();
  /**
   * Jobs whose last run ended in a runner error (the store refused a write: a full disk, say):
   * not started again before `at`, so that a lasting fault is retried with a pause, not in a loop
   * that takes a core and fills the log.
   */
  private readonly backoff = new Map<string, { failures: number; at: number }>();
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly store: SqliteJobTable,
    private readonly service: BatchDecisionService,
    private readonly settings: BatchSettings,
    /** Job files are relative to it. */
    private readonly dataDir: string,
    private readonly log: (line: string) => void,
  ) {}

  isRunning(id: string): boolean {
    return this.running.has(id);
  }

  /** Asks a running job to stop at its next chunk boundary (cancel). */
  stop(id: string): void {
    const run = this.running.get(id);
    if (run) run.stop = true;
  }

  /** Starts queued/unfinished jobs up to the concurrency limit, oldest first. */
  pump(): void {
    this.scheduleRetry();
    if (this.closed || this.running.size >= this.settings.concurrency) return;
    const now = Date.now();
    for (const job of this.store.unfinished()) {
      if (this.running.size >= this.settings.concurrency) break;
      if (this.running.has(job.id) || (this.backoff.get(job.id)?.at ?? 0) > now) continue;
      const run: RunningJob = { stop: false, done: Promise.resolve() };
      this.running.set(job.id, run);
      run.done = this.runJob(job, run)
        .then(
          () => void this.backoff.delete(job.id),
          (err) => this.runFailed(job.id, err),
        )
        .finally(() => {
          this.running.delete(job.id);
          this.pump();
        });
    }
  }

  private runFailed(id: string, err: unknown): void {
    const failures = (this.backoff.get(id)?.failures ?? 0) + 1;
    const waitMs = Math.min(RETRY_MOST_MS, RETRY_FIRST_MS * 2 ** (failures - 1));
    this.backoff.set(id, { failures, at: Date.now() + waitMs });
    this.log(`batch ${id}: runner error (attempt ${failures}; trying again in ${waitMs / 1000} s): ${String((err as Error)?.stack ?? err)}`);
  }

  /**
   * One timer, for the earliest pause still to end (pump() skips a pausing job). A job whose pause
   * has ended but that waits for a free slot starts when a running job ends (its pump()).
   */
  private scheduleRetry(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const now = Date.now();
    const ends = [...this.backoff.values()].map((b) => b.at).filter((at) => at > now);
    if (this.closed || ends.length === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.pump();
    }, Math.min(...ends) - now);
    this.retryTimer.unref();
  }

  private finishJob(id: string, status: 'completed' | 'failed' | 'cancelled', progress?: JobProgress, error?: { code: string; message: string }): void {
    this.store.finish(id, { status, now: Date.now(), retentionMs: this.settings.retentionMs, error }, progress);
    this.log(`batch ${id}: ${status}${progress ? ` (${progress.completed} completed, ${progress.failed} failed)` : ''}`);
  }

  private async runJob(job: JobRow, run: RunningJob): Promise<void> {
    if (job.status === 'cancelling') {
      this.finishJob(job.id, 'cancelled');
      return;
    }
    if (job.status === 'queued') this.store.markStarted(job.id, Date.now());
    else this.log(`batch ${job.id}: resuming at record ${job.completed + job.failed} of ${job.total}`);

    try {
      await this.service.runtime(job.model);
    } catch (err) {
      if (this.closed) return;
      const { error } = new ModelUnusableError(job.model, err);
      this.finishJob(job.id, 'failed', undefined, { code: error.code, message: error.message });
      return;
    }

    const service = this.service;
    const shuttingDown = () => this.closed || (service.isReady !== undefined && !service.isReady());
    const stopping = () => run.stop || shuttingDown();
    let result;
    try {
      result = await runBatch({
        ...this.settings.chunk,
        scorer: service,
        model: job.model,
        requestedModel: job.requestedModel,
        formQuestions: storedFormQuestions(job.questions),
        endpoint: job.openai?.endpoint,
        cacheScope: job.owner,
        inputPath: path.join(this.dataDir, job.inputPath),
        resultsPath: path.join(this.dataDir, job.resultsPath),
        statusPath: path.join(this.dataDir, job.statusPath),
        start: {
          inputOffset: job.inputOffset,
          inputLine: job.inputLine,
          resultsBytes: job.resultsBytes,
          failedBytes: job.failedBytes,
          completed: job.completed,
          failed: job.failed,
          usage: job.usage,
        },
        maxRecordBytes: this.settings.maxRecordBytes,
        validation: this.settings.validation,
        resultsMode: PRIVATE_FILE_MODE,
        commit: (progress) => {
          this.store.commitProgress(job.id, progress);
        },
        shouldStop: stopping,
      });
    } catch (err) {
      if (shuttingDown()) return;
      if (err instanceof ModelUnusableError) {
        // Committed rows stay: the results hold the rows finished before the model went.
        this.finishJob(job.id, 'failed', undefined, { code: err.error.code, message: err.error.message });
        return;
      }
      // A disk that refused the results' bytes (full, read-only) is the store refusing a write, as
      // when SQLite refuses one: the job pauses and resumes from its last committed row (runFailed).
      if (isStorageFailure(err)) throw err;
      this.log(`batch ${job.id}: failed: ${String((err as Error)?.stack ?? err)}`);
      this.finishJob(job.id, 'failed', undefined, {
        code: 'server_error',
        message: 'the batch could not be processed (an internal error); the rows finished before it are in the results',
      });
      return;
    }
    if (result.finished) {
      this.finishJob(job.id, 'completed', result.progress);
    } else if (run.stop && !shuttingDown()) {
      this.finishJob(job.id, 'cancelled', result.progress);
    }
    // Stopped by close(): the job stays in_progress (or cancelling) and resumes at the next start.
  }

  /** Resolves when no job is running (tests, shutdown). */
  async whenIdle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** Stops every runner at its next chunk boundary and waits for them; no job starts after. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    for (const run of this.running.values()) run.stop = true;
    await Promise.all([...this.running.values()].map((r) => r.done));
  }
}
