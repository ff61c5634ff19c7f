/**
 * The batch store's schema in Postgres, applied at every start by every process (API hosts and
 * workers). Versioned: each migration runs once, in order, in its own transaction, recorded in
 * decide_schema_migrations. Several processes starting at once serialize on a session advisory
 * lock (held by the caller around migrate() and the queue's own setup), so exactly one applies each
 * migration and the others find it done. A process killed while holding the lock releases it with
 * its connection.
 *
 * Tables (every timestamp is epoch milliseconds):
 *   decide_batch_jobs     one row per job: status, counts, bytes of committed result rows (and of
 *                         the failed ones among them)
 *   decide_batch_inputs   the job's non-blank input lines by record index (bytes as uploaded),
 *                         kept until the job is final
 *   decide_batch_results  one result row (JSONL text) per record index, with its status and usage;
 *                         the primary key makes a second insert of the same record impossible
 *   decide_chunk_order    a sequence: each chunk's fetch priority (queue.ts, chunkPriorities)
 * The chunks themselves are pg-boss jobs (queue.ts), in pg-boss's own schema.
 */
import type { Client } from './database.js';

/** Key of the advisory lock taken around schema setup (any constant shared by every process). */
export const SCHEMA_LOCK_KEY = 0x6465_6369; // "deci"

interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'batch jobs, input and result rows',
    sql: `
      CREATE TABLE decide_batch_jobs (
        id              text PRIMARY KEY,
        owner           text NOT NULL,
        model           text NOT NULL,
        requested_model text NOT NULL,
        status          text NOT NULL,
        total           integer NOT NULL,
        completed       integer NOT NULL DEFAULT 0,
        failed          integer NOT NULL DEFAULT 0,
        created_at      bigint NOT NULL,
        started_at      bigint,
        completed_at    bigint,
        expires_at      bigint,
        error_code      text,
        error_message   text,
        questions       text,
        results_bytes   bigint NOT NULL DEFAULT 0
      );
      CREATE INDEX decide_batch_jobs_by_owner ON decide_batch_jobs (owner, id);
      CREATE INDEX decide_batch_jobs_by_expiry ON decide_batch_jobs (expires_at) WHERE status IN ('completed', 'failed', 'cancelled');
      CREATE TABLE decide_batch_inputs (
        job_id      text NOT NULL REFERENCES decide_batch_jobs (id) ON DELETE CASCADE,
        idx         integer NOT NULL,
        line_no     integer NOT NULL,
        length      integer NOT NULL,
        body        bytea,
        dup_of_line integer,
        PRIMARY KEY (job_id, idx)
      );
      CREATE TABLE decide_batch_results (
        job_id text NOT NULL REFERENCES decide_batch_jobs (id) ON DELETE CASCADE,
        idx    integer NOT NULL,
        row    text NOT NULL,
        PRIMARY KEY (job_id, idx)
      );
    `,
  },
  {
    version: 2,
    name: 'chunk fetch order',
    // pg-boss fetches by (priority DESC, created_on), and every chunk of a job is inserted in one
    // transaction with the same created_on: without a distinct priority the chunks of one job come
    // back in no defined order. Each chunk takes the next value of this sequence as -priority, so
    // chunks are fetched in creation order: job by job, and within a job in input order. CYCLE:
    // after 2^31 chunks the order restarts once (fetch order is an efficiency, not a correctness
    // matter: a cancel keeps the committed prefix whatever order chunks committed in).
    sql: `CREATE SEQUENCE decide_chunk_order AS integer MINVALUE 0 MAXVALUE 2147483647 START 0 CYCLE;`,
  },
  {
    version: 3,
    name: 'open jobs by model',
    // Every worker poll asks which models open jobs need (it skips the chunks of models it lacks);
    // the jobs table keeps expired rows, so that must not be a scan of the whole table.
    sql: `CREATE INDEX decide_batch_jobs_open_by_model ON decide_batch_jobs (model) WHERE status IN ('queued', 'in_progress');`,
  },
  {
    version: 4,
    name: "OpenAI's Files + Batch dialect",
    // openai: the OpenAI-dialect fields of a job (src/batches/openai/job-fields.ts), null for ours.
    // decide_files: uploaded files (purpose batch), their bytes in parts of at most 1 MiB so that
    // neither an upload nor a download is ever held whole in memory (src/batches/pg/pg-files.ts).
    sql: `
      ALTER TABLE decide_batch_jobs ADD COLUMN openai text;
      CREATE TABLE decide_files (
        id         text PRIMARY KEY,
        owner      text NOT NULL,
        filename   text NOT NULL,
        purpose    text NOT NULL,
        bytes      bigint NOT NULL,
        records    integer NOT NULL,
        created_at bigint NOT NULL
      );
      CREATE INDEX decide_files_by_owner ON decide_files (owner, id);
      CREATE TABLE decide_file_parts (
        file_id text NOT NULL REFERENCES decide_files (id) ON DELETE CASCADE,
        seq     integer NOT NULL,
        data    bytea NOT NULL,
        PRIMARY KEY (file_id, seq)
      );
    `,
  },
  {
    version: 5,
    name: 'token usage and the cancel time of a job',
    // The job's usage is summed as chunks commit (chunk-worker.ts); each result row keeps its own, so
    // the rows a cancel drops take theirs off the sums (job-rows.ts keepCommittedPrefix).
    sql: `
      ALTER TABLE decide_batch_jobs ADD COLUMN input_tokens bigint NOT NULL DEFAULT 0;
      ALTER TABLE decide_batch_jobs ADD COLUMN cached_tokens bigint NOT NULL DEFAULT 0;
      ALTER TABLE decide_batch_jobs ADD COLUMN output_tokens bigint NOT NULL DEFAULT 0;
      ALTER TABLE decide_batch_jobs ADD COLUMN cancelling_at bigint;
      ALTER TABLE decide_batch_results ADD COLUMN input_tokens integer NOT NULL DEFAULT 0;
      ALTER TABLE decide_batch_results ADD COLUMN cached_tokens integer NOT NULL DEFAULT 0;
      ALTER TABLE decide_batch_results ADD COLUMN output_tokens integer NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 6,
    name: "uploaded files expire (OpenAI's expires_after)",
    // Null: kept until deleted (files uploaded before this migration).
    sql: `
      ALTER TABLE decide_files ADD COLUMN expires_at bigint;
      CREATE INDEX decide_files_expiring ON decide_files (expires_at) WHERE expires_at IS NOT NULL;
    `,
  },
  {
    version: 7,
    name: 'result row status and the failed rows bytes',
    // Each row's status is written with it (chunk-worker.ts), so OpenAI's output and error files are
    // read by status and their lengths are counts, not parses. Rows written before: worked out once
    // here from their JSON (ours fail with "error", OpenAI's without a 200 response).
    sql: `
      ALTER TABLE decide_batch_results ADD COLUMN failed boolean NOT NULL DEFAULT false;
      ALTER TABLE decide_batch_jobs ADD COLUMN failed_bytes bigint NOT NULL DEFAULT 0;
      UPDATE decide_batch_results SET failed = CASE
          WHEN row::jsonb ? 'response' THEN (row::jsonb #>> '{response,status_code}') IS DISTINCT FROM '200'
          ELSE row::jsonb ? 'error' END;
      UPDATE decide_batch_jobs j SET failed_bytes = f.bytes
        FROM (SELECT job_id, sum(octet_length(row)) AS bytes FROM decide_batch_results WHERE failed GROUP BY job_id) f
        WHERE j.id = f.job_id;
    `,
  },
  {
    version: 8,
    name: 'the final status of an expired job',
    // An expired job keeps the timestamp of how it ended (OpenAI's completed_at / failed_at /
    // cancelled_at): the status it had is kept here when the sweep expires it. Null on jobs expired
    // before this migration.
    sql: `ALTER TABLE decide_batch_jobs ADD COLUMN expired_from text;`,
  },
  {
    version: 9,
    name: "the fingerprint of the job's model copy",
    // The content fingerprint (src/models/model-fingerprint.ts) of the copy of the model the API
    // host resolved at create: a worker whose copy differs does not score the job's chunks. Null on
    // jobs created before this migration, which any copy scores, as before.
    sql: `ALTER TABLE decide_batch_jobs ADD COLUMN model_fingerprint text;`,
  },
];

/** Every migration's version, in order: what a current database records in decide_schema_migrations. */
export const MIGRATION_VERSIONS: readonly number[] = MIGRATIONS.map((m) => m.version);

/** True when this database lacks a migration (a fresh one lacks them all). */
export async function migrationsPending(client: Client): Promise<boolean> {
  const { rows: table } = await client.query<{ exists: boolean }>(`SELECT to_regclass('decide_schema_migrations') IS NOT NULL AS exists`);
  if (!table[0]!.exists) return true;
  const { rows } = await client.query<{ version: number }>('SELECT version FROM decide_schema_migrations');
  const done = new Set(rows.map((r) => r.version));
  return MIGRATION_VERSIONS.some((v) => !done.has(v));
}

/**
 * Applies the migrations this database lacks. Call with the schema lock held (SCHEMA_LOCK_KEY).
 * Returns the versions applied now (empty when the schema was current).
 */
export async function migrate(client: Client): Promise<number[]> {
  await client.query(`CREATE TABLE IF NOT EXISTS decide_schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`);
  const { rows } = await client.query<{ version: number }>('SELECT version FROM decide_schema_migrations');
  const done = new Set(rows.map((r) => r.version));
  const applied: number[] = [];
  for (const m of MIGRATIONS) {
    if (done.has(m.version)) continue;
    await client.query('BEGIN');
    try {
      await client.query(m.sql);
      await client.query('INSERT INTO decide_schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw new Error(`batch store migration ${m.version} (${m.name}) failed: ${(err as Error).message}`);
    }
    applied.push(m.version);
  }
  return applied;
}

/** Runs `fn` holding the schema lock on `client` (waits for another process's setup to finish). */
export async function withSchemaLock<T>(client: Client, fn: () => Promise<T>): Promise<T> {
  await client.query('SELECT pg_advisory_lock($1)', [SCHEMA_LOCK_KEY]);
  try {
    return await fn();
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [SCHEMA_LOCK_KEY]).catch(() => undefined);
  }
}
