/**
 * BatchService: batch jobs over JSONL files. Owns the job store (`<dataDir>/batches.sqlite`), the
 * job files (`<dataDir>/batches/<id>/input.jsonl`, `results.jsonl`) and the runners.
 *
 * - create: the upload is streamed to a staging file and fsynced, then moved into place; only then
 *   is the job row committed (queued). A crash before that leaves no job and the staging file is
 *   removed at the next start.
 * - run: up to `concurrency` jobs at once, oldest first; each job's chunks go through the engine's
 *   scheduler as batch work, behind live /v1/decide requests. Every unfinished job (queued,
 *   in_progress, cancelling) is resumed at startup from its last committed row.
 * - cancel: queued -> cancelled at once; in_progress -> cancelling -> cancelled at the next chunk
 *   boundary, keeping the rows finished before it.
 * - retention: results of a finished job (completed, failed, cancelled) are deleted `retentionMs`
 *   after it finished; the job becomes `expired`. A sweep runs every `sweepIntervalMs` and at start.
 * - ownership: every read goes through the owner (the caller's API key id); another owner's job
 *   is "not found".
 */
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

import { monotonicFactory } from 'ulid';

import { ApiError, toApiError } from '../api/errors.js';
import { normalizeQuestions, type ValidationLimits } from '../api/validate.js';
import type { RecordOutcome } from '../service/decision-service.js';
import type { NormalizedDecideRequest } from '../api/validate.js';
import { DEFAULT_MAX_RECORD_BYTES, RecordCounter } from './records.js';
import { DEFAULT_CHUNK_OPTIONS, runBatch, type ChunkOptions } from './runner.js';
import { BatchStore, isFinal, RESULT_STATUSES, type BatchStatus, type JobProgress, type JobRow } from './store.js';

export const DEFAULT_MAX_FILE_BYTES = 200 * 1024 * 1024;
export const DEFAULT_MAX_RECORDS = 100_000;
export const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;
export const DEFAULT_SWEEP_INTERVAL_MS = 60 * 1000;
export const DEFAULT_CONCURRENCY = 2;
export const DEFAULT_LIST_LIMIT = 20;
export const MAX_LIST_LIMIT = 100;

const BATCH_ID = /^batch_[0-9A-HJKMNP-TV-Z]{26}$/;

/** What the batch service needs of DecisionService. */
export interface BatchDecisionService {
  decideRecords(modelId: string, requests: NormalizedDecideRequest[], priority?: 'live' | 'batch'): Promise<RecordOutcome[]>;
  resolveModel(id: string): string;
  runtime(id: string): Promise<unknown>;
  /** False once the service is closed: runners stop rather than fail rows. */
  isReady?(): boolean;
}

export interface BatchServiceOptions {
  service: BatchDecisionService;
  /** Holds batches.sqlite and batches/. */
  dataDir: string;
  /** Upload size limit in bytes; default DECIDE_BATCH_MAX_FILE_BYTES or 200 MiB. */
  maxFileBytes?: number;
  /** Records (non-blank lines) per file; default DECIDE_BATCH_MAX_RECORDS or 100,000. */
  maxRecords?: number;
  /** Bytes of one record line; default 1 MiB (the /v1/decide body limit). */
  maxRecordBytes?: number;
  /** How long results are kept after a job finishes; default DECIDE_BATCH_RETENTION_SECONDS or 7 days. */
  retentionMs?: number;
  /** How often expired results are swept; default DECIDE_BATCH_SWEEP_SECONDS or 60 s. */
  sweepIntervalMs?: number;
  /** Jobs run at once; default DECIDE_BATCH_CONCURRENCY or 2. */
  concurrency?: number;
  /** Records / bytes per engine call; default DECIDE_BATCH_CHUNK_RECORDS (128) / DECIDE_BATCH_CHUNK_BYTES (64 KiB). */
  chunk?: Partial<ChunkOptions>;
  validation?: Partial<ValidationLimits>;
  /** Resume unfinished jobs at open (default true). */
  resume?: boolean;
  /** Environment read for the defaults; default process.env. */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

/** The Batch resource (api-decisions.md). */
export interface Batch {
  id: string;
  object: 'batch';
  /** Resolved dated model id. */
  model: string;
  status: BatchStatus;
  progress: { total: number; completed: number; failed: number };
  created_at: string;
  completed_at: string | null;
  error?: { code: string; message: string };
}

export interface BatchList {
  object: 'list';
  data: Batch[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** An upload on disk, fsynced, not yet a job. */
export interface StagedUpload {
  path: string;
  bytes: number;
  records: number;
}

export interface CreateBatchInput {
  owner: string;
  /** The form's model field (id or alias); undefined when missing. */
  model: string | undefined;
  /** The form's questions field (JSON text), if any. */
  questions?: string;
  upload: StagedUpload | undefined;
}

function envNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, { integer = true, min = 1 } = {}): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    throw new Error(`${name}: must be ${integer ? 'an integer' : 'a number'} >= ${min}, got '${raw}'`);
  }
  return value;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name}: must be a positive integer, got ${value}`);
  return value;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

const notFound = (id: string) => new ApiError('not_found', `batch '${id.slice(0, 100)}' not found`);

interface RunningJob {
  /** Set by cancel() or close(); the runner stops at its next chunk boundary. */
  stop: boolean;
  done: Promise<void>;
}

export class BatchService {
  readonly maxFileBytes: number;
  readonly maxRecords: number;
  readonly maxRecordBytes: number;
  readonly retentionMs: number;
  readonly sweepIntervalMs: number;
  readonly concurrency: number;
  readonly chunk: ChunkOptions;
  private readonly jobsDir: string;
  private readonly stagingDir: string;
  private readonly running = new Map<string, RunningJob>();
  private readonly newId = monotonicFactory();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private closed = false;
  private readonly log: (line: string) => void;

  private constructor(
    private readonly options: BatchServiceOptions,
    readonly store: BatchStore,
    readonly dataDir: string,
  ) {
    const env = options.env ?? process.env;
    this.maxFileBytes = positiveInteger('maxFileBytes', options.maxFileBytes ?? envNumber(env, 'DECIDE_BATCH_MAX_FILE_BYTES', DEFAULT_MAX_FILE_BYTES));
    this.maxRecords = positiveInteger('maxRecords', options.maxRecords ?? envNumber(env, 'DECIDE_BATCH_MAX_RECORDS', DEFAULT_MAX_RECORDS));
    this.maxRecordBytes = positiveInteger('maxRecordBytes', options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
    this.retentionMs =
      options.retentionMs ?? envNumber(env, 'DECIDE_BATCH_RETENTION_SECONDS', DEFAULT_RETENTION_MS / 1000, { integer: false, min: 0 }) * 1000;
    this.sweepIntervalMs =
      options.sweepIntervalMs ?? envNumber(env, 'DECIDE_BATCH_SWEEP_SECONDS', DEFAULT_SWEEP_INTERVAL_MS / 1000, { integer: false, min: 0.01 }) * 1000;
    this.concurrency = positiveInteger('concurrency', options.concurrency ?? envNumber(env, 'DECIDE_BATCH_CONCURRENCY', DEFAULT_CONCURRENCY));
    this.chunk = {
      chunkRecords: envNumber(env, 'DECIDE_BATCH_CHUNK_RECORDS', DEFAULT_CHUNK_OPTIONS.chunkRecords),
      chunkBytes: envNumber(env, 'DECIDE_BATCH_CHUNK_BYTES', DEFAULT_CHUNK_OPTIONS.chunkBytes),
      pipelineDepth: DEFAULT_CHUNK_OPTIONS.pipelineDepth,
      ...options.chunk,
    };
    this.jobsDir = path.join(dataDir, 'batches');
    this.stagingDir = path.join(this.jobsDir, '.staging');
    this.log = options.log ?? (() => undefined);
  }

  /**
   * Opens the store, cleans up after a crash, resumes unfinished jobs and starts the retention sweep.
   * @example
   * const batches = await BatchService.open({ service: svc, dataDir: 'data' });
   * const upload = await batches.stageUpload(fs.createReadStream('records.jsonl'));
   * const batch = await batches.create({ owner: 'key-1', model: 'svc-alpha', upload });
   */
  static async open(options: BatchServiceOptions): Promise<BatchService> {
    const dataDir = path.resolve(options.dataDir);
    await mkdir(path.join(dataDir, 'batches', '.staging'), { recursive: true });
    const store = new BatchStore(path.join(dataDir, 'batches.sqlite'));
    const batches = new BatchService(options, store, dataDir);
    try {
      await batches.cleanUp();
      await batches.sweep();
    } catch (err) {
      store.close();
      throw err;
    }
    batches.sweepTimer = setInterval(() => void batches.sweep().catch((err) => batches.log(`batch sweep failed: ${String(err)}`)), batches.sweepIntervalMs);
    batches.sweepTimer.unref();
    if (options.resume ?? true) batches.pump();
    return batches;
  }

  // ------------------------------------------------------------------------------------------
  // Creation

  /**
   * Streams an upload to a staging file, counting records, and fsyncs it. Enforces the size and
   * record limits (413 state_too_long); the stream is read to its end either way, so an HTTP
   * client gets the error response rather than a reset connection.
   */
  async stageUpload(stream: AsyncIterable<Buffer | string>): Promise<StagedUpload> {
    this.ensureOpen();
    const file = path.join(this.stagingDir, `${this.newId()}.jsonl`);
    const fh = await open(file, 'wx');
    const counter = new RecordCounter();
    let over: ApiError | undefined;
    let position = 0;
    try {
      for await (const piece of stream) {
        if (over) continue;
        const chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
        counter.push(chunk);
        if (counter.bytes > this.maxFileBytes) {
          over = new ApiError('state_too_long', `file: larger than the limit of ${this.maxFileBytes} bytes; split it into several batches`);
        } else if (counter.records > this.maxRecords) {
          over = new ApiError('state_too_long', `file: more than the limit of ${this.maxRecords} records; split it into several batches`);
        } else {
          let done = 0;
          while (done < chunk.length) {
            const { bytesWritten } = await fh.write(chunk, done, chunk.length - done, position);
            done += bytesWritten;
            position += bytesWritten;
          }
        }
      }
      if (!over && counter.total() > this.maxRecords) {
        over = new ApiError('state_too_long', `file: more than the limit of ${this.maxRecords} records; split it into several batches`);
      }
      if (over) throw over;
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => undefined);
      await rm(file, { force: true });
      throw err;
    }
    await fh.close();
    return { path: file, bytes: counter.bytes, records: counter.total() };
  }

  /** Removes a staged upload that will not become a job. */
  async discard(upload: StagedUpload | undefined): Promise<void> {
    if (upload) await rm(upload.path, { force: true });
  }

  /**
   * Creates a job from a staged upload (consumed: moved into the job, or removed on error).
   * Errors: 400 invalid_question (missing model or file, empty file, bad questions field),
   * 404 not_found (unknown model).
   */
  async create(input: CreateBatchInput): Promise<Batch> {
    try {
      this.ensureOpen();
      if (input.model === undefined || input.model === '') {
        throw new ApiError('invalid_question', 'model: required (form field "model", a model id such as svc-alpha)');
      }
      if (!input.upload) throw new ApiError('invalid_question', 'file: required (form field "file", a JSONL file with one record per line)');
      const model = this.options.service.resolveModel(input.model);
      let questions: string | null = null;
      if (input.questions !== undefined) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(input.questions);
        } catch (err) {
          throw new ApiError('invalid_question', `questions: the form field must be JSON text (${(err as Error).message.slice(0, 200)})`);
        }
        normalizeQuestions(parsed, this.options.validation);
        questions = input.questions;
      }
      if (input.upload.records === 0) {
        throw new ApiError('invalid_question', 'file: empty; a batch needs at least one record (one JSON object per line)');
      }

      const id = `batch_${this.newId()}`;
      const dir = path.join(this.jobsDir, id);
      await mkdir(dir);
      const inputPath = path.join('batches', id, 'input.jsonl');
      await rename(input.upload.path, path.join(this.dataDir, inputPath));
      await fsyncDir(dir);
      await fsyncDir(this.jobsDir);
      await fsyncDir(this.stagingDir);
      // The input is durable; committing the row makes the job exist.
      const job = this.store.insert({
        id,
        owner: input.owner,
        model,
        requestedModel: input.model,
        total: input.upload.records,
        createdAt: Date.now(),
        questions,
        inputPath,
        inputBytes: input.upload.bytes,
        resultsPath: path.join('batches', id, 'results.jsonl'),
      });
      this.log(`batch ${id}: created (${job.total} records, model ${model})`);
      this.pump();
      return toBatch(job);
    } catch (err) {
      await this.discard(input.upload);
      throw err;
    }
  }

  // ------------------------------------------------------------------------------------------
  // Reads

  get(owner: string, id: string): Batch {
    return toBatch(this.owned(owner, id));
  }

  /** The caller's batches, newest first. `after`: the last id of the previous page. */
  list(owner: string, query: { limit?: unknown; after?: unknown } = {}): BatchList {
    this.ensureOpen();
    let limit = DEFAULT_LIST_LIMIT;
    if (query.limit !== undefined) {
      limit = typeof query.limit === 'string' && /^[0-9]+$/.test(query.limit) ? Number(query.limit) : typeof query.limit === 'number' ? query.limit : NaN;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
        throw new ApiError('invalid_question', `limit: must be an integer from 1 to ${MAX_LIST_LIMIT}`);
      }
    }
    let after: string | undefined;
    if (query.after !== undefined) {
      if (typeof query.after !== 'string' || !BATCH_ID.test(query.after)) {
        throw new ApiError('invalid_question', 'after: must be a batch id (the last id of the previous page)');
      }
      after = query.after;
    }
    const rows = this.store.list(owner, limit + 1, after);
    const data = rows.slice(0, limit).map(toBatch);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
  }

  /**
   * The results file of a finished job as a stream of JSONL rows. 404 not_found when the job is
   * not the caller's, not finished yet (the message gives the status and says to poll) or expired.
   */
  async openResults(owner: string, id: string): Promise<{ stream: Readable; bytes: number; batch: Batch }> {
    const job = this.owned(owner, id);
    if (job.status === 'expired') {
      throw new ApiError(
        'not_found',
        `the results of batch ${id} have expired (kept ${formatDuration(this.retentionMs)} after the batch finished) and were deleted`,
      );
    }
    if (!RESULT_STATUSES.includes(job.status)) {
      throw new ApiError(
        'not_found',
        `the results of batch ${id} are not ready: its status is ${job.status} (${job.completed + job.failed} of ${job.total} records done); ` +
          `poll GET /v1/batches/${id} until the status is completed, failed or cancelled`,
      );
    }
    const file = path.join(this.dataDir, job.resultsPath);
    if (job.resultsBytes === 0) return { stream: Readable.from([]), bytes: 0, batch: toBatch(job) };
    // Opened before streaming, so a sweep that deletes the file meanwhile cannot cut the download.
    const fh = await open(file, 'r');
    const stream = fh.createReadStream({ start: 0, end: job.resultsBytes - 1, autoClose: true });
    return { stream, bytes: job.resultsBytes, batch: toBatch(job) };
  }

  // ------------------------------------------------------------------------------------------
  // Cancel

  /** Cancels a job: queued -> cancelled, in_progress -> cancelling (-> cancelled). Final jobs are returned unchanged. */
  cancel(owner: string, id: string): Batch {
    const job = this.owned(owner, id);
    if (job.status === 'queued' && !this.running.has(id)) {
      this.store.finish(id, { status: 'cancelled', now: Date.now(), expiresAt: Date.now() + this.retentionMs });
    } else if (job.status === 'in_progress' || job.status === 'queued') {
      this.store.markCancelling(id);
      const run = this.running.get(id);
      if (run) run.stop = true;
    }
    return toBatch(this.store.get(id)!);
  }

  // ------------------------------------------------------------------------------------------
  // Running

  /** Starts queued/unfinished jobs up to the concurrency limit, oldest first. */
  private pump(): void {
    if (this.closed || this.running.size >= this.concurrency) return;
    for (const job of this.store.unfinished()) {
      if (this.running.size >= this.concurrency) break;
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
    this.store.finish(id, { status, now, expiresAt: now + this.retentionMs, error }, progress);
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
      await this.options.service.runtime(job.model);
    } catch (err) {
      if (this.closed) return;
      const e = toApiError(err);
      this.finishJob(job.id, 'failed', undefined, { code: e.code, message: `model ${job.model} could not be used: ${e.message}` });
      return;
    }

    const service = this.options.service;
    const shuttingDown = () => this.closed || (service.isReady !== undefined && !service.isReady());
    const stopping = () => run.stop || shuttingDown();
    let result;
    try {
      result = await runBatch({
        ...this.chunk,
        scorer: this.options.service,
        model: job.model,
        requestedModel: job.requestedModel,
        formQuestions: job.questions === null ? undefined : JSON.parse(job.questions),
        inputPath: path.join(this.dataDir, job.inputPath),
        resultsPath: path.join(this.dataDir, job.resultsPath),
        start: { inputOffset: job.inputOffset, inputLine: job.inputLine, resultsBytes: job.resultsBytes, completed: job.completed, failed: job.failed },
        maxRecordBytes: this.maxRecordBytes,
        validation: this.options.validation,
        commit: (progress) => {
          this.store.commitProgress(job.id, progress);
        },
        shouldStop: stopping,
      });
    } catch (err) {
      if (shuttingDown()) return;
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

  // ------------------------------------------------------------------------------------------
  // Retention and housekeeping

  /** Expires finished jobs whose retention has passed: status expired, files deleted. */
  async sweep(now = Date.now()): Promise<void> {
    if (this.closed) return;
    if (this.sweeping) return this.sweeping;
    this.sweeping = (async () => {
      for (;;) {
        const due = this.store.dueForExpiry(now);
        if (due.length === 0) break;
        for (const job of due) {
          // Expire first: from here on the results are never served, so deleting cannot cut a reader short.
          this.store.markExpired(job.id);
          await rm(path.join(this.jobsDir, job.id), { recursive: true, force: true });
          this.log(`batch ${job.id}: expired, files deleted`);
        }
      }
    })().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  /** Removes staging files and job directories that no live job owns (crash leftovers, expired jobs). */
  private async cleanUp(): Promise<void> {
    await rm(this.stagingDir, { recursive: true, force: true });
    await mkdir(this.stagingDir, { recursive: true });
    const jobs = this.store.allIds();
    for (const name of await readdir(this.jobsDir)) {
      if (name === '.staging') continue;
      const status = jobs.get(name);
      if (status === undefined || status === 'expired') {
        const full = path.join(this.jobsDir, name);
        if ((await stat(full)).isDirectory()) await rm(full, { recursive: true, force: true });
      }
    }
  }

  /** Resolves when no job is running (tests, shutdown). */
  async whenIdle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /**
   * Stops the runners at their next chunk boundary (unfinished jobs resume at the next open),
   * stops the sweep and closes the store. Idempotent. Call before closing the DecisionService.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const run of this.running.values()) run.stop = true;
    await Promise.all([...this.running.values()].map((r) => r.done));
    await this.sweeping?.catch(() => undefined);
    this.store.close();
  }

  private owned(owner: string, id: string): JobRow {
    this.ensureOpen();
    const job = typeof id === 'string' && BATCH_ID.test(id) ? this.store.get(id) : undefined;
    // Another key's batch is indistinguishable from a missing one.
    if (!job || job.owner !== owner) throw notFound(String(id));
    return job;
  }

  private ensureOpen(): void {
    if (this.closed) throw new ApiError('server_error', 'the batch service is closed');
  }
}

function toBatch(job: JobRow): Batch {
  return {
    id: job.id,
    object: 'batch',
    model: job.model,
    status: job.status,
    progress: { total: job.total, completed: job.completed, failed: job.failed },
    created_at: iso(job.createdAt)!,
    completed_at: isFinal(job.status) ? iso(job.completedAt) : null,
    ...(job.errorCode ? { error: { code: job.errorCode, message: job.errorMessage ?? '' } } : {}),
  };
}

function formatDuration(ms: number): string {
  const s = ms / 1000;
  if (s >= 86400 && s % 86400 === 0) return `${s / 86400} day${s === 86400 ? '' : 's'}`;
  if (s >= 3600 && s % 3600 === 0) return `${s / 3600} hour${s === 3600 ? '' : 's'}`;
  return `${s} seconds`;
}

