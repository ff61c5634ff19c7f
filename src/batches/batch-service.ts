/**
 * BatchService: batch jobs over JSONL files, the one object the HTTP routes talk to. It ties
 * together, each in its own file:
 *   settings.ts   limits, retention, concurrency, chunk sizes (options, DECIDE_BATCH_*, defaults)
 *   uploads.ts    uploads streamed to a staging file, fsynced, moved into the job
 *   query.ts      batch ids, ?limit/?after, the questions field
 *   store.ts      the job rows (`<dataDir>/batches.sqlite`)
 *   job-pump.ts   running jobs through the engine, resuming unfinished ones
 *   retention.ts  expiring finished jobs, removing crash leftovers
 *   wire.ts       job rows as the API's Batch resource
 *
 * - create: the upload is durable in the job's directory before the job row is committed (queued).
 * - cancel: queued -> cancelled at once; in_progress -> cancelling -> cancelled at the next chunk
 *   boundary, keeping the rows finished before it.
 * - ownership: every read goes through the owner (the caller's API key id); another owner's job
 *   is "not found".
 */
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

import { monotonicFactory } from 'ulid';

import { ApiError } from '../api/errors.js';
import { JobPump, type BatchDecisionService } from './job-pump.js';
import { isBatchId, parseFormQuestions, parseListQuery } from './query.js';
import { RetentionSweeper } from './retention.js';
import { resolveBatchSettings, type BatchSettings, type BatchSettingsOptions } from './settings.js';
import { BatchStore, RESULT_STATUSES, type JobRow } from './store.js';
import { UploadStaging, type StagedUpload } from './uploads.js';
import { formatRetention, toBatch, toBatchList, type Batch, type BatchList } from './wire.js';

export type { BatchDecisionService } from './job-pump.js';
export type { StagedUpload } from './uploads.js';
export type { Batch, BatchList } from './wire.js';
export { DEFAULT_CONCURRENCY, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_RECORDS, DEFAULT_RETENTION_MS, DEFAULT_SWEEP_INTERVAL_MS } from './settings.js';
export { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from './query.js';

export interface BatchServiceOptions extends BatchSettingsOptions {
  service: BatchDecisionService;
  /** Holds batches.sqlite and batches/. */
  dataDir: string;
  /** Resume unfinished jobs at open (default true). */
  resume?: boolean;
  log?: (line: string) => void;
}

export interface CreateBatchInput {
  owner: string;
  /** The form's model field (id or alias); undefined when missing. */
  model: string | undefined;
  /** The form's questions field (JSON text), if any. */
  questions?: string;
  upload: StagedUpload | undefined;
}

const notFound = (id: string) => new ApiError('not_found', `batch '${id.slice(0, 100)}' not found`);

export class BatchService {
  readonly settings: BatchSettings;
  private readonly jobsDir: string;
  private readonly uploads: UploadStaging;
  private readonly pump: JobPump;
  private readonly retention: RetentionSweeper;
  private readonly newId = monotonicFactory();
  private closed = false;
  private readonly log: (line: string) => void;

  private constructor(
    private readonly options: BatchServiceOptions,
    readonly store: BatchStore,
    readonly dataDir: string,
  ) {
    this.settings = resolveBatchSettings(options);
    this.log = options.log ?? (() => undefined);
    this.jobsDir = path.join(dataDir, 'batches');
    this.uploads = new UploadStaging(path.join(this.jobsDir, '.staging'), this.settings);
    this.pump = new JobPump(store, options.service, this.settings, dataDir, this.log);
    this.retention = new RetentionSweeper(store, this.jobsDir, this.log);
  }

  get maxFileBytes(): number {
    return this.settings.maxFileBytes;
  }
  get maxRecords(): number {
    return this.settings.maxRecords;
  }
  get retentionMs(): number {
    return this.settings.retentionMs;
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
    const settings = resolveBatchSettings(options); // malformed DECIDE_BATCH_* fails before any file is touched
    await mkdir(path.join(dataDir, 'batches'), { recursive: true });
    const store = new BatchStore(path.join(dataDir, 'batches.sqlite'));
    const batches = new BatchService(options, store, dataDir);
    try {
      await batches.uploads.clear();
      await batches.retention.removeOrphans();
      await batches.retention.sweep();
    } catch (err) {
      store.close();
      throw err;
    }
    batches.retention.start(settings.sweepIntervalMs);
    if (options.resume ?? true) batches.pump.pump();
    return batches;
  }

  // ------------------------------------------------------------------------------------------
  // Creation

  /** Streams an upload to a staging file (see UploadStaging.stage). 413 state_too_long over the limits. */
  async stageUpload(stream: AsyncIterable<Buffer | string>): Promise<StagedUpload> {
    this.ensureOpen();
    return this.uploads.stage(stream);
  }

  /** Removes a staged upload that will not become a job. */
  async discard(upload: StagedUpload | undefined): Promise<void> {
    await this.uploads.discard(upload);
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
        parseFormQuestions(input.questions, this.settings.validation);
        questions = input.questions;
      }
      if (input.upload.records === 0) {
        throw new ApiError('invalid_question', 'file: empty; a batch needs at least one record (one JSON object per line)');
      }

      const id = `batch_${this.newId()}`;
      const inputPath = path.join('batches', id, 'input.jsonl');
      await this.uploads.moveInto(input.upload, path.join(this.dataDir, inputPath));
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
      this.pump.pump();
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
    const { limit, after } = parseListQuery(query);
    return toBatchList(this.store.list(owner, limit + 1, after), limit);
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
        `the results of batch ${id} have expired (kept ${formatRetention(this.retentionMs)} after the batch finished) and were deleted`,
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
    if (job.status === 'queued' && !this.pump.isRunning(id)) {
      this.store.finish(id, { status: 'cancelled', now: Date.now(), expiresAt: Date.now() + this.retentionMs });
    } else if (job.status === 'in_progress' || job.status === 'queued') {
      this.store.markCancelling(id);
      this.pump.stop(id);
    }
    return toBatch(this.store.get(id)!);
  }

  // ------------------------------------------------------------------------------------------
  // Housekeeping

  /** Expires finished jobs whose retention has passed: status expired, files deleted. */
  async sweep(now = Date.now()): Promise<void> {
    if (this.closed) return;
    await this.retention.sweep(now);
  }

  /** Resolves when no job is running (tests, shutdown). */
  async whenIdle(): Promise<void> {
    await this.pump.whenIdle();
  }

  /**
   * Stops the runners at their next chunk boundary (unfinished jobs resume at the next open),
   * stops the sweep and closes the store. Idempotent. Call before closing the DecisionService.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pump.close();
    await this.retention.stop();
    this.store.close();
  }

  private owned(owner: string, id: string): JobRow {
    this.ensureOpen();
    const job = isBatchId(id) ? this.store.get(id) : undefined;
    // Another key's batch is indistinguishable from a missing one.
    if (!job || job.owner !== owner) throw notFound(String(id));
    return job;
  }

  private ensureOpen(): void {
    if (this.closed) throw new ApiError('server_error', 'the batch service is closed');
  }
}
