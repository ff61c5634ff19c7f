/**
 * The Postgres batch store (DECIDE_DATABASE_URL=postgres://...): jobs, their input rows, their
 * chunks (pg-boss jobs) and their result rows all live in one database, so API hosts keep no state
 * of their own: a job created on one host is polled, downloaded or cancelled on any other, and any
 * worker process takes any chunk (pg/chunk-worker.ts). Schema setup runs at open, under an advisory
 * lock (pg/migrations.ts).
 *
 * - create: the job row, every input row and every chunk's queue job commit in one transaction:
 *   a job exists whole or not at all, whatever host dies when. The input rows are read in one pass
 *   from where the input is (a staged upload, or an uploaded file's parts), and creation's checks
 *   run in the same pass: a refused input rolls the transaction back.
 * - cancel: queued or in_progress -> cancelled at once, keeping the rows committed before it; a chunk
 *   in flight on a worker is discarded at its commit (its transaction checks the status).
 * - retention: every process sweeps; expiring a job deletes its rows.
 * - an outage: a call that fails because the database is down rejects with a 503 (pg/outage.ts).
 */
import { Readable } from 'node:stream';

import type { PgBoss } from 'pg-boss';

import { ChunkWorker } from './chunk-worker.js';
import { ConnectionState, retryPauseMs } from './connection-state.js';
import { inTransaction, openPool, queueDb, withClient, type Pool } from './database.js';
import { insertInputRows } from './input-rows.js';
import { closeJob, getJob, JOB_COLUMNS, toJob } from './job-rows.js';
import { migrate, withSchemaLock } from './migrations.js';
import { checkSetupPrivileges } from './setup-privileges.js';
import { answeringDatabaseOutages, isDatabaseOutage } from './outage.js';
import { leaseSeconds } from '../settings.js';
import { CHUNK_QUEUE, chunkPriorities, startQueue } from './queue.js';
import { openAiFieldsToText } from '../openai/job-fields.js';
import { RESULT_STATUSES, resultRowsBytes, sqlStatusList, type BatchJob, type BatchResults, type BatchStore, type NewBatch, type ResultRows, type BatchInput, type StoreContext } from '../ports.js';

/** Result rows per query while streaming a download. */
const RESULT_PAGE_ROWS = 1000;

export interface PgStoreOptions extends StoreContext {
  url: string;
  env: NodeJS.ProcessEnv;
}

export class PgBatchStore implements BatchStore {
  readonly kind = 'postgres';
  private readonly worker: ChunkWorker | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(
    private readonly pool: Pool,
    private readonly boss: PgBoss,
    private readonly options: PgStoreOptions,
    lease: number,
    connection: ConnectionState,
  ) {
    if (options.work) {
      this.worker = new ChunkWorker({ pool, boss, service: options.service, settings: options.settings, lease, log: options.log, connection });
    }
  }

  /**
   * Connects, brings the schema (ours and pg-boss's) up to date under the schema lock, then starts
   * working. A database that is down or unreachable (isDatabaseOutage) is waited for, as a running
   * process waits out an outage: each attempt that fails says so in one log line, and the next one
   * comes after a pause that doubles up to 30 s. A failure that waiting cannot fix (a host name that
   * does not resolve, a refused password, a database that does not exist) throws at once.
   */
  static async open(options: PgStoreOptions): Promise<PgBatchStore> {
    for (let failures = 1; ; failures++) {
      try {
        return await PgBatchStore.openOnce(options);
      } catch (err) {
        const cause = (err as Error).cause;
        if (!isDatabaseOutage(cause)) throw err;
        const pause = retryPauseMs(failures);
        // A name with several addresses fails as an AggregateError with an empty message.
        const why = (cause as Error).message || String((cause as { code?: unknown }).code ?? cause);
        options.log(`batch store: the database is not answering (${why}); trying again in ${pause / 1000} s (attempt ${failures} failed)`);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  private static async openOnce(options: PgStoreOptions): Promise<PgBatchStore> {
    const lease = leaseSeconds(options.env);
    const connection = new ConnectionState(options.log);
    const pool = openPool(options.url, options.settings.chunk.pipelineDepth + 4);
    let boss: PgBoss | undefined;
    try {
      boss = await withClient(pool, (client) =>
        withSchemaLock(client, async () => {
          await checkSetupPrivileges(client);
          const applied = await migrate(client);
          if (applied.length > 0) options.log(`batch store: applied schema migrations ${applied.join(', ')}`);
          // pg-boss's own passes (supervise, monitor) report database failures here: logged once per outage.
          return startQueue(options.url, lease, options.work, (err) => connection.failed(err));
        }),
      );
    } catch (err) {
      await boss?.stop({ graceful: false }).catch(() => undefined);
      await pool.end().catch(() => undefined);
      throw new Error(`DECIDE_DATABASE_URL: the batch store could not be opened: ${(err as Error).message}`, { cause: err });
    }
    const store = new PgBatchStore(pool, boss, options, lease, connection);
    store.sweepTimer = setInterval(
      () =>
        void store.sweep(Date.now()).then(
          () => connection.succeeded(),
          (err: unknown) => connection.failed(err),
        ),
      options.settings.sweepIntervalMs,
    );
    store.sweepTimer.unref();
    store.worker?.start();
    return answeringDatabaseOutages(store);
  }

  async create(job: NewBatch, input: BatchInput): Promise<BatchJob> {
    const { settings } = this.options;
    return inTransaction(this.pool, async (client) => {
      await client.query(
        `INSERT INTO decide_batch_jobs (id, owner, model, requested_model, status, total, created_at, questions, openai, model_fingerprint)
         VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8, $9)`,
        [job.id, job.owner, job.model, job.requestedModel, job.total, job.createdAt, job.questions, openAiFieldsToText(job.openai), job.modelFingerprint ?? null],
      );
      const { chunks, records } = await insertInputRows(client, job.id, input.lines(), settings.chunk);
      if (records !== job.total) throw new Error(`batch ${job.id}: ${records} records read back of the ${job.total} counted at upload`);
      // One queue job per chunk, fetched in creation order (chunkPriorities).
      const priorities = await chunkPriorities(client, chunks.length);
      await this.boss.insert(
        CHUNK_QUEUE,
        // The group is the model: a worker fetches only the chunks of models it can serve (chunk-worker.ts).
        chunks.map((data, i) => ({ data, singletonKey: `${data.job}:${data.chunk}`, priority: priorities[i]!, group: { id: job.model } })),
        { db: queueDb(client) },
      );
      return (await getJob(client, job.id))!;
    });
  }

  async get(id: string): Promise<BatchJob | undefined> {
    return getJob(this.pool, id);
  }

  async list(owner: string, limit: number, after?: string): Promise<BatchJob[]> {
    const { rows } =
      after === undefined
        ? await this.pool.query(`SELECT ${JOB_COLUMNS} FROM decide_batch_jobs WHERE owner = $1 ORDER BY id DESC LIMIT $2`, [owner, limit])
        : await this.pool.query(`SELECT ${JOB_COLUMNS} FROM decide_batch_jobs WHERE owner = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, [owner, after, limit]);
    return rows.map(toJob);
  }

  async cancel(id: string, now: number): Promise<BatchJob> {
    return inTransaction(this.pool, async (client) => {
      await closeJob(client, id, { status: 'cancelled', now, retentionMs: this.options.settings.retentionMs });
      return (await getJob(client, id))!;
    });
  }

  async openResults(job: BatchJob, which: ResultRows = 'all'): Promise<BatchResults> {
    const { pool } = this;
    const bytes = resultRowsBytes(job, which);
    // Rows of one status: OpenAI's output or error file, picked by the status stored with each row.
    const status = which === 'all' ? '' : `AND failed = ${which === 'failed' ? 'true' : 'false'}`;
    async function* rows(): AsyncGenerator<string> {
      // A page per query: if the job expires between two of them its rows are gone, and the stream
      // fails rather than ending early (OpenAI's result files are served without a length to check).
      let after = -1;
      let read = 0;
      for (;;) {
        const page = await pool.query<{ idx: number; row: string }>(
          `SELECT idx, row FROM decide_batch_results WHERE job_id = $1 AND idx > $2 ${status} ORDER BY idx LIMIT $3`,
          [job.id, after, RESULT_PAGE_ROWS],
        );
        if (page.rows.length === 0) {
          if (read < bytes) throw new Error(`batch ${job.id}: its results were deleted (expired) while they were read`);
          return;
        }
        const text = page.rows.map((r) => r.row).join('');
        read += Buffer.byteLength(text);
        yield text;
        after = page.rows.at(-1)!.idx;
      }
    }
    return { stream: Readable.from(rows(), { objectMode: false }), bytes };
  }

  async sweep(now: number): Promise<void> {
    if (this.closed) return;
    const expired = await inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<{ id: string }>(
        // The row stays (GET names it expired); its form's questions (up to a MiB of text) go.
        `UPDATE decide_batch_jobs SET expired_from = status, status = 'expired', questions = NULL
         WHERE status IN ${sqlStatusList(RESULT_STATUSES)} AND expires_at <= $1 RETURNING id`,
        [now],
      );
      const ids = rows.map((r) => r.id);
      if (ids.length > 0) {
        await client.query('DELETE FROM decide_batch_results WHERE job_id = ANY($1)', [ids]);
        await client.query('DELETE FROM decide_batch_inputs WHERE job_id = ANY($1)', [ids]);
      }
      return ids;
    });
    for (const id of expired) this.options.log(`batch ${id}: expired, rows deleted`);
  }

  async whenIdle(): Promise<void> {
    await this.worker?.whenIdle();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.worker?.stop();
    await this.boss.stop({ graceful: false, close: true }).catch(() => undefined);
    await this.pool.end().catch(() => undefined);
  }
}
