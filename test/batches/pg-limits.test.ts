/**
 * The Postgres batch store's connection limits and queue settings on a real Postgres:
 * - a database that accepts the connection but never answers (a frozen host) fails the call after
 *   the connect timeout instead of holding it for ever, so the outage is logged and retried;
 * - the chunk queue's lease is set by the processes that work on chunks: an API-only host started
 *   after the workers leaves it as they set it, and each chunk carries the lease its worker
 *   touches it by.
 */
import net from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CONNECTION_LIMITS, openPool } from '../../src/batches/pg/database.js';
import { CHUNK_QUEUE, startQueue } from '../../src/batches/pg/queue.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let postgres: TestPostgres;

beforeAll(async () => {
  postgres = await startPostgres();
}, 120_000);

afterAll(async () => {
  await postgres?.stop();
});

describe('a database that never answers', () => {
  it('fails the call after the connect timeout', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    const pool = openPool(`postgres://u:secret@127.0.0.1:${port}/db`, 1);
    try {
      const started = Date.now();
      const err = await pool.query('SELECT 1').then(() => undefined, (e: unknown) => e as Error);
      expect(err).toBeInstanceOf(Error);
      expect(err!.message).toMatch(/timeout/i);
      expect(Date.now() - started).toBeGreaterThanOrEqual(CONNECTION_LIMITS.connectionTimeoutMillis - 500);
    } finally {
      await pool.end().catch(() => undefined);
      for (const s of sockets) s.destroy();
      silent.close();
    }
  }, 30_000);
});

describe('the chunk queue lease', () => {
  it('an API-only host started after a worker leaves the lease the worker set', async () => {
    const url = await postgres.database('queue_lease');
    const noop = () => undefined;
    const worker = await startQueue(url, 90, true, noop);
    try {
      expect((await worker.getQueue(CHUNK_QUEUE))?.heartbeatSeconds).toBe(90);
      const apiHost = await startQueue(url, 30, false, noop);
      await apiHost.stop({ graceful: false, close: true });
      expect((await worker.getQueue(CHUNK_QUEUE))?.heartbeatSeconds).toBe(90);
      // A chunk queued now carries that lease: what its worker touches it by.
      await worker.send(CHUNK_QUEUE, { job: 'j', chunk: 0, from: 0, to: 1 });
      const [job] = await worker.fetch(CHUNK_QUEUE, { includeMetadata: true });
      expect(job?.heartbeatSeconds).toBe(90);
      // Another worker started later sets it (the last worker started decides, as documented).
      const later = await startQueue(url, 45, true, noop);
      await later.stop({ graceful: false, close: true });
      expect((await worker.getQueue(CHUNK_QUEUE))?.heartbeatSeconds).toBe(45);
    } finally {
      await worker.stop({ graceful: false, close: true });
    }
  }, 60_000);
});
