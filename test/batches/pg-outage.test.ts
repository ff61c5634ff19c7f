/**
 * The Postgres batch store while its database is down, on a real Postgres started here:
 * - a running API host answers every batch and file call with 503 and Retry-After, saying the batch
 *   store is unavailable, in each route's own shape (ours; OpenAI's on /v1/files and a JSON batch),
 *   counts them in /metrics and stays ready;
 * - a `decide worker` started before the database waits for it (one log line per attempt) and
 *   becomes ready once it is up; one pointed at a database that does not exist exits at once;
 * - an API host whose connection is cut inside a batch create answers 503 and serves on.
 */
import { rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createServer } from '../../src/server/app.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { freePort, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { client, goodLines, startServer, startWorker, tempWorkspace } from './helpers.js';

const KEY = 'test-key-pg-outage';
const AUTH = { authorization: `Bearer ${KEY}` };
let workDir: string;
let modelsDir: string;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  ({ dir: workDir, modelsDir } = await tempWorkspace('pg-outage'));
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await rm(workDir, { recursive: true, force: true });
});

describe('an API host whose database goes down', () => {
  let postgres: TestPostgres;
  let app: FastifyInstance;
  let service: DecisionService;
  let base: string;

  beforeAll(async () => {
    postgres = await startPostgres();
    const url = await postgres.database('outage_api');
    service = await DecisionService.open({ modelsDir, ensureDefaultModel: false, threads: 1 });
    // The batch store is picked from the process's DECIDE_DATABASE_URL.
    const saved = process.env.DECIDE_DATABASE_URL;
    process.env.DECIDE_DATABASE_URL = url;
    try {
      app = await createServer({ service, apiKeys: [KEY], dataDir: path.join(workDir, 'api'), batchWorker: false, rateLimit: false, logger: false });
    } finally {
      if (saved === undefined) delete process.env.DECIDE_DATABASE_URL;
      else process.env.DECIDE_DATABASE_URL = saved;
    }
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    cleanups.push(() => service.close(), () => app.close(), () => postgres.stop());
  }, 120_000);

  it('answers every batch and file call with 503 and Retry-After in the route shape, not a 500', async () => {
    const line = `${JSON.stringify({ custom_id: 'a', state: 'late parcel', questions: { refund: { type: 'noul', instructions: 'Refund?' } } })}\n`;
    const form = () => {
      const f = new FormData();
      f.append('model', 'svc-alpha');
      f.append('file', new Blob([line]), 'records.jsonl');
      return f;
    };
    const fileForm = () => {
      const f = new FormData();
      f.append('purpose', 'batch');
      f.append('file', new Blob([line]), 'records.jsonl');
      return f;
    };
    // Up: a job and a file to ask about.
    const created = await fetch(`${base}/v1/batches`, { method: 'POST', body: form(), headers: AUTH });
    expect(created.status).toBe(201);
    const batchId = ((await created.json()) as { id: string }).id;
    const uploaded = await fetch(`${base}/v1/files`, { method: 'POST', body: fileForm(), headers: AUTH });
    expect(uploaded.status).toBe(200);
    const fileId = ((await uploaded.json()) as { id: string }).id;

    await postgres.stop();

    const ours: Array<[string, string, RequestInit?]> = [
      ['GET', `/v1/batches/${batchId}`],
      ['GET', '/v1/batches'],
      ['GET', `/v1/batches/${batchId}/results`],
      ['POST', `/v1/batches/${batchId}/cancel`],
      ['POST', '/v1/batches', { body: form() }],
    ];
    for (const [method, route, init] of ours) {
      const res = await fetch(`${base}${route}`, { method, headers: AUTH, ...init });
      expect(res.status, `${method} ${route}`).toBe(503);
      expect(res.headers.get('retry-after'), route).toBe('5');
      expect(await res.json(), route).toMatchObject({ code: 'server_error', message: expect.stringMatching(/batch store is unavailable/) });
    }
    const openAi: Array<[string, string, RequestInit?]> = [
      ['GET', '/v1/files'],
      ['GET', `/v1/files/${fileId}`],
      ['GET', `/v1/files/${fileId}/content`],
      ['POST', '/v1/files', { body: fileForm() }],
      ['POST', '/v1/batches', { body: JSON.stringify({ input_file_id: fileId, endpoint: '/v1/decide', completion_window: '24h' }), headers: { ...AUTH, 'content-type': 'application/json' } }],
    ];
    for (const [method, route, init] of openAi) {
      const res = await fetch(`${base}${route}`, { method, headers: AUTH, ...init });
      expect(res.status, `${method} ${route}`).toBe(503);
      expect(res.headers.get('retry-after'), route).toBe('5');
      expect(res.headers.get('retry-after-ms'), route).toBe('5000');
      expect(await res.json(), route).toMatchObject({ error: { type: 'server_error', message: expect.stringMatching(/batch store is unavailable/) } });
    }
    // Monitoring sees the outage too; readiness does not change (live decisions go on).
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(Number(/^decide_batch_store_unavailable_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(ours.length + openAi.length);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    // Live decisions do not need the database.
    const live = await fetch(`${base}/v1/decide`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'svc-alpha', state: 's', questions: { q: { type: 'noul', instructions: 'Refund?' } } }) });
    expect(live.status).toBe(200);
  }, 120_000);
});

describe('a worker started before its database', () => {
  it('waits for it, one log line per attempt, and is ready once it is up', async () => {
    const port = await freePort();
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const starting = startWorker({ modelsDir, env: { DECIDE_DATABASE_URL: url }, args: ['--threads', '1'] });
    let output = () => '';
    // The worker prints its waits while nothing listens on the port.
    const early = await Promise.race([starting.then(() => 'ready'), new Promise((r) => setTimeout(r, 4000, 'waiting'))]);
    expect(early).toBe('waiting');
    const postgres = await startPostgres({ port });
    cleanups.push(() => postgres.stop());
    const worker = await starting;
    cleanups.push(() => worker.kill());
    output = worker.output;
    const waits = output().split('\n').filter((l) => l.includes('the database is not answering'));
    expect(waits.length).toBeGreaterThanOrEqual(2);
    expect(waits[0]).toMatch(/ECONNREFUSED.*trying again in 0\.25 s \(attempt 1 failed\)/);
    expect(waits[1]).toMatch(/trying again in 0\.5 s \(attempt 2 failed\)/);
    expect(await worker.stop()).toBe(0);

    // What waiting cannot fix fails at once: a database that does not exist.
    const missing = await startWorker({ modelsDir, env: { DECIDE_DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/no_such_db` } }).then(
      () => 'started',
      (err: Error) => err.message,
    );
    expect(missing).toMatch(/exited with 1/);
    expect(missing).toMatch(/no_such_db" does not exist/);
    // Said once: the store's message quotes the database's, which is not printed again after it.
    expect(missing.match(/does not exist/g)).toHaveLength(1);
    expect(missing).not.toMatch(/not answering/);
  }, 180_000);
});

describe('an API host whose connection is cut inside a batch create', () => {
  // A database restart ends the connection a create holds checked out in its transaction; node-postgres
  // reports that on the client itself, which without a listener ended the whole server process.
  it('answers 503 with Retry-After, stores nothing, and serves on', async () => {
    const postgres = await startPostgres();
    cleanups.push(() => postgres.stop());
    const url = await postgres.database('cut_create');
    const server = await startServer({ dataDir: path.join(workDir, 'cut-api'), modelsDir, env: { DECIDE_DATABASE_URL: url, DECIDE_API_KEYS: KEY }, args: ['--no-worker', '--threads', '1'] });
    cleanups.push(() => server.kill());
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const api = client(server.url, KEY);
      // Hold the input table so that the create's insert waits inside its transaction.
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE decide_batch_inputs IN EXCLUSIVE MODE');
      const creating = api.create({ model: 'svc-alpha', file: goodLines(20, 4, 'cut').join('\n') });
      for (;;) {
        const { rows } = await admin.query<{ n: number }>(`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = 'cut_create' AND wait_event_type = 'Lock'`);
        if (rows[0]!.n > 0) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      await admin.query('ROLLBACK');
      const refused = await creating;
      expect(refused.status, server.output()).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(refused.body).toMatchObject({ code: 'server_error', message: expect.stringMatching(/batch store is unavailable/) });
      expect(server.proc.exitCode, server.output()).toBeNull();
      expect((await admin.query('SELECT count(*)::int AS n FROM decide_batch_jobs')).rows[0]).toEqual({ n: 0 });
      // The next create gets a fresh connection.
      const again = await api.create({ model: 'svc-alpha', file: goodLines(2, 4, 'after').join('\n') });
      expect(again.status).toBe(201);
      const live = await fetch(`${server.url}/v1/decide`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'svc-alpha', state: 's', questions: { q: { type: 'noul', instructions: 'Refund?' } } }) });
      expect(live.status).toBe(200);
    } finally {
      await admin.end().catch(() => undefined);
    }
  }, 120_000);
});
