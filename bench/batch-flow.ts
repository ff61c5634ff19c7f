/**
 * The batch paths end to end, timed from outside (spawned processes, real HTTP, the `openai` SDK),
 * so the same script measures any two builds of the package alike:
 *
 *   npx tsc -p tsconfig.json && node dist/bench/batch-flow.js [--records N] [--upload-mb M] [--package DIR] [--json FILE]
 *
 * - cli: `decide batch` over N records: records/s from spawn to exit (model load included).
 * - http: files.create -> batches.create (/v1/decisions lines) -> poll until completed ->
 *   files.retrieve + files.content of the output file: records/s from upload to download, and the
 *   time of one GET /v1/files/{output id} (the object with its byte count).
 * - results: a batch of R lines the endpoint refuses (no scoring, so its error file grows large
 *   fast): the median time of GET /v1/files/{error file id} and of downloading that file, and the
 *   server's CPU time per call (from /proc/<pid>/stat, which other load on the machine barely moves).
 * - upload: POST /v1/files of an M MB file (records of ~1 KB), then a batch created from it (and
 *   cancelled at once): the server's peak RSS over its RSS before, sampled every 10 ms from
 *   /proc/<pid>/status, and each call's time and server CPU time.
 * The model is the tiny random-weight preset (make-model --preset tiny --seed 1), so scoring is
 * cheap and the batch machinery's own costs show. `--package DIR` runs another checkout's
 * bin/decide.js (a build before a change). Prints one JSON object. Asserts nothing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import OpenAI from 'openai';

const MODEL = 'svc-alpha-2026-10';
const QUESTIONS = {
  refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
  topic: { type: 'choice', instructions: 'What is it about?', criteria: { shipping: 'Delivery', billing: 'Charges', other: 'Anything else' } },
};
const WORDS = ['parcel', 'broken', 'charged', 'twice', 'late', 'refund', 'hello', 'order', 'invoice'];

function state(i: number, words: number): string {
  return `#${i} ${Array.from({ length: words }, (_, k) => WORDS[(i * 7 + k * 3) % WORDS.length]).join(' ')}`;
}

const decisionsBody = (i: number, words = 12) => ({
  model: 'svc-alpha',
  input: state(i, words),
  questions: [
    { type: 'predicate', name: 'refund', instructions: QUESTIONS.refund.instructions },
    { type: 'choice', name: 'topic', instructions: QUESTIONS.topic.instructions, choices: [{ value: 'shipping' }, { value: 'billing' }, { value: 'other' }] },
  ],
});

function decideBin(pkg: string): string {
  return path.join(pkg, 'bin', 'decide.js');
}

interface Server {
  url: string;
  pid: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

async function startServer(pkg: string, dataDir: string, modelsDir: string): Promise<Server> {
  const proc = spawn(process.execPath, [decideBin(pkg), 'serve', '--port', '0', '--data-dir', dataDir, '--models-dir', modelsDir, '--log-level', 'warn'], {
    env: { ...process.env, DECIDE_API_KEYS: 'bench-key', DECIDE_BATCH_MAX_RECORDS: '1000000', DECIDE_RATE_LIMIT_RPS: '100000', DECIDE_RATE_LIMIT_BURST: '100000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    proc.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(stdout);
      if (m) resolve(m[1]!);
    });
    void exited.then(() => reject(new Error(`decide serve exited:\n${out}`)));
  });
  return {
    url,
    pid: proc.pid!,
    proc,
    async stop() {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

function rssOf(pid: number): number {
  try {
    const status = spawnSync('cat', [`/proc/${pid}/status`], { encoding: 'utf8' }).stdout;
    return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** CPU time (user + system) `pid` has used, in milliseconds: unlike wall time, it barely moves with other load on the machine. */
function cpuMsOf(pid: number): number {
  const fields = spawnSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' }).stdout.split(') ')[1]!.split(' ');
  // utime and stime are fields 14 and 15 of the line, in clock ticks (100 per second on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Peak RSS of `pid` while `fn` runs, sampled every 10 ms, and the CPU time it used meanwhile. */
async function peakRss<T>(pid: number, fn: () => Promise<T>): Promise<{ result: T; before: number; peak: number; ms: number; cpuMs: number }> {
  const cpu0 = cpuMsOf(pid);
  const before = rssOf(pid);
  let peak = before;
  let sampling = true;
  const loop = (async () => {
    while (sampling) {
      peak = Math.max(peak, rssOf(pid));
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const t0 = performance.now();
  try {
    const result = await fn();
    return { result, before, peak: Math.max(peak, rssOf(pid)), ms: performance.now() - t0, cpuMs: cpuMsOf(pid) - cpu0 };
  } finally {
    sampling = false;
    await loop;
  }
}

async function until<T>(fn: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await fn();
    if (done(v)) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function writeLines(file: string, n: number, line: (i: number) => string): Promise<void> {
  const out = createWriteStream(file);
  for (let i = 0; i < n; i++) if (!out.write(`${line(i)}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { records: { type: 'string', default: '2000' }, 'refused-records': { type: 'string', default: '40000' }, 'upload-mb': { type: 'string', default: '100' }, package: { type: 'string' }, json: { type: 'string' } },
  });
  const records = Number(values.records);
  const uploadMb = Number(values['upload-mb']);
  const pkg = path.resolve(values.package ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..'));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'batch-flow-'));
  const result: Record<string, unknown> = { package: pkg, records, uploadMb };
  try {
    const modelsDir = path.join(dir, 'models');
    await mkdir(modelsDir);
    const made = spawnSync(process.execPath, [decideBin(pkg), 'make-model', '--preset', 'tiny', '--seed', '1', '--out', path.join(modelsDir, MODEL), '--no-agreement'], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`make-model failed: ${made.stderr}`);

    // decide batch
    const input = path.join(dir, 'records.jsonl');
    await writeLines(input, records, (i) => JSON.stringify({ custom_id: `r-${i}`, state: state(i, 12), questions: QUESTIONS }));
    let t0 = performance.now();
    const cli = spawnSync(process.execPath, [decideBin(pkg), 'batch', input, '--model', 'svc-alpha', '--out', path.join(dir, 'out.jsonl'), '--models-dir', modelsDir, '--force'], {
      encoding: 'utf8',
    });
    if (cli.status !== 0) throw new Error(`decide batch failed: ${cli.stderr}`);
    const cliMs = performance.now() - t0;
    result.cli = { ms: Math.round(cliMs), recordsPerSecond: Math.round(records / (cliMs / 1000)) };

    const server = await startServer(pkg, path.join(dir, 'data'), modelsDir);
    try {
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'bench-key', maxRetries: 0 });
      // HTTP flow, one line in ten refused (a bad body), so both result files exist.
      const flowFile = path.join(dir, 'flow.jsonl');
      await writeLines(flowFile, records, (i) =>
        JSON.stringify({ custom_id: `f-${i}`, method: 'POST', url: '/v1/decisions', body: i % 10 === 9 ? { model: 'svc-alpha', input: 'x', questions: [] } : decisionsBody(i) }),
      );
      t0 = performance.now();
      const file = await client.files.create({ file: new File([await readFile(flowFile)], 'flow.jsonl'), purpose: 'batch' });
      const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/decisions' as never, completion_window: '24h' });
      const done = await until(
        () => client.batches.retrieve(created.id),
        (b) => ['completed', 'failed', 'cancelled', 'expired'].includes(b.status),
      );
      const outputObject = await client.files.retrieve(done.output_file_id!);
      const output = await (await client.files.content(done.output_file_id!)).text();
      const flowMs = performance.now() - t0;
      if (Buffer.byteLength(output) !== outputObject.bytes) throw new Error(`output file: ${Buffer.byteLength(output)} bytes served, ${outputObject.bytes} announced`);
      const retrieveMs: number[] = [];
      for (let i = 0; i < 20; i++) {
        const s = performance.now();
        await client.files.retrieve(done.output_file_id!);
        retrieveMs.push(performance.now() - s);
      }
      retrieveMs.sort((a, b) => a - b);
      result.http = {
        status: done.status,
        counts: done.request_counts,
        ms: Math.round(flowMs),
        recordsPerSecond: Math.round(records / (flowMs / 1000)),
        outputBytes: outputObject.bytes,
        retrieveOutputFileMedianMs: Number(retrieveMs[10]!.toFixed(2)),
      };

      // A large error file: every line refused by the endpoint.
      const refused = Number(values['refused-records']);
      const refusedFile = path.join(dir, 'refused.jsonl');
      await writeLines(refusedFile, refused, (i) => JSON.stringify({ custom_id: `e-${i}`, method: 'POST', url: '/v1/decisions', body: { model: 'svc-alpha', input: `x ${i}`, questions: [] } }));
      const refusedUpload = await client.files.create({ file: new File([await readFile(refusedFile)], 'refused.jsonl'), purpose: 'batch' });
      const refusedBatch = await client.batches.create({ input_file_id: refusedUpload.id, endpoint: '/v1/decisions' as never, completion_window: '24h' });
      const refusedDone = await until(
        () => client.batches.retrieve(refusedBatch.id),
        (b) => ['completed', 'failed', 'cancelled', 'expired'].includes(b.status),
      );
      const median = async (fn: () => Promise<unknown>, n: number) => {
        const ms: number[] = [];
        for (let i = 0; i < n; i++) {
          const s = performance.now();
          await fn();
          ms.push(performance.now() - s);
        }
        return Number(ms.sort((a, b) => a - b)[Math.floor(n / 2)]!.toFixed(2));
      };
      const errorFileId = refusedDone.error_file_id!;
      const cpuPerCall = async (fn: () => Promise<unknown>, n: number) => {
        const cpu0 = cpuMsOf(server.pid);
        for (let i = 0; i < n; i++) await fn();
        return Number(((cpuMsOf(server.pid) - cpu0) / n).toFixed(1));
      };
      result.results = {
        lines: refused,
        errorFileBytes: (await client.files.retrieve(errorFileId)).bytes,
        retrieveErrorFileMedianMs: await median(() => client.files.retrieve(errorFileId), 20),
        retrieveErrorFileServerCpuMs: await cpuPerCall(() => client.files.retrieve(errorFileId), 20),
        downloadErrorFileMedianMs: await median(async () => (await client.files.content(errorFileId)).arrayBuffer(), 5),
        downloadErrorFileServerCpuMs: await cpuPerCall(async () => (await client.files.content(errorFileId)).arrayBuffer(), 5),
      };

      // A large upload, then a batch made from it (cancelled at once: only creation is measured).
      const big = path.join(dir, 'big.jsonl');
      const padding = 'x'.repeat(900);
      const lines = Math.round((uploadMb * 1024 * 1024) / (JSON.stringify({ custom_id: 'b-000000', method: 'POST', url: '/v1/decisions', body: decisionsBody(0, 0) }).length + 930));
      await writeLines(big, lines, (i) => JSON.stringify({ custom_id: `b-${i}`, method: 'POST', url: '/v1/decisions', body: { ...decisionsBody(i, 0), input: `${padding} ${i}` } }));
      const form = async () => {
        const body = new FormData();
        body.append('purpose', 'batch');
        body.append('file', new Blob([await readFile(big)]), 'big.jsonl');
        return body;
      };
      const body = await form();
      const upload = await peakRss(server.pid, async () => {
        const res = await fetch(`${server.url}/v1/files`, { method: 'POST', body, headers: { authorization: 'Bearer bench-key' } });
        if (res.status !== 200) throw new Error(`upload: ${res.status} ${await res.text()}`);
        return (await res.json()) as { id: string; bytes: number };
      });
      const create = await peakRss(server.pid, () => client.batches.create({ input_file_id: upload.result.id, endpoint: '/v1/decisions' as never, completion_window: '24h' }));
      await client.batches.cancel(create.result.id);
      const mb = (b: number) => Math.round(b / 2 ** 20);
      result.upload = {
        bytes: upload.result.bytes,
        lines,
        uploadMs: Math.round(upload.ms),
        uploadServerCpuMs: upload.cpuMs,
        rssBeforeMb: mb(upload.before),
        uploadPeakRssMb: mb(upload.peak),
        createBatchMs: Math.round(create.ms),
        createBatchServerCpuMs: create.cpuMs,
        createPeakRssMb: mb(create.peak),
      };
    } finally {
      await server.stop();
    }
    const text = JSON.stringify(result, null, 2);
    process.stdout.write(`${text}\n`);
    if (values.json) await writeFile(values.json, `${text}\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
