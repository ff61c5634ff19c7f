/**
 * The Postgres connection of the batch store: one node-postgres pool per process, transactions
 * that roll back on any error, and the adapter that lets pg-boss run its statements inside one of
 * our transactions (its `db` option), so a chunk's rows and its queue completion commit together.
 */
import pg from 'pg';

export type Pool = pg.Pool;
export type Client = pg.PoolClient;

/** What pg-boss calls to run SQL (its IDatabase). */
export interface QueueDb {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/**
 * How long a connection attempt and a call may go unanswered before they fail: a database that
 * hangs (a frozen host, a dropped network) rather than refusing is then an outage like any other,
 * logged and retried with backoff, instead of requests and workers waiting on it for ever. TCP
 * keep-alive finds a dead connection an idle pool holds. Every statement here is bounded (results
 * are read in pages), so a minute is far past a healthy call.
 */
export const CONNECTION_LIMITS = { connectionTimeoutMillis: 10_000, query_timeout: 60_000, keepAlive: true } as const;

export function openPool(url: string, max: number): Pool {
  const pool = new pg.Pool({ connectionString: url, max, application_name: 'decide-batches', ...CONNECTION_LIMITS });
  // An idle client that loses its connection emits 'error' on the pool; without a listener that
  // would crash the process. The next query gets a fresh connection.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Runs `fn` with a client checked out of the pool. A checked-out client that loses its connection
 * (the database restarted, failed over, or the network dropped) emits 'error' on itself, not on
 * the pool: without a listener here that would end the process. The error is kept, its query
 * fails the call as an outage, and the client is handed back broken so the pool drops it.
 */
export async function withClient<T>(pool: Pool, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onLost = (err: Error) => {
    lost ??= err;
  };
  client.on('error', onLost);
  try {
    return await fn(client);
  } finally {
    client.off('error', onLost);
    client.release(lost);
  }
}

/** Runs `fn` in one transaction: COMMIT when it resolves, ROLLBACK when it throws (and rethrow). */
export async function inTransaction<T>(pool: Pool, fn: (client: Client) => Promise<T>): Promise<T> {
  return withClient(pool, async (client) => {
    await client.query('BEGIN');
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
}

/** A pg-boss `db` that runs its statements on `client` (inside the caller's transaction). */
export function queueDb(client: Client): QueueDb {
  return { executeSql: (text, values) => client.query(text, values as unknown[]) };
}
