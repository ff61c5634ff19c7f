/**
 * Jobs and files as both backends' SQL rows name them (snake_case columns, numbers as numbers), and
 * back: one mapping, so a job reads the same from SQLite and from Postgres.
 */
import { openAiFieldsFromText } from './openai/job-fields.js';
import type { BatchJob, BatchStatus, StoredFile } from './ports.js';

/** The common job columns. */
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
  /** Absent from a row read without it: the job has not expired. */
  expired_from?: 'completed' | 'failed' | 'cancelled' | null;
  results_bytes: number;
  failed_bytes: number;
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
    expiredFrom: r.expired_from ?? null,
    resultsBytes: r.results_bytes,
    failedBytes: r.failed_bytes,
  };
}

/** A file's row. */
export type StoredFileRow = Omit<StoredFile, 'createdAt' | 'expiresAt'> & { created_at: number; expires_at: number | null };

export function storedFileFromRow(r: StoredFileRow): StoredFile {
  return {
    id: r.id,
    owner: r.owner,
    filename: r.filename,
    purpose: r.purpose,
    bytes: r.bytes,
    records: r.records,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
  };
}
