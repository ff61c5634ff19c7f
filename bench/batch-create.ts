/**
 * Batch creation from an uploaded file, in-process: `OpenAiBatchApi.createBatch` on the SQLite
 * store with the engine stubbed (creation scores nothing), so only reading, checking and placing the
 * input are timed, by CPU time and wall time per call.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/batch-create.js [--mb 89] [--calls 3] [--package DIR]
 *
 * `--package DIR` loads another build's dist/ (a checkout before a change). Prints one JSON line.
 * Asserts nothing.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { mb: { type: 'string', default: '89' }, calls: { type: 'string', default: '3' }, package: { type: 'string' } } });
const pkg = path.resolve(values.package ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..'));
const { BatchService } = (await import(path.join(pkg, 'dist/src/batches/batch-service.js'))) as typeof import('../src/batches/batch-service.js');
const { OpenAiBatchApi } = (await import(path.join(pkg, 'dist/src/batches/openai/openai-batches.js'))) as typeof import('../src/batches/openai/openai-batches.js');

const dir = await mkdtemp(path.join(os.tmpdir(), 'batch-create-'));
try {
  // Lines of about 1.1 KB, as bench/batch-flow.ts uploads them.
  const file = path.join(dir, 'big.jsonl');
  const out = createWriteStream(file);
  const padding = 'x'.repeat(900);
  const lines = Math.round((Number(values.mb) * 1024 * 1024) / 1136);
  for (let i = 0; i < lines; i++) {
    const body = { model: 'svc-alpha', input: `${padding} ${i}`, questions: [{ type: 'predicate', name: 'refund', instructions: 'Refund?' }] };
    if (!out.write(`${JSON.stringify({ custom_id: `b-${i}`, method: 'POST', url: '/v1/decisions', body })}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve) => out.end(() => resolve()));

  const service = { decideRecords: async () => [], resolveModel: (m: string) => `${m}-2026-10`, runtime: async () => undefined };
  const batches = await BatchService.open({ service, dataDir: path.join(dir, 'data'), resume: false, databaseUrl: '', maxRecords: 10_000_000, maxFileBytes: 2 ** 40 });
  const api = await OpenAiBatchApi.open(batches);
  const calls: Array<{ cpuMs: number; wallMs: number }> = [];
  try {
    for (let i = 0; i < Number(values.calls); i++) {
      const uploaded = await api.upload('o', { purpose: 'batch', filename: 'big.jsonl', upload: await batches.stageUpload(createReadStream(file)) });
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      await api.createBatch('o', { input_file_id: uploaded.id, endpoint: '/v1/decisions', completion_window: '24h' });
      const used = process.cpuUsage(cpu);
      calls.push({ cpuMs: Math.round((used.user + used.system) / 1000), wallMs: Math.round(performance.now() - t0) });
    }
  } finally {
    await api.close();
    await batches.close();
  }
  process.stdout.write(`${JSON.stringify({ package: pkg, lines, calls })}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
