/**
 * OpenAI's wire objects for our jobs and files (sources: docs/compatibility.md):
 * the Batch object of a JSON-created job (its schema and type: src/api/openai/batch-schemas.ts),
 * the FileObject of an upload or of a batch's output and error files (its schema and type:
 * src/api/openai/file-schemas.ts), and the list page. How our
 * statuses and fields map onto OpenAI's is documented in docs/compatibility.md ("Batches"); this
 * file is that table in code.
 */
import type { OpenAiBatch, OpenAiBatchStatus } from '../../api/openai/batch-schemas.js';
import type { OpenAiFileObject } from '../../api/openai/file-schemas.js';
import type { WireBatch, WireBatchList } from '../../api/schemas.js';
import type { BatchJob, BatchStatus, StoredFile } from '../ports.js';
import { toBatch } from '../wire.js';

export type { OpenAiBatch, OpenAiBatchStatus, OpenAiFileObject, WireBatch, WireBatchList };

/**
 * Ours -> OpenAI's. A queued job was validated when it was created (creation reads the whole file),
 * so it is in_progress: accepted, its requests waiting behind live traffic. We never finalize
 * (rows are written as they are scored), so `finalizing` is not used.
 */
const STATUS: Readonly<Record<BatchStatus, OpenAiBatchStatus>> = {
  queued: 'in_progress',
  in_progress: 'in_progress',
  completed: 'completed',
  failed: 'failed',
  cancelling: 'cancelling',
  cancelled: 'cancelled',
  expired: 'expired',
};



const seconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));

// ---------------------------------------------------------------------------------------------
// File ids: uploads are `file-<ULID>`; a batch's results are two files named after the batch.

const UPLOAD_ID = /^file-[0-9A-HJKMNP-TV-Z]{26}$/;
const RESULT_FILE_ID = /^file-(output|errors)-([0-9A-HJKMNP-TV-Z]{26})$/;

export function isUploadFileId(id: string): boolean {
  return UPLOAD_ID.test(id);
}

/** The batch and which of its files a result file id names, or undefined. */
export function resultFileOf(id: string): { batchId: string; kind: 'output' | 'errors' } | undefined {
  const m = RESULT_FILE_ID.exec(id);
  return m ? { batchId: `batch_${m[2]}`, kind: m[1] as 'output' | 'errors' } : undefined;
}

export function resultFileId(batchId: string, kind: 'output' | 'errors'): string {
  return `file-${kind}-${batchId.slice('batch_'.length)}`;
}

/** Results exist (completed, failed or cancelled with rows kept) and are not expired. */
function hasResults(job: BatchJob): boolean {
  return job.status === 'completed' || job.status === 'failed' || job.status === 'cancelled';
}

// ---------------------------------------------------------------------------------------------

export function toOpenAiBatch(job: BatchJob): OpenAiBatch {
  const fields = job.openai!;
  const status = STATUS[job.status];
  // An expired job keeps the timestamp of the final status it had reached: how it ended.
  const at = (s: BatchStatus) => (job.status === s || job.expiredFrom === s ? seconds(job.completedAt) : null);
  return {
    id: job.id,
    object: 'batch',
    endpoint: fields.endpoint,
    model: job.model,
    errors: job.errorCode ? { object: 'list', data: [{ code: job.errorCode, message: job.errorMessage ?? '', param: null, line: null }] } : null,
    input_file_id: fields.inputFileId,
    completion_window: fields.completionWindow,
    status,
    output_file_id: hasResults(job) && job.completed > 0 ? resultFileId(job.id, 'output') : null,
    error_file_id: hasResults(job) && job.failed > 0 ? resultFileId(job.id, 'errors') : null,
    created_at: seconds(job.createdAt)!,
    // OpenAI's in_progress_at is when validation ended and the batch entered its queue (it then
    // waits there as `in_progress`); creation validates the whole file, so that is created_at.
    in_progress_at: seconds(job.createdAt),
    // When the results are deleted (our retention); OpenAI's 24h window never expires a running job here.
    expires_at: seconds(job.expiresAt),
    finalizing_at: null,
    completed_at: at('completed'),
    failed_at: at('failed'),
    expired_at: job.status === 'expired' ? seconds(job.expiresAt) : null,
    cancelling_at: seconds(job.cancellingAt),
    cancelled_at: at('cancelled'),
    request_counts: { total: job.total, completed: job.completed, failed: job.failed },
    metadata: fields.metadata,
    // Of the answered lines committed so far, counted as the synchronous endpoint counts each.
    usage: {
      input_tokens: job.usage.inputTokens,
      input_tokens_details: { cached_tokens: job.usage.cachedTokens },
      output_tokens: job.usage.outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: job.usage.inputTokens + job.usage.outputTokens,
    },
  };
}

/** A job in the dialect it was created in. */
export function wireBatch(job: BatchJob): WireBatch {
  return job.openai ? toOpenAiBatch(job) : toBatch(job);
}

export function uploadFileObject(file: StoredFile): OpenAiFileObject {
  return {
    id: file.id,
    object: 'file',
    bytes: file.bytes,
    created_at: seconds(file.createdAt)!,
    filename: file.filename,
    purpose: file.purpose,
    status: 'processed',
    expires_at: seconds(file.expiresAt),
    status_details: null,
  };
}

export function resultFileObject(job: BatchJob, kind: 'output' | 'errors', bytes: number): OpenAiFileObject {
  return {
    id: resultFileId(job.id, kind),
    object: 'file',
    bytes,
    created_at: seconds(job.completedAt ?? job.createdAt)!,
    filename: `${job.id}_${kind === 'output' ? 'output' : 'error'}.jsonl`,
    purpose: 'batch_output',
    status: 'processed',
    expires_at: seconds(job.expiresAt),
    status_details: null,
  };
}

