/**
 * Wire mapping: a stored job row as the Batch resource of the API (docs/api.md), and the texts
 * that describe a job's timing to a client.
 */
import type { Batch, BatchList } from '../api/schemas.js';
import { isFinal, type BatchJob } from './ports.js';

/** The Batch resource and the list page: their one definition is the schema in src/api/schemas.ts. */
export type { Batch, BatchList };

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export function toBatch(job: BatchJob): Batch {
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

/** One page of jobs (fetched with one extra row to know whether more follow) as a BatchList. */
export function toBatchList(rows: BatchJob[], limit: number): BatchList {
  const data = rows.slice(0, limit).map(toBatch);
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
}

/** A retention period as a client reads it: "7 days", "1 hour", "90 seconds". */
export function formatRetention(ms: number): string {
  const s = ms / 1000;
  if (s >= 86400 && s % 86400 === 0) return `${s / 86400} day${s === 86400 ? '' : 's'}`;
  if (s >= 3600 && s % 3600 === 0) return `${s / 3600} hour${s === 3600 ? '' : 's'}`;
  return `${s} seconds`;
}
