/**
 * Rows of decide_batch_jobs as BatchJob, and the status changes that every Postgres process makes
 * the same way (API hosts cancel, workers start, fail and finish jobs). A status change is guarded
 * by the status it leaves, so two processes racing on one job cannot both move it.
 */
import { addUsage, OPEN_STATUSES, sqlStatusList, zeroUsage, type BatchJob } from '../ports.js';
import { batchJobFromColumns, type BatchJobColumns } from '../sql-rows.js';
import type { Client, Pool } from './database.js';

/** A job row of decide_batch_jobs. */
export type PgJob = BatchJob;

/** bigint columns come back as numbers (epoch milliseconds and byte counts stay below 2^53). */
export const JOB_COLUMNS = `id, owner, model, requested_model, status, total, completed, failed,
  created_at::float8 AS created_at, started_at::float8 AS started_at, completed_at::float8 AS completed_at,
  expires_at::float8 AS expires_at, error_code, error_message, questions, openai,
  results_bytes::float8 AS results_bytes, failed_bytes::float8 AS failed_bytes,
  input_tokens::float8 AS input_tokens, cached_tokens::float8 AS cached_tokens, output_tokens::float8 AS output_tokens,
  cancelling_at::float8 AS cancelling_at, expired_from`;

/**
 * SQL for when a job ends: the caller's clock (the bigint parameter `now`, '$3'), but never before a
 * stamp the job already has. A wall clock set back (by hand, NTP, a worker on another host whose
 * clock is behind) would otherwise end a job before it was created, and count its retention from
 * then. The start is held the same way (chunk-worker.ts), so created_at <= started_at <= completed_at.
 * GREATEST skips the stamps still null.
 */
export function finishedAt(now: string): string {
  return `GREATEST(${now}::bigint, created_at, started_at, cancelling_at)`;
}

/** Statuses a job can still leave by being worked on or cancelled, as SQL. */
export const OPEN_STATUSES_SQL = sqlStatusList(OPEN_STATUSES);

export function toJob(r: BatchJobColumns): PgJob {
  return batchJobFromColumns(r);
}

/** The fingerprint of the model copy job `id` was created on; null when it recorded none (created before migration 9). */
export async function jobModelFingerprint(db: Pool | Client, id: string): Promise<string | null> {
  const { rows } = await db.query<{ model_fingerprint: string | null }>('SELECT model_fingerprint FROM decide_batch_jobs WHERE id = $1', [id]);
  return rows[0]?.model_fingerprint ?? null;
}

export async function getJob(db: Pool | Client, id: string): Promise<PgJob | undefined> {
  const { rows } = await db.query<BatchJobColumns>(`SELECT ${JOB_COLUMNS} FROM decide_batch_jobs WHERE id = $1`, [id]);
  return rows[0] && toJob(rows[0]);
}

/**
 * Moves an open job to a final status (cancelled or failed) and drops its input rows, which no
 * chunk will read any more. The result rows it keeps are the committed PREFIX: chunks commit in
 * the order workers finish them, so chunk k+1 may be committed while chunk k is still being
 * scored; the rows after the first record without a row are deleted and the counts and bytes
 * follow (keepCommittedPrefix), so the results are always the first `completed + failed` records.
 * A worker's commit of chunk k, racing with this, either commits first (it holds the job row's
 * lock, and this update waits for it) or finds the job closed and drops its rows.
 * False when the job was no longer open.
 */
export async function closeJob(
  client: Client,
  id: string,
  outcome: { status: 'cancelled' | 'failed'; now: number; retentionMs: number; error?: { code: string; message: string } },
): Promise<boolean> {
  const { rowCount } = await client.query(
    `UPDATE decide_batch_jobs SET status = $2, completed_at = ${finishedAt('$3')}, expires_at = ${finishedAt('$3')} + $4, error_code = $5, error_message = $6,
       cancelling_at = CASE WHEN $2 = 'cancelled' THEN ${finishedAt('$3')} END
     WHERE id = $1 AND status IN ${OPEN_STATUSES_SQL}`,
    [id, outcome.status, outcome.now, outcome.retentionMs, outcome.error?.code ?? null, outcome.error?.message ?? null],
  );
  if (rowCount !== 1) return false;
  await client.query('DELETE FROM decide_batch_inputs WHERE job_id = $1', [id]);
  await keepCommittedPrefix(client, id);
  return true;
}

/**
 * Deletes the result rows of `id` past its first missing record index and takes them out of the
 * job's counts and bytes. Call in the transaction that closed the job (no worker adds rows after).
 */
async function keepCommittedPrefix(client: Client, id: string): Promise<void> {
  // Cheap check first: no gap when the highest index is the number of rows minus one.
  const { rows: shape } = await client.query<{ n: number; top: number | null }>(
    'SELECT completed + failed AS n, (SELECT max(idx) FROM decide_batch_results WHERE job_id = $1) AS top FROM decide_batch_jobs WHERE id = $1',
    [id],
  );
  const { n, top } = shape[0]!;
  if (top === null || top === n - 1) return;
  // The first index whose rank differs from it is the first record after a gap; its rank is the prefix length.
  const { rows: gap } = await client.query<{ prefix: number }>(
    `SELECT rn::integer AS prefix FROM (
       SELECT idx, row_number() OVER (ORDER BY idx) - 1 AS rn FROM decide_batch_results WHERE job_id = $1
     ) ranked WHERE idx <> rn ORDER BY idx LIMIT 1`,
    [id],
  );
  if (gap.length === 0) return;
  const { rows: dropped } = await client.query<{ failed: boolean; bytes: number; input_tokens: number; cached_tokens: number; output_tokens: number }>(
    'DELETE FROM decide_batch_results WHERE job_id = $1 AND idx >= $2 RETURNING failed, octet_length(row) AS bytes, input_tokens, cached_tokens, output_tokens',
    [id, gap[0]!.prefix],
  );
  let failed = 0;
  let bytes = 0;
  let failedBytes = 0;
  let usage = zeroUsage();
  for (const row of dropped) {
    bytes += row.bytes;
    if (row.failed) {
      failed += 1;
      failedBytes += row.bytes;
    }
    usage = addUsage(usage, { inputTokens: row.input_tokens, cachedTokens: row.cached_tokens, outputTokens: row.output_tokens });
  }
  await client.query(
    `UPDATE decide_batch_jobs SET completed = completed - $2, failed = failed - $3, results_bytes = results_bytes - $4, failed_bytes = failed_bytes - $5,
       input_tokens = input_tokens - $6, cached_tokens = cached_tokens - $7, output_tokens = output_tokens - $8 WHERE id = $1`,
    [id, dropped.length - failed, failed, bytes, failedBytes, usage.inputTokens, usage.cachedTokens, usage.outputTokens],
  );
}
