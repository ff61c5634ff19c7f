/**
 * The Postgres chunk worker, in every process that works (`decide serve` without --no-worker,
 * `decide worker`): takes chunks from the pg-boss queue, scores them with the engine at batch
 * priority (live /v1/decide requests on the same engine go first) and commits each chunk in ONE
 * transaction:
 *   1. pg-boss completes this attempt of the chunk's queue job (guarded by the attempt: when the
 *      lease lapsed and the chunk was handed to another worker, nothing is affected and we roll back);
 *   2. the job's counts move, guarded by its status (a job cancelled or failed meanwhile takes no
 *      more rows: roll back), and the job becomes completed with its last record;
 *   3. the result rows are inserted, keyed by (job, record index): a second insert is impossible.
 * So a chunk's rows are committed exactly once whoever works on it, and a worker killed at any point
 * loses nothing: its chunk is taken again when its lease lapses (queue.ts).
 *
 * Cancel reaches a worker within one chunk: a chunk of a job that is no longer open is skipped, and
 * the one in flight when the job was cancelled is discarded at its commit. A job that ends after its
 * chunk was taken (cancelled, or finished by others while this worker was paused past its lease)
 * has no input rows left: the chunk is dropped and logged as such, not failed.
 *
 * Models: each chunk carries its job's model as its pg-boss group. A worker fetches only chunks of
 * models it can serve (ignoreGroups: the models of open jobs that are not installed here, or that
 * failed to load here in the last minute). A chunk whose model fails to load when taken goes back
 * to the queue as it was (no attempt used), for a worker that can load it; with none, it waits.
 * A worker never fails a job over a model it lacks. Each model's state is logged once per change.
 *
 * Database outages: every failed call backs off (connection-state.ts) and is logged once.
 */
import type { PgBoss } from 'pg-boss';

import { toApiError } from '../../api/errors.js';
import { addLine, chunkRows, emptyChunk, ModelUnusableError, scoreChunk } from '../chunk-scoring.js';
import { claimedCustomId, type RecordContext } from '../records.js';
import { type RawLine } from '../jsonl-lines.js';
import { storedFormQuestions } from '../query.js';
import type { BatchDecisionService, BatchSettings } from '../ports.js';
import type { VersionPin } from '../../service/version-pin.js';
import type { ConnectionState } from './connection-state.js';
import { inTransaction, queueDb, type Pool } from './database.js';
import { closeJob, finishedAt, getJob, jobModelFingerprint, type PgJob } from './job-rows.js';
import { CHUNK_ATTEMPTS, CHUNK_QUEUE, DEAD_CHUNK_QUEUE, type ChunkTask } from './queue.js';

/** How long an idle worker waits before asking the queue again. */
const IDLE_POLL_MS = 200;
/** A model that failed to load here is tried again after this long (its files may have been fixed). */
const RETRY_UNSERVABLE_MS = 60_000;

interface Attempt {
  id: string;
  retryCount: number;
}

export interface ChunkWorkerOptions {
  pool: Pool;
  boss: PgBoss;
  service: BatchDecisionService;
  settings: BatchSettings;
  /** Lease in seconds: the worker touches its chunks three times per lease. */
  lease: number;
  log: (line: string) => void;
  /** Shared with the store: database failures logged once per change, with backoff. */
  connection: ConnectionState;
}

export class ChunkWorker {
  private stopping = false;
  private loops: Promise<void>[] = [];
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  /** One per loop that is pausing: stop() ends every pause at once. */
  private readonly wakers = new Set<() => void>();
  /** Models this worker cannot serve now, why, and since when. */
  private readonly unservable = new Map<string, { reason: string; since: number }>();

  constructor(private readonly o: ChunkWorkerOptions) {}

  /** Starts `pipelineDepth` chunk loops, so that one chunk is read and tokenized while another scores. */
  start(): void {
    for (let i = 0; i < this.o.settings.chunk.pipelineDepth; i++) this.loops.push(this.loop());
  }

  /** Resolves when no chunk is being worked on in this process. */
  async whenIdle(): Promise<void> {
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Takes no more chunks and waits for the ones in flight to commit (or be abandoned to their lease). */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const wake of [...this.wakers]) wake();
    await Promise.all(this.loops);
  }

  private async loop(): Promise<void> {
    const { connection } = this.o;
    while (!this.stopping) {
      let taken = false;
      try {
        taken = (await this.takeChunk()) || (await this.failDeadChunk());
        connection.succeeded();
      } catch (err) {
        if (!this.stopping) connection.failed(err);
      }
      if (!taken || connection.failing) await this.idle(connection.failing ? connection.backoffMs() : IDLE_POLL_MS);
    }
  }

  private idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }

  /** Takes one chunk and works on it; false when the queue had none this worker can serve. */
  private async takeChunk(): Promise<boolean> {
    const ignoreGroups = await this.modelsToSkip();
    const [job] = await this.o.boss.fetch<ChunkTask>(CHUNK_QUEUE, { includeMetadata: true, ...(ignoreGroups.length > 0 ? { ignoreGroups } : {}) });
    if (!job) return false;
    const attempt = { id: job.id, retryCount: job.retryCount };
    this.inFlight += 1;
    // Three touches per lease of the chunk as queued: whichever process set the queue's lease last,
    // not this process's own setting, decides when a chunk without a touch is taken back.
    const lease = job.heartbeatSeconds ?? this.o.lease;
    const heartbeat = setInterval(() => void this.o.boss.touch(CHUNK_QUEUE, attempt).catch(() => undefined), (lease * 1000) / 3);
    let notPutBack: unknown;
    try {
      await this.work(job.data, attempt);
    } catch (err) {
      // Put back for another attempt (a database or internal error; bad records are rows, not errors).
      this.o.log(`batch ${job.data.job}: chunk ${job.data.chunk} attempt ${attempt.retryCount + 1} failed: ${String((err as Error)?.message ?? err)}`);
      await this.o.boss.fail(CHUNK_QUEUE, attempt, { message: String((err as Error)?.message ?? err) }).catch((failure: unknown) => (notPutBack = failure));
    } finally {
      clearInterval(heartbeat);
      this.inFlight -= 1;
      if (this.inFlight === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
    // The chunk could not even be put back: the database is failing, which the loop counts (its
    // lease brings the chunk back). Not a call that succeeded.
    if (notPutBack !== undefined) throw notPutBack;
    return true;
  }

  /** The models of open jobs that this worker cannot serve (their chunks are left to other workers). */
  private async modelsToSkip(): Promise<string[]> {
    const { rows } = await this.o.pool.query<{ model: string }>(`SELECT DISTINCT model FROM decide_batch_jobs WHERE status IN ('queued', 'in_progress')`);
    return rows.map((r) => r.model).filter((model) => !this.canServe(model));
  }

  private canServe(model: string): boolean {
    const known = this.unservable.get(model);
    if (known && Date.now() - known.since < RETRY_UNSERVABLE_MS) return false;
    try {
      this.o.service.resolveModel(model);
    } catch (err) {
      this.markUnservable(model, unservableReason(err));
      return false;
    }
    if (known) {
      // Installed now, or its load is worth another try: the next chunk tells.
      this.unservable.delete(model);
      this.o.log(`batch worker: model ${model}: trying it again`);
    }
    return true;
  }

  private markUnservable(model: string, reason: string): void {
    const known = this.unservable.get(model);
    this.unservable.set(model, { reason, since: Date.now() });
    if (known?.reason !== reason) this.o.log(`batch worker: model ${model} cannot be served by this worker: ${reason}; its chunks are left to workers that can serve it`);
  }

  /** Puts a taken chunk back in the queue as it was (same priority, no attempt used) for another worker. */
  private async release(attempt: Attempt): Promise<void> {
    await inTransaction(this.o.pool, async (client) => {
      const db = queueDb(client);
      await this.o.boss.cancel(CHUNK_QUEUE, attempt, { db });
      await this.o.boss.resume(CHUNK_QUEUE, attempt.id, { db });
    });
  }

  private async work(task: ChunkTask, attempt: Attempt): Promise<void> {
    const { pool, boss, service, settings } = this.o;
    const job = await getJob(pool, task.job);
    if (!job || (job.status !== 'queued' && job.status !== 'in_progress')) {
      // Cancelled, failed or gone: nothing to do for this chunk.
      await boss.complete(CHUNK_QUEUE, attempt);
      return;
    }
    let loaded: unknown;
    try {
      loaded = await service.runtime(job.model);
    } catch (err) {
      if (this.stopping) throw err;
      // Not this worker's model (not installed, or it fails to load here): another worker's, or later.
      // Worded as canServe() words a missing model, so that one cause is logged once, whichever
      // path met it first.
      this.markUnservable(job.model, unservableReason(err));
      await this.release(attempt);
      return;
    }
    const differs = await this.copyDiffers(job);
    if (differs) {
      // Another copy of the version under the same id: scoring with it would mix two models in one
      // job. Left, as a model this worker lacks, to workers whose copy is the job's.
      this.markUnservable(job.model, differs);
      await this.release(attempt);
      return;
    }
    // The chunk is scored on the copy checked above: replaced meanwhile, it is released (ModelUnusableError).
    const pin: VersionPin = { loaded: loaded as object };
    if (job.status === 'queued') {
      await pool.query(`UPDATE decide_batch_jobs SET status = 'in_progress', started_at = COALESCE(started_at, GREATEST($2::bigint, created_at)) WHERE id = $1 AND status = 'queued'`, [
        job.id,
        Date.now(),
      ]);
    }

    const chunk = emptyChunk();
    const ctx = await this.recordContext(job, task);
    if (!ctx) {
      // The job ended after it was read above (finished by other workers while this one was paused
      // past its lease, or cancelled): its input rows went with it, and there is nothing to score.
      await this.dropChunkOfEndedJob(job.id, task, attempt);
      return;
    }
    for (const line of ctx.lines) await addLine(chunk, line, ctx.records);
    let outcomes;
    try {
      outcomes = await scoreChunk(service, job.model, chunk, () => this.stopping, pin, job.owner);
    } catch (err) {
      if (!(err instanceof ModelUnusableError) || this.stopping) throw err;
      // The model went (or stopped loading) here mid-chunk: as when it is missing before, the chunk
      // is left to workers that can serve it; its records are not failed for this worker's lack.
      this.markUnservable(job.model, err.error.message);
      await this.release(attempt);
      return;
    }
    const { rows, rowFailed, rowUsage, completed, failed, failedBytes, usage } = chunkRows(chunk, outcomes);
    const bytes = rows.reduce((n, r) => n + Buffer.byteLength(r), 0);
    const now = Date.now();

    await inTransaction(pool, async (client) => {
      const done = await boss.complete(CHUNK_QUEUE, attempt, null, { db: queueDb(client) });
      if ((done as { affected?: number }).affected !== 1) throw new LeaseLost();
      const moved = await client.query<{ status: string }>(
        `UPDATE decide_batch_jobs SET
           completed = completed + $2, failed = failed + $3, results_bytes = results_bytes + $4, failed_bytes = failed_bytes + $10,
           status = CASE WHEN completed + failed + $2 + $3 = total THEN 'completed' ELSE 'in_progress' END,
           completed_at = CASE WHEN completed + failed + $2 + $3 = total THEN ${finishedAt('$5')} END,
           expires_at = CASE WHEN completed + failed + $2 + $3 = total THEN ${finishedAt('$5')} + $6 END,
           input_tokens = input_tokens + $7, cached_tokens = cached_tokens + $8, output_tokens = output_tokens + $9
         WHERE id = $1 AND status IN ('queued', 'in_progress') RETURNING status`,
        [job.id, completed, failed, bytes, now, settings.retentionMs, usage.inputTokens, usage.cachedTokens, usage.outputTokens, failedBytes],
      );
      if (moved.rowCount !== 1) return; // cancelled or failed meanwhile: the queue job completes, the rows are dropped
      await client.query(
        `INSERT INTO decide_batch_results (job_id, idx, row, failed, input_tokens, cached_tokens, output_tokens)
         SELECT $1, $2::integer + ord - 1, row, failed, input_tokens, cached_tokens, output_tokens
         FROM unnest($3::text[], $4::boolean[], $5::integer[], $6::integer[], $7::integer[]) WITH ORDINALITY AS t (row, failed, input_tokens, cached_tokens, output_tokens, ord)`,
        [job.id, task.from, rows, rowFailed, rowUsage.map((u) => u.inputTokens), rowUsage.map((u) => u.cachedTokens), rowUsage.map((u) => u.outputTokens)],
      );
      if (moved.rows[0]!.status === 'completed') {
        await client.query('DELETE FROM decide_batch_inputs WHERE job_id = $1', [job.id]);
        this.o.log(`batch ${job.id}: completed`);
      }
    }).catch((err: unknown) => {
      // Another worker holds this chunk now; its commit is the one that counts.
      if (!(err instanceof LeaseLost)) throw err;
      this.o.log(`batch ${job.id}: chunk ${task.chunk}: lease lapsed, left to the worker that took it over`);
    });
  }

  /**
   * Why this worker's copy of the job's model is not the one the job was created on (their
   * fingerprints differ), or undefined when it is, or when the job recorded none (created before
   * fingerprints were kept: any copy scores it, as then).
   */
  private async copyDiffers(job: PgJob): Promise<string | undefined> {
    const { service } = this.o;
    if (!service.modelFingerprint) return undefined;
    const wanted = await jobModelFingerprint(this.o.pool, job.id);
    if (wanted === null) return undefined;
    const here = service.modelFingerprint(job.model);
    if (here === wanted) return undefined;
    return `its copy here (${here}) differs from the copy its jobs were created with (${wanted}); install the API host's copy of the version on this worker`;
  }

  /**
   * The chunk's lines, and the record context with the custom_ids claimed by the lines before it;
   * undefined when the job is final by now (its input rows are deleted when it ends).
   */
  private async recordContext(job: PgJob, task: ChunkTask): Promise<{ lines: RawLine[]; records: RecordContext } | undefined> {
    const { rows } = await this.o.pool.query<{ line_no: number; length: number; body: Buffer | null; dup_of_line: number | null }>(
      'SELECT line_no, length, body, dup_of_line FROM decide_batch_inputs WHERE job_id = $1 AND idx >= $2 AND idx < $3 ORDER BY idx',
      [job.id, task.from, task.to],
    );
    if (rows.length !== task.to - task.from) {
      const now = await getJob(this.o.pool, job.id);
      if (!now || (now.status !== 'queued' && now.status !== 'in_progress')) return undefined;
      throw new Error(`chunk ${task.chunk}: ${rows.length} of its ${task.to - task.from} input rows found`);
    }
    const maxRecordBytes = this.o.settings.maxRecordBytes;
    const lines: RawLine[] = rows.map((r) => ({ start: 0, end: 0, lineNo: r.line_no, bytes: r.body, length: r.length, blank: false }));
    const seen = new Map<string, number>();
    const firstLine = lines[0]?.lineNo ?? 0;
    lines.forEach((line, i) => {
      const claimedBy = rows[i]!.dup_of_line;
      if (claimedBy === null || claimedBy >= firstLine) return;
      const id = claimedCustomId(line, maxRecordBytes);
      if (id !== undefined) seen.set(id, claimedBy);
    });
    return {
      lines,
      records: {
        model: job.model,
        requestedModel: job.requestedModel,
        formQuestions: storedFormQuestions(job.questions),
        endpoint: job.openai?.endpoint,
        seen,
        limits: this.o.settings.validation,
        maxRecordBytes,
      },
    };
  }

  /**
   * Completes this attempt of a chunk whose job ended while it was taken: nothing of it is scored.
   * When the lease lapsed meanwhile the queue has already handed the chunk on (or completed it),
   * and this attempt is no longer ours to complete; either way the chunk is dropped, not failed.
   */
  private async dropChunkOfEndedJob(jobId: string, task: ChunkTask, attempt: Attempt): Promise<void> {
    const job = await getJob(this.o.pool, jobId);
    const status = job?.status ?? 'gone';
    const done = await this.o.boss.complete(CHUNK_QUEUE, attempt);
    const lapsed = (done as { affected?: number }).affected !== 1 ? ' (its lease had lapsed)' : '';
    this.o.log(`batch ${jobId}: chunk ${task.chunk} dropped: the job is already ${status}${lapsed}`);
  }

  private async fail(job: PgJob, attempt: Attempt | undefined, error: { code: string; message: string }): Promise<void> {
    const now = Date.now();
    await inTransaction(this.o.pool, async (client) => {
      if (await closeJob(client, job.id, { status: 'failed', now, retentionMs: this.o.settings.retentionMs, error })) {
        this.o.log(`batch ${job.id}: failed: ${error.message}`);
      }
      if (attempt) await this.o.boss.complete(CHUNK_QUEUE, attempt, null, { db: queueDb(client) });
    });
  }

  /** A chunk that failed every attempt fails its batch (the rows committed before it stay). */
  private async failDeadChunk(): Promise<boolean> {
    const [dead] = await this.o.boss.fetch<ChunkTask>(DEAD_CHUNK_QUEUE);
    if (!dead) return false;
    const job = await getJob(this.o.pool, dead.data.job);
    if (job) {
      await this.fail(job, undefined, {
        code: 'server_error',
        message: `the batch could not be processed (chunk ${dead.data.chunk} failed ${CHUNK_ATTEMPTS} times); the rows finished before it are in the results`,
      });
    }
    await this.o.boss.complete(DEAD_CHUNK_QUEUE, { id: dead.id, retryCount: dead.retryCount });
    return true;
  }
}

class LeaseLost extends Error {}

/** Why a model cannot be served here, in one wording per cause (markUnservable logs a reason once). */
function unservableReason(err: unknown): string {
  const e = toApiError(err);
  return e.code === 'not_found' ? `not installed here (${e.message})` : e.message;
}
