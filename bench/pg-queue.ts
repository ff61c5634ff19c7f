/**
 * The Postgres batch store's own cost, and its throughput with 1, 2 and 3 worker processes.
 *
 *   DECIDE_DATABASE_URL=postgres://... npx tsc -p tsconfig.json && \
 *     node dist/bench/pg-queue.js [--models-dir DIR] [--model ID] [--records N] [--overhead-records N] [--workers 1,2,3]
 *
 * - overhead: a job worked in this process by the real chunk worker (pg-boss fetch, input rows read,
 *   records parsed and validated, rows formatted, the one-transaction commit with the queue
 *   completion), with a scorer that answers at once: the time per chunk is the queue's and the
 *   store's, the engine's excluded. Also the create time (input rows + chunk jobs, one transaction).
 * - throughput: N real `decide worker --threads 1` processes, started (models loaded) before the job
 *   is created; the time from create to completed, in records per second.
 * Use a database of its own: the bench leaves its jobs there. Prints a table; asserts nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { BatchService, type BatchDecisionService } from '../src/batches/batch-service.js';
import type { RecordOutcome } from '../src/service/decision-service.js';

const BIN = fileURLToPath(new URL('../../bin/decide.js', import.meta.url));

/** Short support tickets with one question, as in test/batches/pg-multiprocess.test.ts. */
function records(n: number, prefix: string): string {
  const words = ['parcel', 'broken', 'charged', 'twice', 'late', 'refund', 'hello', 'order', 'invoice'];
  let s = 7;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const lines = Array.from({ length: n }, (_, i) => {
    const state = Array.from({ length: 2 + Math.floor(next() * 4) }, () => words[Math.floor(next() * words.length)]).join(' ');
    return JSON.stringify({ custom_id: `${prefix}-${i}`, state, questions: { refund: { type: 'noul', instructions: 'Refund?' } } });
  });
  return `${lines.join('\n')}\n`;
}

async function until(batches: BatchService, id: string): Promise<void> {
  for (;;) {
    const b = await batches.get('bench', id);
    if (b.status === 'completed') return;
    if (b.status !== 'queued' && b.status !== 'in_progress') throw new Error(`batch ${id} ended ${b.status}: ${JSON.stringify(b.error)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A scorer that answers every record at once: what is left is the store's and the queue's time. */
const instant: BatchDecisionService = {
  resolveModel: (id) => id,
  runtime: async () => undefined,
  decideRecords: async (_model, requests) =>
    requests.map((): RecordOutcome => ({ ok: true, result: { id: 'dec_bench', model: 'bench-model', answers: {}, inputTokens: 0, cachedTokens: 0, outputTokens: 0 } })),
};

async function overhead(dataDir: string, n: number, chunkRecords: number) {
  const batches = await BatchService.open({ service: instant, dataDir, chunk: { chunkRecords } });
  try {
    const upload = await batches.stageUpload(Readable.from([records(n, `o${chunkRecords}`)]));
    const t0 = performance.now();
    const job = await batches.create({ owner: 'bench', model: 'bench-model', upload });
    const t1 = performance.now();
    await until(batches, job.id);
    const t2 = performance.now();
    const chunks = Math.ceil(n / chunkRecords);
    return { chunkRecords, chunks, createMs: t1 - t0, perChunkMs: (t2 - t1) / chunks, perRecordUs: ((t2 - t1) * 1000) / n };
  } finally {
    await batches.close();
  }
}

function startWorker(modelsDir: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [BIN, 'worker', '--models-dir', modelsDir, '--threads', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    proc.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    proc.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('worker ready')) resolve(proc);
    });
    proc.once('exit', (code) => reject(new Error(`decide worker exited with ${code}: ${err}`)));
  });
}

async function throughput(dataDir: string, modelsDir: string, model: string, n: number, workers: number) {
  const procs = await Promise.all(Array.from({ length: workers }, () => startWorker(modelsDir)));
  // This process only creates and polls (resume: false): the workers do all the scoring.
  const batches = await BatchService.open({ service: { ...instant, resolveModel: () => model }, dataDir, resume: false });
  try {
    const upload = await batches.stageUpload(Readable.from([records(n, `w${workers}`)]));
    const t0 = performance.now();
    const job = await batches.create({ owner: 'bench', model, upload });
    await until(batches, job.id);
    const seconds = (performance.now() - t0) / 1000;
    return { workers, records: n, seconds, recordsPerSecond: n / seconds };
  } finally {
    await batches.close();
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            p.removeAllListeners('exit');
            p.once('exit', () => resolve());
            p.kill('SIGTERM');
          }),
      ),
    );
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'models-dir': { type: 'string', default: 'models' },
      model: { type: 'string', default: 'svc-alpha-2026-10' },
      records: { type: 'string', default: '1200' },
      'overhead-records': { type: 'string', default: '20000' },
      workers: { type: 'string', default: '1,2,3' },
    },
  });
  if (!process.env.DECIDE_DATABASE_URL) throw new Error('set DECIDE_DATABASE_URL=postgres://... (a database of its own)');
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pg-queue-bench-'));
  try {
    console.log(`# Postgres batch store: queue overhead (engine excluded), ${os.cpus().length} CPUs`);
    console.log('chunk records | chunks | create (ms) | per chunk (ms) | per record (us)');
    for (const size of [128, 32]) {
      const r = await overhead(dataDir, Number(values['overhead-records']), size);
      console.log(`${r.chunkRecords} | ${r.chunks} | ${r.createMs.toFixed(0)} | ${r.perChunkMs.toFixed(2)} | ${r.perRecordUs.toFixed(1)}`);
    }
    console.log(`\n# throughput: ${values.records} records, model ${values.model}, decide worker --threads 1 each`);
    console.log('workers | seconds | records/s');
    for (const workers of values.workers!.split(',').map(Number)) {
      const r = await throughput(dataDir, path.resolve(values['models-dir']!), values.model!, Number(values.records), workers);
      console.log(`${r.workers} | ${r.seconds.toFixed(1)} | ${r.recordsPerSecond.toFixed(1)}`);
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
