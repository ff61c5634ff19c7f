/**
 * The ports of the batch layer: every interface its parts meet at, declared once, implemented
 * elsewhere. Nothing here names a backend; the SQLite code (sqlite/) and the Postgres code (pg/)
 * implement BatchStore and FileStore, open-stores.ts picks one pair, and BatchService (batch-service.ts)
 * and the OpenAI flow (openai/openai-batches.ts) talk only to these.
 *
 * Statuses: queued -> in_progress -> completed; failed; cancelling -> cancelled; expired.
 * Final statuses: completed, failed, cancelled, expired.
 */
import type { Readable } from 'node:stream';

import { BATCH_STATUSES, type BatchStatus } from '../api/schemas.js';
import type { NormalizedDecideRequest, ValidationLimits } from '../api/validate.js';
import type { RecordOutcome } from '../service/decision-service.js';
import type { VersionPin } from '../service/version-pin.js';

export { BATCH_STATUSES, type BatchStatus };
export const FINAL_STATUSES: readonly BatchStatus[] = ['completed', 'failed', 'cancelled', 'expired'];
/** Statuses whose results can be downloaded (and that expire in time). */
export const RESULT_STATUSES: readonly BatchStatus[] = ['completed', 'failed', 'cancelled'];
/** Statuses a job can still leave by being worked on or cancelled. */
export const OPEN_STATUSES: readonly BatchStatus[] = BATCH_STATUSES.filter((s) => !FINAL_STATUSES.includes(s));

/** A status set as SQL's IN list: `('completed', 'failed', 'cancelled')` (the names are fixed words, never input). */
export function sqlStatusList(statuses: readonly BatchStatus[]): string {
  return `(${statuses.map((s) => `'${s}'`).join(', ')})`;
}

export function isFinal(status: BatchStatus): boolean {
  return FINAL_STATUSES.includes(status);
}

// ---------------------------------------------------------------------------------------------
// What the batch layer needs of the decision service

/** What the chunk scorer needs of DecisionService: the valid records of a chunk, scored in one call. */
export interface RecordScorer {
  /**
   * `pin`: one per batch run, holding its calls to one loaded version (service/version-pin.ts).
   * `cacheScope`: who may share the records' cached states (the job owner's key id).
   */
  decideRecords(modelId: string, requests: NormalizedDecideRequest[], priority?: 'live' | 'batch', pin?: VersionPin, cacheScope?: string): Promise<RecordOutcome[]>;
  /**
   * The model, loaded; throws when it is not installed or cannot load. When present, a failed
   * chunk asks it whether the failure is the whole job's (scoreChunk: ModelUnusableError).
   */
  runtime?(id: string): Promise<unknown>;
}

/** What the batch service, its stores and their workers need of DecisionService. */
export interface BatchDecisionService extends RecordScorer {
  resolveModel(id: string): string;
  /**
   * The content fingerprint of the installed copy of a model (models/model-fingerprint.ts): a
   * Postgres job records it at creation, and a worker whose copy differs leaves the job's chunks.
   * Without it, jobs record none and every copy scores.
   */
  modelFingerprint?(id: string): string;
  runtime(id: string): Promise<unknown>;
  /** False once the service is closed: runners stop rather than fail rows. */
  isReady?(): boolean;
  /**
   * Throws the ApiError of a record whose questions the model cannot take whatever its state (400
   * invalid_question), as scoring would: the dry run's check of a record's questions. Without it the
   * dry run checks the records' fields only.
   */
  checkQuestions?(modelId: string, request: NormalizedDecideRequest): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Settings (resolved by settings.ts from options, DECIDE_BATCH_* and defaults)

export interface ChunkOptions {
  /** Valid records per decideRecords call (one scheduler job, scored in short engine calls). Default 128. */
  chunkRecords: number;
  /** Bytes of valid records per call, a stand-in for a token budget. Default 64 KiB (~16k tokens). */
  chunkBytes: number;
  /** Chunks in flight: one scoring while the next is read and tokenized. Default 2. */
  pipelineDepth: number;
}

export interface BatchSettings {
  maxFileBytes: number;
  maxRecords: number;
  maxRecordBytes: number;
  retentionMs: number;
  sweepIntervalMs: number;
  concurrency: number;
  chunk: ChunkOptions;
  validation: Partial<ValidationLimits> | undefined;
}

// ---------------------------------------------------------------------------------------------
// Jobs

/**
 * What a batch created in OpenAI's dialect (`POST /v1/batches` with a JSON body) keeps beside the
 * common job fields: the endpoint its lines call, the input file, the completion window and the
 * metadata. Stored with the job as one JSON text column (`openai`, null for jobs of our multipart
 * dialect), so a job answers in the dialect it was created in on every host and after a restart.
 */
export interface OpenAiJobFields {
  /** '/v1/decide', '/v1/systemone' or '/v1/decisions': every line's `url`. */
  endpoint: string;
  inputFileId: string;
  completionWindow: string;
  metadata: Record<string, string> | null;
}

/**
 * The tokens of a job's answered records, summed as their rows are committed: prompt tokens read,
 * the part of them served from the prefix cache, and the answer tokens read (one a question, two
 * for a question answered with a code), as the synchronous endpoints count them. OpenAI's Batch object reports them as
 * `usage` (openai/wire.ts).
 */
export interface TokenUsage {
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
}

export function zeroUsage(): TokenUsage {
  return { inputTokens: 0, cachedTokens: 0, outputTokens: 0 };
}

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return { inputTokens: a.inputTokens + b.inputTokens, cachedTokens: a.cachedTokens + b.cachedTokens, outputTokens: a.outputTokens + b.outputTokens };
}

/** A job as every store keeps it: what the API shows and what ownership checks need. */
export interface BatchJob {
  id: string;
  owner: string;
  /** Resolved dated model id. */
  model: string;
  /** The model field as the form gave it (may be an alias). */
  requestedModel: string;
  status: BatchStatus;
  total: number;
  completed: number;
  failed: number;
  /** Epoch milliseconds. */
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
  expiresAt: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  /** The form's questions field (JSON text) or null. */
  questions: string | null;
  /** Set for a job created in OpenAI's dialect (JSON body): it answers in that dialect. */
  openai: OpenAiJobFields | null;
  /** Of the rows committed so far. */
  usage: TokenUsage;
  /** When a cancel was asked for (epoch ms), or null. */
  cancellingAt: number | null;
  /**
   * For an expired job, the final status it had before (completedAt is when it reached that one);
   * null otherwise, and for a job that expired before this was kept.
   */
  expiredFrom: 'completed' | 'failed' | 'cancelled' | null;
  /** Bytes of the committed result rows, and of the failed ones among them (OpenAI's error file). */
  resultsBytes: number;
  failedBytes: number;
}

/**
 * How far a job's runner got: what a store commits after each chunk, in one transaction with the
 * rows it covers (SQLite job row, `decide batch`'s state file).
 */
export interface JobProgress {
  /** Byte offset of the next unread input line. */
  inputOffset: number;
  /** Input lines (blank ones included) before inputOffset. */
  inputLine: number;
  /** Bytes of the results file that hold committed rows. */
  resultsBytes: number;
  /** Bytes of the failed rows among them. */
  failedBytes: number;
  completed: number;
  failed: number;
  /** Of the answered records before inputOffset. */
  usage: TokenUsage;
}

/** A validated job to create (BatchService has checked the model, questions and record count). */
export interface NewBatch {
  id: string;
  owner: string;
  model: string;
  requestedModel: string;
  /** Records (non-blank lines) of the upload. */
  total: number;
  createdAt: number;
  questions: string | null;
  /** A job of OpenAI's dialect (see BatchJob.openai). */
  openai?: OpenAiJobFields | null;
  /** The fingerprint of the model's copy the job was created on (kept by the Postgres store). */
  modelFingerprint?: string;
}

/** An upload on disk, fsynced, not yet a job (uploads.ts stages it). */
export interface StagedUpload {
  path: string;
  bytes: number;
  records: number;
}

/** One non-blank line of a job's input as a store keeps it (Postgres: a decide_batch_inputs row). */
export interface InputLine {
  /** 1-based line number in the file, blank lines included. */
  lineNo: number;
  /** Bytes of the line without its newline. */
  length: number;
  /** The line as uploaded; null when over the record size limit (its row fails). */
  bytes: Buffer | null;
  /** The line that claimed this line's custom_id first, when an earlier one did (its row fails). */
  dupOfLine: number | null;
}

/**
 * A job's input as a store takes it at creation: a staged upload (our multipart form) or an
 * uploaded file (OpenAI's input_file_id), read where it is, never staged again.
 */
export interface BatchInput {
  bytes: number;
  /** Non-blank lines. */
  records: number;
  /** Whether creation checks the lines (an OpenAI batch): a store that keeps no lines reads lines() then all the same. */
  readonly checked: boolean;
  /**
   * The non-blank lines, read once from the start and each decoded once; creation's check runs on
   * them as they are read and throws, after the last, when it refuses the input: the store then
   * creates nothing.
   */
  lines(): AsyncIterable<InputLine>;
  /** Puts the input at `target`, a file in a new directory, durably: a staged upload is moved there, an uploaded file linked (or copied). */
  placeAt(target: string): Promise<void>;
}

/** Which of a job's result rows to read: every row, the answered ones (OpenAI's output file) or the failed ones (its error file). */
export type ResultRows = 'all' | 'answered' | 'failed';

export interface BatchResults {
  stream: Readable;
  bytes: number;
}

export interface BatchStore {
  /** 'sqlite' or 'postgres', for logs and tests. */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Makes the job exist with its input, whole or not at all: its checks (BatchInput.lines) pass
   * before the job row commits. A staged upload is consumed (moved, or read then removed).
   */
  create(job: NewBatch, input: BatchInput): Promise<BatchJob>;
  get(id: string): Promise<BatchJob | undefined>;
  /** The owner's jobs, newest first; `after` is the id of the last job of the previous page. */
  list(owner: string, limit: number, after?: string): Promise<BatchJob[]>;
  /**
   * Cancels an unfinished job, keeping the rows committed before it: queued -> cancelled,
   * in_progress -> cancelling (-> cancelled at the next chunk boundary) or cancelled at once.
   * A final job is returned unchanged.
   */
  cancel(id: string, now: number): Promise<BatchJob>;
  /**
   * The committed result rows of a job (in input order, JSONL), all of them or those of one status;
   * `bytes` is their length, known without reading them (each row's status is stored with it).
   */
  openResults(job: BatchJob, rows?: ResultRows): Promise<BatchResults>;
  /** Expires finished jobs whose retention has passed: status expired, input and results deleted. */
  sweep(now: number): Promise<void>;
  /** Resolves when this process runs no batch work (tests, shutdown). */
  whenIdle(): Promise<void>;
  /** Stops this process's work at a chunk boundary and closes the store. Idempotent. */
  close(): Promise<void>;
}

/** The bytes `rows` of a job's results hold. */
export function resultRowsBytes(job: Pick<BatchJob, 'resultsBytes' | 'failedBytes'>, rows: ResultRows): number {
  return rows === 'all' ? job.resultsBytes : rows === 'failed' ? job.failedBytes : job.resultsBytes - job.failedBytes;
}

/** What every batch store is opened with (open-stores.ts picks the store; each store takes this). */
export interface StoreContext {
  /** The SQLite store's folder (batches.sqlite, batches/); Postgres keeps everything in its database. */
  dataDir?: string;
  settings: BatchSettings;
  service: BatchDecisionService;
  /** Work on jobs in this process. */
  work: boolean;
  log: (line: string) => void;
  /** What an operator should act on (a data dir others can enter); default `log`. */
  warn?: (line: string) => void;
}

// ---------------------------------------------------------------------------------------------
// Uploaded files (OpenAI's Files API)

export interface StoredFile {
  /** `file-<ULID>`. */
  id: string;
  /** The API key id that uploaded it. */
  owner: string;
  filename: string;
  purpose: string;
  bytes: number;
  /** Non-blank lines. */
  records: number;
  /** Epoch milliseconds. */
  createdAt: number;
  /** Epoch milliseconds after which the file is gone (OpenAI's `expires_after`); null: kept until deleted. */
  expiresAt: number | null;
}

/** Whether the file has expired at `now` (the sweep may not have deleted it yet: it is gone all the same). */
export function isExpired(file: StoredFile, now: number): boolean {
  return file.expiresAt !== null && file.expiresAt <= now;
}

/**
 * A file deleted (or expired and swept) while it was being read: its stream fails with this instead
 * of ending early, so neither a download nor a batch made from it is ever silently cut short.
 */
export class FileGoneError extends Error {
  constructor(readonly fileId: string) {
    super(`file ${fileId} was deleted while it was being read`);
  }
}

/**
 * Where uploaded files (OpenAI's `POST /v1/files`, purpose `batch`) live: rows in the same SQLite
 * file or Postgres database as the jobs. Uploads arrive staged (streamed to disk and counted with
 * the batch file limits) and are consumed by create(); neither an upload nor a download is held
 * whole in memory.
 */
export interface FileStore {
  create(file: StoredFile, upload: StagedUpload): Promise<StoredFile>;
  get(id: string): Promise<StoredFile | undefined>;
  /**
   * The owner's files not expired at `now`, by id (= upload order): `desc` newest first; `after` is
   * the last id of the previous page.
   */
  list(owner: string, limit: number, order: 'asc' | 'desc', now: number, after?: string): Promise<StoredFile[]>;
  /** The file's bytes, streamed; the stream fails with FileGoneError when the file is deleted under it. */
  open(file: StoredFile): Promise<Readable>;
  /**
   * A copy of the file's bytes at `target` (a file in a new directory), durable and private to its
   * new owner: a batch's own input, kept when the upload is deleted. FileGoneError when the file is
   * gone. The SQLite store links it (uploads never change).
   */
  copyTo(file: StoredFile, target: string): Promise<void>;
  /** False when there was no such file. */
  delete(id: string): Promise<boolean>;
  /** Deletes the files expired at `now`, bytes and all; returns their ids. */
  deleteExpired(now: number): Promise<string[]>;
  close(): Promise<void>;
}
