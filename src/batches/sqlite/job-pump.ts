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
import { runBatch } from '../runner.js';
import type { JobRow, SqliteJobTable } from './sqlite-jobs.js';

interface RunningJob {
  /** Set by stop() or close(); the runner stops at its next chunk boundary. */
  stop: boolean;
  done: Promise<void>;
}

export class JobPump {
  private readonly running = new Map<string, RunningJob>();
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
    if (this.closed || this.running.size >= this.settings.concurrency) return;
    for (const job of this.store.unfinished()) {
      if (this.running.size >= this.settings.concurrency) break;
      if (this.running.has(job.id)) continue;
      const run: RunningJob = { stop: false, done: Promise.resolve() };
      this.running.set(job.id, run);
      run.done = this.runJob(job, run)
        .catch((err) => this.log(`batch ${job.id}: runner error: ${String((err as Error)?.stack ?? err)}`))
        .finally(() => {
          this.running.delete(job.id);
          this.pump();
        });
    }
  }

  private finishJob(id: string, status: 'completed' | 'failed' | 'cancelled', progress?: JobProgress, error?: { code: string; message: string }): void {
    const now = Date.now();
    this.store.finish(id, { status, now, expiresAt: now + this.settings.retentionMs, error }, progress);
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
    for (const run of this.running.values()) run.stop = true;
    await Promise.all([...this.running.values()].map((r) => r.done));
  }
}
