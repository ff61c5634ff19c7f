/**
 * BatchStore: where batch jobs, their input and their result rows live, and who works on them.
 * Two implementations, chosen at start by DECIDE_DATABASE_URL (open-store.ts):
 *   sqlite-store.ts  the embedded default: `<dataDir>/batches.sqlite` and one directory of files
 *                    per job, worked by this process's job pump.
 *   pg-store.ts      Postgres: jobs, input rows, chunks (as pg-boss jobs) and result rows in one
 *                    database, worked by any number of `decide serve` / `decide worker` processes.
 * BatchService (validation, ownership, the API's errors) talks only to this interface.
 *
 * Statuses: queued -> in_progress -> completed; failed; cancelling -> cancelled; expired.
 * Final statuses: completed, failed, cancelled, expired.
 */
import type { Readable } from 'node:stream';

import { BATCH_STATUSES, type BatchStatus } from '../../api/schemas.js';
import { openAiFieldsFromText, type OpenAiJobFields } from '../openai/job-fields.js';
import type { StagedUpload } from '../uploads.js';

export { BATCH_STATUSES, type BatchStatus };
export const FINAL_STATUSES: readonly BatchStatus[] = ['completed', 'failed', 'cancelled', 'expired'];
/** Statuses whose results can be downloaded. */
export const RESULT_STATUSES: readonly BatchStatus[] = ['completed', 'failed', 'cancelled'];

export function isFinal(status: BatchStatus): boolean {
  return FINAL_STATUSES.includes(status);
}

/**
 * The tokens of a job's answered records, summed as their rows are committed: prompt tokens read,
 * the part of them served from the prefix cache, and one output token per question (the one label
 * token read, as the synchronous endpoints count it). OpenAI's Batch object reports them as
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
}

/** The common job fields as both stores' SQL rows name them (snake_case columns). */
export interface BatchJobColumns {
  id: string;
  owner: string;
  model: string;
  requested_model: string;
  status: BatchStatus;
  total: number;
  completed: number;
  failed: number;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  expires_at: number | null;
  error_code: string | null;
  error_message: string | null;
  questions: string | null;
  /** OpenAiJobFields as JSON text, or null. */
  openai?: string | null;
  input_tokens: number;
  cached_tokens: number;
  output_tokens: number;
  cancelling_at: number | null;
}

export function batchJobFromColumns(r: BatchJobColumns): BatchJob {
  return {
    id: r.id,
    owner: r.owner,
    model: r.model,
    requestedModel: r.requested_model,
    status: r.status,
    total: r.total,
    completed: r.completed,
    failed: r.failed,
    createdAt: r.created_at,
    startedAt: r.started_at,
    completedAt: r.completed_at,
    expiresAt: r.expires_at,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    questions: r.questions,
    openai: openAiFieldsFromText(r.openai),
    usage: { inputTokens: r.input_tokens, cachedTokens: r.cached_tokens, outputTokens: r.output_tokens },
    cancellingAt: r.cancelling_at,
  };
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
}

export interface BatchResults {
  stream: Readable;
  bytes: number;
}

export interface BatchStore {
  /** 'sqlite' or 'postgres', for logs and tests. */
  readonly kind: 'sqlite' | 'postgres';
  /** Makes the job exist with its input; the staged upload is consumed (moved or copied, then removed). */
  create(job: NewBatch, upload: StagedUpload): Promise<BatchJob>;
  get(id: string): Promise<BatchJob | undefined>;
  /** The owner's jobs, newest first; `after` is the id of the last job of the previous page. */
  list(owner: string, limit: number, after?: string): Promise<BatchJob[]>;
  /**
   * Cancels an unfinished job, keeping the rows committed before it: queued -> cancelled,
   * in_progress -> cancelling (-> cancelled at the next chunk boundary) or cancelled at once.
   * A final job is returned unchanged.
   */
  cancel(id: string, now: number): Promise<BatchJob>;
  /** The committed result rows of a job (in input order, JSONL). */
  openResults(job: BatchJob): Promise<BatchResults>;
  /** Expires finished jobs whose retention has passed: status expired, input and results deleted. */
  sweep(now: number): Promise<void>;
  /** Resolves when this process runs no batch work (tests, shutdown). */
  whenIdle(): Promise<void>;
  /** Stops this process's work at a chunk boundary and closes the store. Idempotent. */
  close(): Promise<void>;
}
