/**
 * Live latency while a batch runs, and the batch's throughput, over real HTTP on the default model.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/live-during-batch.js [--records N] [--live N] [--batch-call-tokens N] [--json FILE]
 *
 * One server (createServer) on the embedded default model (svc-alpha, built in a scratch models
 * directory as `npm start` builds it), batch settings from DECIDE_BATCH_* as in production:
 *   1. idle: `--live` POST /v1/decide requests one after another (4 questions, a new state each);
 *   2. batch alone: a `--records`-record batch uploaded through POST /v1/batches, timed from the
 *      201 to `completed`;
 *   3. batch with live traffic: another batch (other states, so nothing is cached from step 2), and
 *      live requests one after another while it is in progress.
 * docs/api.md promises that a live request waits for at most one engine call behind batch work;
 * the target of issue 12 is live p95 during a batch <= max(300 ms, 5 x idle p95).
 * `--batch-call-tokens` sets the scheduler's maxBatchCallTokens (default 2048); a value larger than
 * any chunk (1000000) gives the behaviour before batch jobs were sliced: one engine call per chunk.
 * Prints a table and optionally writes JSON. Asserts nothing.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { createServer } from '../src/server/app.js';
import { DecisionService } from '../src/service/decision-service.js';
import { makeRecords } from './batch-runner.js';
import { QUESTIONS, ticket } from './http-latency.js';

const KEY = 'bench-live-during-batch-key';
const MODEL = 'svc-alpha';


export interface Percentiles {
  count: number;
  p50: number;
  p95: number;
  max: number;
}

export interface LiveDuringBatchResult {
  records: number;
  /** The scheduler's maxBatchCallTokens; undefined: its default. */
  batchCallTokens?: number;
  idleMs: Percentiles;
  duringBatchMs: Percentiles;
  /** max(300, 5 x idle p95): the bound on duringBatchMs.p95. */
  targetMs: number;
  batchAloneSeconds: number;
  batchWithLiveSeconds: number;
  batchAloneRecordsPerSecond: number;
  batchWithLiveRecordsPerSecond: number;
}

function percentiles(samples: number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
  return { count: sorted.length, p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] ?? NaN };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function measureLiveDuringBatch(options: { records: number; live: number; batchCallTokens?: number }): Promise<LiveDuringBatchResult> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'decide-bench-live-batch-'));
  const service = await DecisionService.open({
    modelsDir: path.join(scratch, 'models'),
    preload: [MODEL],
    ...(options.batchCallTokens ? { runtime: { scheduler: { maxBatchCallTokens: options.batchCallTokens } } } : {}),
  });
  const app = await createServer({ service, apiKeys: [KEY], rateLimit: false, dataDir: path.join(scratch, 'data'), logger: false });
  try {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const base = `http://127.0.0.1:${port}`;
    const auth = { authorization: `Bearer ${KEY}` };

    let liveIndex = 0;
    const live = async (): Promise<number> => {
      const body = JSON.stringify({ model: MODEL, state: ticket('live', liveIndex++), questions: QUESTIONS });
      const t0 = performance.now();
      const res = await fetch(`${base}/v1/decide`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`bench: POST /v1/decide answered ${res.status}`);
      return performance.now() - t0;
    };
    const startBatch = async (seed: number): Promise<string> => {
      const form = new FormData();
      form.set('model', MODEL);
      form.set('file', new Blob([makeRecords(options.records, seed)]), 'input.jsonl');
      const res = await fetch(`${base}/v1/batches`, { method: 'POST', headers: auth, body: form });
      const batch = (await res.json()) as { id: string };
      if (res.status !== 201) throw new Error(`bench: POST /v1/batches answered ${res.status}: ${JSON.stringify(batch)}`);
      return batch.id;
    };
    const status = async (id: string): Promise<string> => {
      const res = await fetch(`${base}/v1/batches/${id}`, { headers: auth });
      const batch = (await res.json()) as { status: string; progress: { failed: number } };
      if (batch.status === 'completed' && batch.progress.failed > 0) throw new Error('bench: batch rows failed');
      if (['failed', 'cancelled', 'expired'].includes(batch.status)) throw new Error(`bench: batch ${batch.status}`);
      return batch.status;
    };

    for (let i = 0; i < 5; i++) await live();
    const idle: number[] = [];
    for (let i = 0; i < options.live; i++) idle.push(await live());

    let t0 = performance.now();
    const alone = await startBatch(11);
    while ((await status(alone)) !== 'completed') await sleep(100);
    const batchAloneSeconds = (performance.now() - t0) / 1000;

    t0 = performance.now();
    const withLive = await startBatch(23);
    const during: number[] = [];
    let done = false;
    const poller = (async () => {
      while ((await status(withLive)) !== 'completed') await sleep(100);
      done = true;
    })();
    while (!done) {
      during.push(await live());
      await sleep(20);
    }
    await poller;
    const batchWithLiveSeconds = (performance.now() - t0) / 1000;

    const idleMs = percentiles(idle);
    return {
      records: options.records,
      batchCallTokens: options.batchCallTokens,
      idleMs,
      duringBatchMs: percentiles(during),
      targetMs: Math.max(300, 5 * idleMs.p95),
      batchAloneSeconds,
      batchWithLiveSeconds,
      batchAloneRecordsPerSecond: options.records / batchAloneSeconds,
      batchWithLiveRecordsPerSecond: options.records / batchWithLiveSeconds,
    };
  } finally {
    await app.close();
    await service.close();
    await rm(scratch, { recursive: true, force: true });
  }
}

export function formatLiveDuringBatch(r: LiveDuringBatchResult): string {
  const row = (name: string, p: Percentiles) =>
    `  ${name.padEnd(14)} n=${String(p.count).padStart(4)}  p50 ${p.p50.toFixed(1).padStart(7)} ms  p95 ${p.p95.toFixed(1).padStart(7)} ms  max ${p.max.toFixed(1).padStart(7)} ms`;
  return [
    `live POST /v1/decide (4 questions, new state) on the default model, batch of ${r.records} records (3 questions each), ` +
      `batch engine calls of at most ${r.batchCallTokens ?? 'the default'} tokens`,
    row('idle', r.idleMs),
    row('during batch', r.duringBatchMs),
    `  target: p95 during batch <= max(300, 5 x idle p95) = ${r.targetMs.toFixed(1)} ms: ${r.duringBatchMs.p95 <= r.targetMs ? 'met' : 'NOT met'}`,
    `  batch alone      ${r.batchAloneSeconds.toFixed(2)} s  ${r.batchAloneRecordsPerSecond.toFixed(1)} records/s`,
    `  batch with live  ${r.batchWithLiveSeconds.toFixed(2)} s  ${r.batchWithLiveRecordsPerSecond.toFixed(1)} records/s`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      records: { type: 'string', default: '1000' },
      live: { type: 'string', default: '60' },
      'batch-call-tokens': { type: 'string' },
      json: { type: 'string' },
    },
  });
  const batchCallTokens = values['batch-call-tokens'] === undefined ? undefined : Number(values['batch-call-tokens']);
  const result = await measureLiveDuringBatch({ records: Number(values.records), live: Number(values.live), batchCallTokens });
  process.stdout.write(`${formatLiveDuringBatch(result)}\n`);
  if (values.json) await writeFile(values.json, `${JSON.stringify(result, null, 2)}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]).endsWith(path.join('bench', 'live-during-batch.js'))) {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  });
}
