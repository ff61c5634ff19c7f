/**
 * OpenAI's Files + Batch flow on our batch jobs: what the /v1/files routes and a JSON
 * `POST /v1/batches` call. Files are kept by a FileStore (SQLite or Postgres, as the jobs); a batch
 * is an ordinary job of BatchService (the same store, runners, crash-resume and live-before-batch
 * priority as our multipart batches) that carries its OpenAI fields and so answers in OpenAI's
 * dialect; its output and error files are views of its result rows, split by the status the store
 * keeps with each row (their byte counts too, so a file object costs no read of its rows).
 *
 * Decisions (docs/compatibility.md, "Batches"):
 * - Creation reads the whole input file, once, where it is (openai/input-check.ts, in the store's
 *   own pass over the lines): a line that is not `{custom_id, method: "POST", url: <endpoint>,
 *   body: {...}}`, or a custom_id used twice, makes creation a 400 that lists the lines (up to 20),
 *   and no batch exists. A line whose body the endpoint refuses is not a creation error:
 *   it gets its error-file row, with the endpoint's status and error body, as OpenAI does.
 * - The batch's model is its first line's `body.model`; a line naming another model is refused (400
 *   in the error file): one job runs one model.
 * - Files belong to the uploading key; another key's file is 404, as a missing one.
 */
import type { Readable } from 'node:stream';

import { monotonicFactory } from 'ulid';

import { DIALECT_PATHS } from '../../api/dialects.js';
import { isApiError } from '../../api/errors.js';
import { isPlainObject, shownValue } from '../../api/json-value.js';
import type { BatchService, StagedUpload } from '../batch-service.js';
import { openFileStore } from '../open-stores.js';
import { inputLines } from '../input-lines.js';
import { FileGoneError, isExpired, resultRowsBytes, type BatchInput, type BatchJob, type FileStore, type StoredFile } from '../ports.js';
import { readListLimit, type ListLimit } from '../query.js';
import { OpenAiWireError, oaError } from './errors.js';
import type { OpenAiJobFields } from './job-fields.js';
import { EnvelopeCheck, firstLineModel } from './input-check.js';
import { isUploadFileId, resultFileObject, resultFileOf, toOpenAiBatch, uploadFileObject, type OpenAiBatch, type OpenAiFileObject } from './wire.js';

export const FILE_PURPOSES = ['batch'] as const;
export const COMPLETION_WINDOWS = ['24h'] as const;
/** OpenAI's metadata limits. */
export const METADATA_LIMITS = Object.freeze({ keys: 16, keyChars: 64, valueChars: 512 });
/** GET /v1/files: OpenAI's, all of a caller's uploads in one page unless asked for fewer. */
export const FILE_LIST_LIMIT: ListLimit = Object.freeze({ default: 10_000, max: 10_000 });
/**
 * An upload's life, OpenAI's: `expires_after[seconds]` from 1 hour to 30 days after `created_at`;
 * without it a batch file expires after 30 days, as OpenAI's do. A batch keeps its own copy of its
 * input, so an expired upload takes nothing from a batch made from it.
 */
export const FILE_EXPIRY_SECONDS = Object.freeze({ min: 3600, max: 2_592_000, default: 2_592_000 });
const MAX_FILENAME_CHARS = 255;
const CREATE_FIELDS = ['input_file_id', 'endpoint', 'completion_window', 'metadata', 'output_expires_after'];

export interface FileListPage {
  object: 'list';
  data: OpenAiFileObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** The form fields `expires_after[anchor]` and `expires_after[seconds]` as sent (undefined when absent). */
export interface ExpiresAfterFields {
  anchor: string | undefined;
  seconds: string | undefined;
}

/** The upload's life in seconds from its form fields (400 naming the field when they are not OpenAI's). */
function uploadExpirySeconds(fields: ExpiresAfterFields | undefined): number {
  if (fields === undefined || (fields.anchor === undefined && fields.seconds === undefined)) return FILE_EXPIRY_SECONDS.default;
  const { min, max } = FILE_EXPIRY_SECONDS;
  if (fields.anchor === undefined) throw oaError(400, "expires_after[anchor]: required with expires_after[seconds] (send 'created_at')", 'expires_after[anchor]');
  if (fields.anchor !== 'created_at') throw oaError(400, `expires_after[anchor]: must be 'created_at' (the only anchor), got ${shownValue(fields.anchor)}`, 'expires_after[anchor]');
  const range = `an integer from ${min} (1 hour) to ${max} (30 days)`;
  if (fields.seconds === undefined) throw oaError(400, `expires_after[seconds]: required with expires_after[anchor] (${range})`, 'expires_after[seconds]');
  const seconds = /^[0-9]{1,10}$/.test(fields.seconds) ? Number(fields.seconds) : NaN;
  if (!(seconds >= min && seconds <= max)) throw oaError(400, `expires_after[seconds]: must be ${range}, got ${shownValue(fields.seconds)}`, 'expires_after[seconds]');
  return seconds;
}

/**
 * OpenAI's `output_expires_after` on batch creation, `{anchor: "created_at", seconds}` in the range
 * of an upload's `expires_after`: checked as OpenAI checks it, then ignored (a batch's result files
 * last as long as its results, the retention).
 */
function checkOutputExpiresAfter(value: unknown): void {
  if (value === undefined || value === null) return;
  const { min, max } = FILE_EXPIRY_SECONDS;
  const rule = `{anchor: 'created_at', seconds: an integer from ${min} (1 hour) to ${max} (30 days)}`;
  if (!isPlainObject(value)) throw oaError(400, `output_expires_after: must be ${rule}, got ${shownValue(value)}`, 'output_expires_after');
  for (const key of Object.keys(value)) {
    if (key !== 'anchor' && key !== 'seconds') throw oaError(400, `output_expires_after.${key.slice(0, 64)}: unknown field (allowed: anchor, seconds)`, 'output_expires_after');
  }
  if (value.anchor !== 'created_at') throw oaError(400, `output_expires_after.anchor: must be 'created_at' (the only anchor), got ${shownValue(value.anchor)}`, 'output_expires_after.anchor');
  const seconds = value.seconds;
  if (!(typeof seconds === 'number' && Number.isInteger(seconds) && seconds >= min && seconds <= max)) {
    throw oaError(400, `output_expires_after.seconds: must be an integer from ${min} (1 hour) to ${max} (30 days), got ${shownValue(seconds)}`, 'output_expires_after.seconds');
  }
}

export class OpenAiBatchApi {
  private readonly newId = monotonicFactory();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  private constructor(
    private readonly batches: BatchService,
    readonly files: FileStore,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Opens the file store beside the batch store (same database or data dir) and sweeps expired
   * uploads now and every DECIDE_BATCH_SWEEP_SECONDS, as the batch results' retention does.
   */
  static async open(batches: BatchService, log: (line: string) => void = () => undefined): Promise<OpenAiBatchApi> {
    const api = new OpenAiBatchApi(batches, await openFileStore(batches.storeSelection, batches.dataDir), log);
    await api.sweepExpiredFiles();
    api.sweepTimer = setInterval(() => void api.sweepExpiredFiles(), batches.settings.sweepIntervalMs);
    api.sweepTimer.unref();
    return api;
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    await this.sweeping;
    await this.files.close();
  }

  /** Deletes the uploads expired by `now`; a failure is logged and retried at the next sweep. */
  sweepExpiredFiles(now = Date.now()): Promise<void> {
    this.sweeping ??= this.files
      .deleteExpired(now)
      .then(
        (ids) => ids.forEach((id) => this.log(`file ${id}: expired, deleted`)),
        (err: unknown) => this.log(`file sweep failed: ${String(err)}`),
      )
      .finally(() => {
        this.sweeping = undefined;
      });
    return this.sweeping;
  }

  // ------------------------------------------------------------------------------------------
  // Files

  /** Stages an upload with the batch file limits (413 over them; see BatchService.stageUpload). */
  stage(stream: AsyncIterable<Buffer | string>): Promise<StagedUpload> {
    return this.batches.stageUpload(stream);
  }

  discard(upload: StagedUpload | undefined): Promise<void> {
    return this.batches.discard(upload);
  }

  /** Makes a staged upload a file of `owner` (consumed, or removed on error). */
  async upload(
    owner: string,
    input: { purpose: string | undefined; filename: string | undefined; upload: StagedUpload | undefined; expiresAfter?: ExpiresAfterFields },
  ): Promise<OpenAiFileObject> {
    try {
      if (input.purpose === undefined) throw oaError(400, "purpose: required (form field 'purpose'; the only purpose served is 'batch')", 'purpose');
      if (!(FILE_PURPOSES as readonly string[]).includes(input.purpose)) {
        throw oaError(400, `purpose: ${shownValue(input.purpose)} is not supported; this server keeps files for batches only (purpose 'batch')`, 'purpose');
      }
      if (!input.upload) throw oaError(400, "file: required (form field 'file', a JSONL file with one request per line)", 'file');
      if (input.upload.records === 0) throw oaError(400, 'file: empty; a batch file needs at least one request line', 'file');
      const expirySeconds = uploadExpirySeconds(input.expiresAfter);
      const filename = (input.filename || 'upload.jsonl').slice(0, MAX_FILENAME_CHARS);
      const createdAt = Date.now();
      const file: StoredFile = {
        id: `file-${this.newId()}`,
        owner,
        filename,
        purpose: input.purpose,
        bytes: input.upload.bytes,
        records: input.upload.records,
        createdAt,
        expiresAt: createdAt + expirySeconds * 1000,
      };
      return uploadFileObject(await this.files.create(file, input.upload));
    } finally {
      await this.discard(input.upload);
    }
  }

  /** GET /v1/files: ?after=<file id>, ?limit (FILE_LIST_LIMIT), ?order=asc|desc (default desc), ?purpose. */
  async listFiles(owner: string, query: { after?: unknown; limit?: unknown; order?: unknown; purpose?: unknown }): Promise<FileListPage> {
    const limit = readListLimit(query.limit, FILE_LIST_LIMIT);
    if (limit === null) throw oaError(400, `limit: must be an integer from 1 to ${FILE_LIST_LIMIT.max}`, 'limit');
    const order = query.order === undefined ? 'desc' : query.order;
    if (order !== 'asc' && order !== 'desc') throw oaError(400, "order: must be 'asc' or 'desc'", 'order');
    if (query.after !== undefined && (typeof query.after !== 'string' || !isUploadFileId(query.after))) {
      throw oaError(400, 'after: must be a file id (the last id of the previous page)', 'after');
    }
    // One purpose: OpenAI's others (fine-tune, assistants, ...) name no file here, so they list
    // none; a purpose given twice or empty is the caller's mistake, not an empty list.
    if (query.purpose !== undefined && (typeof query.purpose !== 'string' || query.purpose === '')) {
      throw oaError(400, `purpose: must be one purpose, e.g. 'batch' (the only one a file here has), got ${Array.isArray(query.purpose) ? 'it more than once' : shownValue(query.purpose)}`, 'purpose');
    }
    // Only uploads are listed; a batch's output and error files are reached through the batch.
    const rows = query.purpose !== undefined && query.purpose !== 'batch' ? [] : await this.files.list(owner, limit + 1, order, Date.now(), query.after as string | undefined);
    const data = rows.slice(0, limit).map(uploadFileObject);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
  }

  async getFile(owner: string, id: string): Promise<OpenAiFileObject> {
    const result = resultFileOf(id);
    if (result) {
      const job = await this.resultJob(owner, id, result);
      return resultFileObject(job, result.kind, resultRowsBytes(job, result.kind === 'errors' ? 'failed' : 'answered'));
    }
    return uploadFileObject(await this.ownedFile(owner, id));
  }

  /** The file's bytes: an upload as it was sent; a batch's output or error file as JSONL rows in input order. */
  async fileContent(owner: string, id: string): Promise<Readable> {
    const result = resultFileOf(id);
    if (!result) return this.files.open(await this.ownedFile(owner, id));
    await this.resultJob(owner, id, result);
    const { stream } = await this.batches.openResults(owner, result.batchId, result.kind === 'errors' ? 'failed' : 'answered');
    return stream;
  }

  async deleteFile(owner: string, id: string): Promise<{ id: string; object: 'file'; deleted: true }> {
    if (resultFileOf(id)) throw oaError(400, `${id} is a batch's result file; it is deleted with the batch's results (retention)`, 'file_id');
    await this.ownedFile(owner, id);
    await this.files.delete(id);
    return { id, object: 'file', deleted: true };
  }

  private async ownedFile(owner: string, id: string): Promise<StoredFile> {
    const file = isUploadFileId(id) ? await this.files.get(id) : undefined;
    // Another key's file, and one expired but not swept yet, are indistinguishable from a missing one.
    if (!file || file.owner !== owner || isExpired(file, Date.now())) throw oaError(404, `No such File object: ${id.slice(0, 100)}`, 'id');
    return file;
  }

  /** The job behind a result file id, when it is the caller's OpenAI-dialect job and that file exists. */
  private async resultJob(owner: string, id: string, result: { batchId: string; kind: 'output' | 'errors' }): Promise<BatchJob> {
    const missing = () => oaError(404, `No such File object: ${id.slice(0, 100)}`, 'id');
    let job: BatchJob;
    try {
      job = await this.batches.job(owner, result.batchId);
    } catch (err) {
      if (isApiError(err) && err.code === 'not_found') throw missing();
      throw err;
    }
    const batch = job.openai ? toOpenAiBatch(job) : undefined;
    if (!batch || (result.kind === 'output' ? batch.output_file_id : batch.error_file_id) !== id) throw missing();
    return job;
  }

  // ------------------------------------------------------------------------------------------
  // Batches

  /** POST /v1/batches with a JSON body: a job from an uploaded file. */
  async createBatch(owner: string, body: unknown): Promise<OpenAiBatch> {
    const fields = this.createParams(body);
    const file = await this.ownedFileParam(owner, fields.inputFileId);
    if (file.purpose !== 'batch') throw oaError(400, `input_file_id: ${file.id} has purpose '${file.purpose}'; a batch reads a file uploaded with purpose 'batch'`, 'input_file_id');
    const { maxRecordBytes } = this.batches.settings;
    const { files } = this;
    const checkedLines = async function* (check: EnvelopeCheck) {
      yield* inputLines(await files.open(file), { maxRecordBytes, check });
    };
    try {
      const model = await firstLineModel(await files.open(file), fields.endpoint, maxRecordBytes);
      if (model === undefined) {
        // The first line is refused: the whole file is read only to list every bad line (the check throws).
        for await (const _ of checkedLines(new EnvelopeCheck(fields.endpoint)));
        throw oaError(400, 'input_file_id: the input file has no request lines', 'input_file_id');
      }
      // Read where it is, once: the store checks the lines as it reads them and copies (links) the file.
      const input: BatchInput = {
        bytes: file.bytes,
        records: file.records,
        checked: true,
        lines: () => checkedLines(new EnvelopeCheck(fields.endpoint)),
        placeAt: (target) => files.copyTo(file, target),
      };
      return toOpenAiBatch(await this.batches.createJob({ owner, model, upload: undefined, input, openai: fields }));
    } catch (err) {
      if (err instanceof FileGoneError) throw oaError(404, `input_file_id: ${file.id} was deleted while the batch was being created`, 'input_file_id');
      if (isApiError(err) && err.code === 'not_found') {
        throw oaError(404, `body.model: ${err.message} (the batch's model is its first line's body.model)`, 'model', 'model_not_found');
      }
      throw err;
    }
  }

  /** The upload input_file_id names; only a missing (or another key's) file is a 404, anything unexpected stays itself (a 500). */
  private async ownedFileParam(owner: string, id: string): Promise<StoredFile> {
    const noSuchFile = () => oaError(404, `input_file_id: no such file ${JSON.stringify(id.slice(0, 100))} (upload it with POST /v1/files, purpose 'batch')`, 'input_file_id');
    const isNotFound = (err: unknown) => err instanceof OpenAiWireError && err.wire.status === 404;
    const result = resultFileOf(id);
    if (result) {
      // The caller can read this file (GET /v1/files/{id}), so it is there: only its purpose is wrong.
      try {
        await this.resultJob(owner, id, result);
      } catch (err) {
        throw isNotFound(err) ? noSuchFile() : err;
      }
      throw oaError(400, `input_file_id: ${id} is a batch's ${result.kind === 'errors' ? 'error' : 'output'} file (purpose 'batch_output'); only a file uploaded with purpose 'batch' can be a batch's input`, 'input_file_id');
    }
    try {
      return await this.ownedFile(owner, id);
    } catch (err) {
      throw isNotFound(err) ? noSuchFile() : err;
    }
  }

  private createParams(body: unknown): OpenAiJobFields {
    if (!isPlainObject(body)) throw oaError(400, `request body: must be a JSON object {input_file_id, endpoint, completion_window, metadata?}, got ${shownValue(body)}`);
    for (const key of Object.keys(body)) {
      if (!CREATE_FIELDS.includes(key)) throw oaError(400, `${key.slice(0, 100)}: unknown field (allowed: ${CREATE_FIELDS.join(', ')})`, key.slice(0, 100));
    }
    const { input_file_id: inputFileId, endpoint, completion_window: completionWindow, metadata } = body;
    if (typeof inputFileId !== 'string' || inputFileId === '') throw oaError(400, `input_file_id: required, a file id, got ${shownValue(inputFileId)}`, 'input_file_id');
    if (typeof endpoint !== 'string' || !DIALECT_PATHS.includes(endpoint)) {
      throw oaError(400, `endpoint: must be one of ${DIALECT_PATHS.join(', ')}, got ${shownValue(endpoint)}`, 'endpoint');
    }
    if (typeof completionWindow !== 'string' || !(COMPLETION_WINDOWS as readonly string[]).includes(completionWindow)) {
      throw oaError(400, `completion_window: must be '24h', got ${shownValue(completionWindow)}`, 'completion_window');
    }
    checkOutputExpiresAfter(body.output_expires_after);
    return { inputFileId, endpoint, completionWindow, metadata: this.metadata(metadata) };
  }

  private metadata(value: unknown): Record<string, string> | null {
    if (value === undefined || value === null) return null;
    const { keys, keyChars, valueChars } = METADATA_LIMITS;
    if (!isPlainObject(value)) throw oaError(400, `metadata: must be an object of strings, got ${shownValue(value)}`, 'metadata');
    const entries = Object.entries(value);
    if (entries.length > keys) throw oaError(400, `metadata: at most ${keys} keys, got ${entries.length}`, 'metadata');
    for (const [k, v] of entries) {
      if (k.length > keyChars) throw oaError(400, `metadata: key ${shownValue(k)} is longer than ${keyChars} characters`, 'metadata');
      if (typeof v !== 'string') throw oaError(400, `metadata.${k.slice(0, 64)}: must be a string, got ${shownValue(v)}`, 'metadata');
      if (v.length > valueChars) throw oaError(400, `metadata.${k.slice(0, 64)}: longer than ${valueChars} characters`, 'metadata');
    }
    return Object.fromEntries(entries) as Record<string, string>;
  }
}
