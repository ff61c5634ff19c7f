/**
 * The chunk queue: pg-boss (in its own schema, `decide_queue`) holds one queue job per chunk of
 * batch input. Its lease is pg-boss's heartbeat: a worker touches the chunk it works on every third
 * of the lease; a chunk whose worker stops touching it (killed, hung, cut off from the database) is
 * put back for another worker once the lease has passed and a supervise pass has seen it. A chunk
 * that fails `CHUNK_ATTEMPTS` times goes to the dead-letter queue, where a worker fails its batch.
 *
 * Settings (environment):
 *   DECIDE_BATCH_LEASE_SECONDS  seconds a chunk stays taken without a heartbeat (default 30, min 10,
 *                               pg-boss's minimum); a killed worker's chunk is taken again after it.
 */
import { PgBoss } from 'pg-boss';

import { CONNECTION_LIMITS, type Client } from './database.js';

export const QUEUE_SCHEMA = 'decide_queue';
export const CHUNK_QUEUE = 'decide-batch-chunks';
export const DEAD_CHUNK_QUEUE = 'decide-batch-chunks-dead';
/** Attempts of one chunk (lapsed leases included) before its batch fails. */
export const CHUNK_ATTEMPTS = 10;
/** The longest a chunk may be worked on, heartbeat or not: a stuck engine call cannot hold it forever. */
const MAX_CHUNK_SECONDS = 6 * 3600;

/** One chunk of a job: its records with index in [from, to). */
export interface ChunkTask {
  job: string;
  chunk: number;
  from: number;
  to: number;
}

/**
 * The pg-boss priority of each of `count` new chunks, in input order: minus the next values of the
 * decide_chunk_order sequence, so that a chunk created earlier is fetched earlier (pg-boss orders
 * by priority, then by created_on, which all chunks of one job share). Call inside the create
 * transaction.
 */
export async function chunkPriorities(client: Client, count: number): Promise<number[]> {
  const { rows } = await client.query<{ v: number }>(
    `SELECT nextval('decide_chunk_order')::integer AS v FROM generate_series(1, $1::integer) AS g ORDER BY g`,
    [count],
  );
  return rows.map((r) => -r.v);
}

/**
 * A started pg-boss on `url` with both queues set up for `lease`. Call with the schema lock held:
 * pg-boss installs or migrates its schema on start. `supervise`: this process expires lapsed
 * leases (workers do; an API host that only serves need not).
 */
export async function startQueue(url: string, lease: number, supervise: boolean, onError: (err: Error) => void): Promise<PgBoss> {
  // Lapsed leases are noticed within half a lease of lapsing.
  const passSeconds = Math.max(1, Math.floor(lease / 2));
  const boss = new PgBoss({
    connectionString: url,
    ...CONNECTION_LIMITS,
    schema: QUEUE_SCHEMA,
    max: 4,
    application_name: 'decide-batch-queue',
    supervise,
    superviseIntervalSeconds: passSeconds,
    monitorIntervalSeconds: passSeconds,
    schedule: false,
    registerInstance: false,
  });
  boss.on('error', onError);
  await boss.start();
  try {
    const common = {
      expireInSeconds: MAX_CHUNK_SECONDS,
      retryLimit: CHUNK_ATTEMPTS - 1,
      retryDelay: 0,
      // Finished chunk jobs are pg-boss's bookkeeping only (the rows live in decide_batch_results).
      deleteAfterSeconds: 3600,
    };
    // Only a process that works on chunks sets the lease of an existing queue: an API-only host
    // started after the workers would otherwise put its own (default) lease on their chunks.
    await ensureQueue(boss, DEAD_CHUNK_QUEUE, common, supervise);
    await ensureQueue(boss, CHUNK_QUEUE, { ...common, heartbeatSeconds: lease, deadLetter: DEAD_CHUNK_QUEUE }, supervise);
  } catch (err) {
    await boss.stop({ graceful: false, close: true }).catch(() => undefined);
    throw err;
  }
  return boss;
}

/**
 * Creates the queue, or, when `update`, sets its options when it exists (the last worker started
 * sets the lease; each chunk keeps the lease it was queued with, and its worker touches it by that).
 */
async function ensureQueue(boss: PgBoss, name: string, options: Parameters<PgBoss['createQueue']>[1] & object, update: boolean): Promise<void> {
  if (await boss.getQueue(name)) {
    if (!update) return;
    const { deadLetter: _fixed, ...changeable } = options;
    await boss.updateQueue(name, changeable);
  } else {
    await boss.createQueue(name, options);
  }
}
