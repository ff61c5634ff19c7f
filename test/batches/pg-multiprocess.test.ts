/**
 * Batches across processes on one Postgres (a real server started here), with real `decide`
 * processes: an API host that only serves (`decide serve --no-worker`) and two `decide worker`s,
 * all started at once on a fresh database (their migrations race). Mid-job, one worker and the API
 * host are SIGKILLed; a replacement API host on the same database serves the job to its end, the
 * dead worker's chunk being taken again once its lease lapses. The results hold every row exactly
 * once, in input order, equal (within 1e-6) to a single-process `decide batch` run of the file.
 * Then a cancel on one host stops the work that the other hosts see, keeping a prefix of rows.
 *
 * Each `decide` process costs seconds of CPU to start, so the cancel case goes on with the
 * replacement host and the surviving worker of the first case, and adds one host of its own.
 */
import { spawn } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { MIGRATION_VERSIONS } from '../../src/batches/pg/migrations.js';
import { decideBin } from '../helpers/bin.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { client, maxProbDiff, mixedFile, parseRows, startServer, startWorker, tempWorkspace, type ResultRow, type ServerProcess } from './helpers.js';

const KEY = 'test-key-multiprocess';
/**
 * Short rows in chunks of 16: 28 chunks for four worker loops, so the worker killed at a quarter
 * of the job holds chunks and others are still queued, and the cancelled job has chunks left.
 */
const ROWS = 400;
const CHUNK_RECORDS = 16;
let workDir: string;
let modelsDir: string;
let postgres: TestPostgres;
let url: string;
let db: pg.Client;
let fileText: string;
let reference: ResultRow[];
const processes: Array<{ kill(): Promise<void> }> = [];
/** Left running by the first case for the second. */
let survivingHost: ServerProcess | undefined;
let survivingWorker: Omit<ServerProcess, 'url'> | undefined;

/** Short states and one question: hundreds of rows in a few seconds on the tiny model. */
function shortLines(n: number, prefix: string): string[] {
  const words = ['parcel', 'broken', 'charged', 'twice', 'late', 'refund', 'hello', 'order', 'invoice'];
  let s = 7;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  return Array.from({ length: n }, (_, i) => {
    const state = Array.from({ length: 2 + Math.floor(next() * 4) }, () => words[Math.floor(next() * words.length)]).join(' ');
    return JSON.stringify({ custom_id: `${prefix}-${i}`, state, questions: { refund: { type: 'noul', instructions: 'Refund?' } } });
  });
}

/** `decide batch` in one process: the reference the multi-process run must equal. */
async function referenceRun(input: string, out: string): Promise<void> {
  const proc = spawn(process.execPath, [await decideBin(), 'batch', input, '--model', 'svc-alpha', '--out', out, '--models-dir', modelsDir, '--threads', '1'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const code = await new Promise<number | null>((resolve, reject) => proc.once('error', reject).once('exit', resolve));
  expect(code, stderr).toBe(0);
}

beforeAll(async () => {
  ({ dir: workDir, modelsDir } = await tempWorkspace('batch-pg'));
  // Good rows with the mixed file's bad ones (a duplicate custom_id in the next chunk included) in the middle.
  const lines = [...shortLines(ROWS / 2, 'a'), ...mixedFile().text.trimEnd().split('\n'), ...shortLines(ROWS / 2, 'b')];
  fileText = `${lines.join('\n')}\n`;
  const input = path.join(workDir, 'input.jsonl');
  await writeFile(input, fileText);
  const out = path.join(workDir, 'reference.jsonl');
  // The reference run and the Postgres start overlap; both settle before anything fails, so that
  // afterAll stops a server that started.
  const started = await Promise.allSettled([startPostgres().then((p) => (postgres = p)), referenceRun(input, out)]);
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  reference = parseRows(await readFile(out, 'utf8'));
  url = await postgres.database('multiprocess');
  db = new pg.Client({ connectionString: url });
  await db.connect();
}, 180_000);

afterAll(async () => {
  for (const p of processes) await p.kill().catch(() => undefined);
  await db?.end();
  await postgres?.stop();
  await rm(workDir, { recursive: true, force: true });
});

const env = () => ({ DECIDE_DATABASE_URL: url, DECIDE_API_KEYS: KEY, DECIDE_BATCH_LEASE_SECONDS: '10', DECIDE_BATCH_CHUNK_RECORDS: String(CHUNK_RECORDS) });

async function apiHost(name: string): Promise<ServerProcess> {
  const host = await startServer({ dataDir: path.join(workDir, name), modelsDir, env: env(), args: ['--no-worker', '--threads', '1'] });
  processes.push(host);
  return host;
}

async function worker(): Promise<Omit<ServerProcess, 'url'>> {
  const w = await startWorker({ modelsDir, env: env(), args: ['--threads', '1'] });
  processes.push(w);
  return w;
}

/** Chunks of batch `id` that the queue has not completed: queued, taken, or to be retried. */
async function openChunks(id: string): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM decide_queue.job WHERE singleton_key LIKE $1 AND state <> 'completed'`, [`${id}:%`]);
  return Number(rows[0]!.n);
}

/** Resolves once every chunk of batch `id` is done in the queue: no worker can commit to it any more. */
async function chunksSettled(id: string): Promise<void> {
  const until = Date.now() + 60_000;
  for (let open = await openChunks(id); open > 0; open = await openChunks(id)) {
    if (Date.now() > until) throw new Error(`batch ${id}: ${open} chunks still open`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('API host and workers on one Postgres', () => {
  it('survives a SIGKILLed worker and API host: a new host finishes the job, every row once, in order, as one process would', async () => {
    // Three processes migrate a fresh database at once.
    const [hostA, w1, w2] = await Promise.all([apiHost('host-a'), worker(), worker()]);
    expect((await db.query('SELECT version FROM decide_schema_migrations ORDER BY version')).rows).toEqual(MIGRATION_VERSIONS.map((version) => ({ version })));

    const a = client(hostA.url, KEY);
    const created = await a.create({ model: 'svc-alpha', file: fileText });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id;
    const total = created.body.progress.total;
    expect(total).toBe(reference.length);
    // Mid-job: a quarter of the rows committed.
    for (;;) {
      const { body } = await a.get(id);
      if (body.progress.completed + body.progress.failed >= total / 4) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await Promise.all([w1.kill(), hostA.kill()]);
    expect(await openChunks(id), 'the job was still running when its worker was killed').toBeGreaterThan(0);

    const hostB = await apiHost('host-b');
    const b = client(hostB.url, KEY);
    const done = await b.waitFor(id, ['completed', 'failed', 'cancelled'], 120_000);
    expect(done.status).toBe('completed');
    const rows = parseRows((await b.results(id)).text);
    expect(rows.map((r) => r.custom_id)).toEqual(reference.map((r) => r.custom_id));
    let worst = 0;
    rows.forEach((r, i) => (worst = Math.max(worst, maxProbDiff(r, reference[i]!))));
    expect(worst).toBeLessThanOrEqual(1e-6 + 1e-12); // rows round probabilities to 6 decimals
    expect(done.progress.completed + done.progress.failed).toBe(total);
    const stored = await db.query<{ n: string; distinct_idx: string }>('SELECT count(*) AS n, count(DISTINCT idx) AS distinct_idx FROM decide_batch_results WHERE job_id = $1', [id]);
    expect(stored.rows[0]).toEqual({ n: String(total), distinct_idx: String(total) });
    // The killed worker held chunks (two loops, a non-empty queue): they were taken again after their lease.
    const retaken = await db.query<{ n: string }>(`SELECT count(*) AS n FROM decide_queue.job WHERE singleton_key LIKE $1 AND retry_count > 0`, [`${id}:%`]);
    expect(Number(retaken.rows[0]!.n)).toBeGreaterThanOrEqual(1);
    survivingHost = hostB;
    survivingWorker = w2;
  }, 180_000);

  it('cancels across hosts: created on one, cancelled on another; the workers stop within a chunk and keep a prefix', async () => {
    const [hostC, hostD, w] = await Promise.all([apiHost('host-c'), survivingHost ?? apiHost('host-d'), survivingWorker ?? worker()]);
    const c = client(hostC.url, KEY);
    const d = client(hostD.url, KEY);
    const lines = shortLines(ROWS, 'x');
    const created = await c.create({ model: 'svc-alpha', file: `${lines.join('\n')}\n` });
    const id = created.body.id;
    for (;;) {
      const { body } = await d.get(id);
      if (body.progress.completed >= 4 * CHUNK_RECORDS) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const cancelled = await d.cancel(id);
    expect(cancelled.body.status).toBe('cancelled');
    const atCancel = cancelled.body.progress.completed;
    expect(atCancel).toBeLessThan(ROWS);
    // The chunk that was in flight is discarded at its commit, and the rest are skipped: once the
    // queue has no open chunk of the job, nothing has moved after the cancel.
    await chunksSettled(id);
    const later = await c.get(id);
    expect(later.body.status).toBe('cancelled');
    expect(later.body.progress.completed).toBe(atCancel);
    const rows = parseRows((await c.results(id)).text);
    expect(rows.map((r) => r.custom_id)).toEqual(lines.slice(0, atCancel).map((l) => (JSON.parse(l) as { custom_id: string }).custom_id));
    expect(await w.stop()).toBe(0); // SIGTERM: no chunk in flight, a clean exit
  }, 120_000);
});
