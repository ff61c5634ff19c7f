/**
 * BatchService: batch jobs over JSONL files, the one object the HTTP routes talk to. It validates
 * and owns the API's side (model, questions, record count, ownership, errors) and leaves where jobs
 * live and who works on them to a BatchStore (ports.ts), chosen by DECIDE_DATABASE_URL (open-stores.ts).
 * The pieces it uses each have a file of their own (README, "Where things are").
 *
 * - ownership: every read goes through the owner (the caller's API key id); another owner's job
 *   is "not found".
 */
import path from 'node:path';
import type { Readable } from 'node:stream';

import { monotonicFactory } from 'ulid';

import { ApiError } from '../api/errors.js';
import type { BatchValidation } from '../api/schemas.js';
import type { NormalizedDecideRequest } from '../api/validate.js';
import { isBatchId, parseFormQuestions, parseListQuery } from './query.js';
import { resolveBatchSettings, type BatchSettings, type BatchSettingsOptions } from './settings.js';
import { openBatchStore, type StoreSelection } from './open-stores.js';
import { RESULT_STATUSES, type BatchDecisionService, type BatchInput, type BatchJob, type BatchStore, type ResultRows, type StagedUpload } from './ports.js';
import { storageFailureAnswer } from './storage-failures.js';
import { stagedInput, UploadStaging } from './uploads.js';
import type { OpenAiJobFields } from './openai/job-fields.js';
import { wireBatch, type WireBatch, type WireBatchList } from './openai/wire.js';
import { validateUploadFile } from './validate-upload.js';
import { formatRetention, toBatch, toBatchList, type Batch, type BatchList } from './wire.js';

export type { BatchDecisionService, StagedUpload } from './ports.js';
export type { Batch, BatchList } from './wire.js';
export { DEFAULT_CONCURRENCY, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_RECORDS, DEFAULT_RETENTION_MS, DEFAULT_SWEEP_INTERVAL_MS } from './settings.js';
export { BATCH_LIST_LIMIT } from './query.js';

export interface BatchServiceOptions extends BatchSettingsOptions, StoreSelection {
  service: BatchDecisionService;
  /** Holds the upload staging dir (and, with SQLite, batches.sqlite and the job files). */
  dataDir: string;
  /** Work on jobs in this process (default true): SQLite resumes unfinished jobs; Postgres takes chunks. */
  resume?: boolean;
  log?: (line: string) => void;
  /** What an operator should act on (a data dir others can enter); default `log`. */
  warn?: (line: string) => void;
}

export interface CreateBatchInput {
  owner: string;
  /** The form's model field (id or alias); undefined when missing. */
  model: string | undefined;
  /** The form's questions field (JSON text), if any. */
  questions?: string;
  upload: StagedUpload | undefined;
  /** Instead of an upload: an input read where it is (an uploaded file, OpenAI's input_file_id). */
  input?: BatchInput;
  /** A job created in OpenAI's dialect (src/batches/openai/): it answers in that dialect. */
  openai?: OpenAiJobFields;
}

const notFound = (id: string) => new ApiError('not_found', `batch '${id.slice(0, 100)}' not found`);

export class BatchService {
  readonly settings: BatchSettings;
  private readonly uploads: UploadStaging;
  private readonly newId = monotonicFactory();
  private closed = false;
  private readonly log: (line: string) => void;

  private constructor(
    private readonly options: BatchServiceOptions,
    readonly store: BatchStore,
    settings: BatchSettings,
    uploads: UploadStaging,
  ) {
    this.settings = settings;
    this.uploads = uploads;
    this.log = options.log ?? (() => undefined);
  }

  /** Where the store lives (DECIDE_DATABASE_URL or the option), for stores opened beside it (files). */
  get storeSelection(): StoreSelection {
    return { databaseUrl: this.options.databaseUrl, env: this.options.env };
  }
  get dataDir(): string {
    return path.resolve(this.options.dataDir);
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
   * Opens the store (SQLite under dataDir, or Postgres with DECIDE_DATABASE_URL), clears crash
   * leftovers, and starts working on jobs unless `resume: false`.
   * @example
   * const batches = await BatchService.open({ service: svc, dataDir: 'data' });
   * const upload = await batches.stageUpload(fs.createReadStream('records.jsonl'));
   * const batch = await batches.create({ owner: 'key-1', model: 'svc-alpha', upload });
   */
  static async open(options: BatchServiceOptions): Promise<BatchService> {
    const dataDir = path.resolve(options.dataDir);
    const settings = resolveBatchSettings(options); // malformed DECIDE_BATCH_* fails before any file is touched
    const log = options.log ?? (() => undefined);
    // The store first: a SQLite data dir another process owns is refused before anything in it is touched.
    const store = await openBatchStore(options, { dataDir, settings, service: options.service, work: options.resume ?? true, log, warn: options.warn ?? log });
    const uploads = new UploadStaging(path.join(dataDir, 'batches', '.staging'), settings);
    try {
      await uploads.clear();
    } catch (err) {
      await store.close();
      throw err;
    }
    return new BatchService(options, store, settings, uploads);
  }

  // ------------------------------------------------------------------------------------------
  // Creation

  /** Streams an upload to a staging file (see UploadStaging.stage). 413 state_too_long over the limits. */
  async stageUpload(stream: AsyncIterable<Buffer | string>): Promise<StagedUpload> {
    this.ensureOpen();
    try {
      return await this.uploads.stage(stream);
    } catch (err) {
      throw storageFailureAnswer(err);
    }
  }

  /** Removes a staged upload that will not become a job. */
  async discard(upload: StagedUpload | undefined): Promise<void> {
    await this.uploads.discard(upload);
  }

  /**
   * Creates a job from a staged upload (consumed: handed to the store, or removed on error), or from
   * an input read where it is (`input`: the store reads it once, checks included).
   * Errors: 400 invalid_question (missing model or file, empty file, bad questions field),
   * 404 not_found (unknown model).
   */
  async create(input: CreateBatchInput): Promise<Batch> {
    return toBatch(await this.createJob(input));
  }

  /** create() returning the stored job (either dialect renders it: wireBatch()). */
  async createJob(input: CreateBatchInput): Promise<BatchJob> {
    try {
      const { model, requestedModel } = this.checkForm(input);
      const source = input.input ?? stagedInput(input.upload!, this.settings.maxRecordBytes);
      const id = `batch_${this.newId()}`;
      const modelFingerprint = this.options.service.modelFingerprint?.(model);
      const job = await this.store.create(
        { id, owner: input.owner, model, requestedModel, total: source.records, createdAt: Date.now(), questions: input.questions ?? null, openai: input.openai ?? null, modelFingerprint },
        source,
      );
      this.log(`batch ${id}: created (${job.total} records, model ${model}${input.openai ? `, OpenAI dialect, ${input.openai.endpoint}` : ''})`);
      return job;
    } finally {
      // Consumed by the store on success (a no-op then), removed on error.
      await this.discard(input.upload);
    }
  }

  /**
   * Validates a staged upload's records as the runner will, without creating a job (the upload is
   * removed). Errors as create(): 400 invalid_question (missing model or file, empty file, bad
   * questions field), 404 not_found (unknown model).
   */
  async validate(input: Omit<CreateBatchInput, 'owner'>): Promise<BatchValidation> {
    try {
      const { model, requestedModel, formQuestions } = this.checkForm(input);
      const ctx = { model, requestedModel, formQuestions, seen: new Map(), limits: this.settings.validation, maxRecordBytes: this.settings.maxRecordBytes };
      const { service } = this.options;
      const checkQuestions = service.checkQuestions && ((request: NormalizedDecideRequest) => service.checkQuestions!(model, request));
      return { object: 'batch_validation', model, ...(await validateUploadFile(input.upload!.path, ctx, checkQuestions)) };
    } finally {
      await this.discard(input.upload);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Reads

  /**
   * The job in the dialect it was created in (ours, or OpenAI's for a JSON-created batch): what
   * GET /v1/batches/{id} answers. show(), showList() and cancelAndShow() serve the HTTP routes.
   */
  async show(owner: string, id: string): Promise<WireBatch> {
    return wireBatch(await this.owned(owner, id));
  }

  /** The caller's batches, newest first, each in its own dialect; has_more always set. */
  async showList(owner: string, query: { limit?: unknown; after?: unknown } = {}): Promise<WireBatchList> {
    this.ensureOpen();
    const { limit, after } = parseListQuery(query);
    const rows = await this.store.list(owner, limit + 1, after);
    const data = rows.slice(0, limit).map(wireBatch);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
  }

  async cancelAndShow(owner: string, id: string): Promise<WireBatch> {
    await this.owned(owner, id);
    return wireBatch(await this.store.cancel(id, Date.now()));
  }

  /** The caller's job as stored; 404 not_found for another key's or a missing one. */
  async job(owner: string, id: string): Promise<BatchJob> {
    return this.owned(owner, id);
  }

  async get(owner: string, id: string): Promise<Batch> {
    return toBatch(await this.owned(owner, id));
  }

  /** The caller's batches, newest first. `after`: the last id of the previous page. */
  async list(owner: string, query: { limit?: unknown; after?: unknown } = {}): Promise<BatchList> {
    this.ensureOpen();
    const { limit, after } = parseListQuery(query);
    return toBatchList(await this.store.list(owner, limit + 1, after), limit);
  }

  /**
   * The result rows of a finished job as a stream of JSONL rows, in input order: all of them, or
   * those of one status (`rows`: OpenAI's output and error files). 404 not_found when the job is
   * not the caller's, not finished yet (the message gives the status and says to poll) or expired.
   */
  async openResults(owner: string, id: string, rows: ResultRows = 'all'): Promise<{ stream: Readable; bytes: number; batch: Batch }> {
    const job = await this.owned(owner, id);
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
    const { stream, bytes } = await this.store.openResults(job, rows);
    return { stream, bytes, batch: toBatch(job) };
  }

  // ------------------------------------------------------------------------------------------
  // Cancel

  /** Cancels a job, keeping the rows finished before it (see BatchStore.cancel). Final jobs are returned unchanged. */
  async cancel(owner: string, id: string): Promise<Batch> {
    await this.owned(owner, id);
    return toBatch(await this.store.cancel(id, Date.now()));
  }

  // ------------------------------------------------------------------------------------------
  // Housekeeping

  /** Expires finished jobs whose retention has passed: status expired, input and results deleted. */
  async sweep(now = Date.now()): Promise<void> {
    if (this.closed) return;
    await this.store.sweep(now);
  }

  /** Resolves when this process runs no batch work (tests, shutdown). */
  async whenIdle(): Promise<void> {
    await this.store.whenIdle();
  }

  /**
   * Stops this process's batch work at its next chunk boundary (unfinished jobs resume at the next
   * open, or on another worker) and closes the store. Idempotent. Call before closing the DecisionService.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.store.close();
    await this.uploads.close();
  }

  private async owned(owner: string, id: string): Promise<BatchJob> {
    this.ensureOpen();
    const job = isBatchId(id) ? await this.store.get(id) : undefined;
    // Another key's batch is indistinguishable from a missing one.
    if (!job || job.owner !== owner) throw notFound(String(id));
    return job;
  }

  /**
   * The form checks create() and validate() share, in the order a caller fixes them: model and file
   * present, the model known, the questions field valid, the file not empty.
   */
  private checkForm(input: Omit<CreateBatchInput, 'owner'>): { model: string; requestedModel: string; formQuestions: unknown } {
    this.ensureOpen();
    if (input.model === undefined || input.model === '') {
      throw new ApiError('invalid_question', 'model: required (form field "model", a model id such as svc-alpha)');
    }
    const records = (input.input ?? input.upload)?.records;
    if (records === undefined) throw new ApiError('invalid_question', 'file: required (form field "file", a JSONL file with one record per line)');
    const model = this.options.service.resolveModel(input.model);
    const formQuestions = input.questions === undefined ? undefined : parseFormQuestions(input.questions, this.settings.validation);
    if (records === 0) {
      throw new ApiError('invalid_question', 'file: empty; a batch needs at least one record (one JSON object per line)');
    }
    return { model, requestedModel: input.model, formQuestions };
  }

  private ensureOpen(): void {
    if (this.closed) throw new ApiError('server_error', 'the batch service is closed');
  }
}
