/**
 * Batch runner throughput against the engine alone, on the same record groups.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/batch-runner.js [--models-dir DIR] [--model ID] [--records N] [--rounds R] [--json FILE]
 *
 * - runner: runBatch() over a generated JSONL file exactly as a batch job runs it (parse, validate,
 *   tokenize, score through the scheduler, write + fsync the rows, commit each chunk to a real
 *   SQLite store).
 * - engine: the same chunks, tokenized beforehand (runtime.prepare, not timed), each scored by one
 *   runtime.engine.scoreBatch() call in sequence: the upper bound for the runner.
 * Each measurement uses a fresh DecisionService, so neither side finds the other's prefixes cached.
 * Prints a table and optionally writes JSON. Asserts nothing.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import type { NormalizedDecideRequest } from '../src/api/validate.js';
import { runBatch } from '../src/batches/runner.js';
import { zeroUsage, type JobProgress } from '../src/batches/ports.js';
import { SqliteJobTable } from '../src/batches/sqlite/sqlite-jobs.js';
import type { PreparedRequest } from '../src/runtime/model-runtime.js';
import { DecisionService } from '../src/service/decision-service.js';

const WORDS = ['parcel', 'arrived', 'broken', 'charged', 'twice', 'refund', 'late', 'order', 'support', 'address', 'invoice', 'thanks'];

/** Deterministic records: varied state lengths, the same three questions (as a real batch would ask). */
export function makeRecords(n: number, seed = 7): string {
  let s = seed >>> 0;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const questions = {
    refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
    topic: { type: 'choice', instructions: 'What is the ticket about?', criteria: { shipping: 'Delivery and parcels', billing: 'Charges and invoices', other: 'Anything else' } },
    urgency: { type: 'score', instructions: 'How urgent is it?', criteria: { '0': 'not urgent', '1': 'soon', '2': 'now' } },
  };
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const words = Array.from({ length: 10 + Math.floor(next() * 120) }, () => WORDS[Math.floor(next() * WORDS.length)]);
    lines.push(JSON.stringify({ custom_id: `row-${i}`, state: `Ticket ${i}: ${words.join(' ')}`, questions }));
  }
  return `${lines.join('\n')}\n`;
}

export interface BenchResult {
  records: number;
  chunks: number;
  runnerSeconds: number;
  engineSeconds: number;
  /** Tokenizing the same groups alone (runtime.prepare, in sequence): work the runner does and the engine side does not. */
  tokenizeSeconds: number;
  runnerDecisionsPerSecond: number;
  engineDecisionsPerSecond: number;
  ratio: number;
}

const ZERO: JobProgress = { inputOffset: 0, inputLine: 0, resultsBytes: 0, failedBytes: 0, completed: 0, failed: 0, usage: zeroUsage() };

/** One runner measurement; returns the seconds and the request groups it scored. */
async function timeRunner(modelsDir: string, model: string, inputPath: string, workDir: string, round: number) {
  const svc = await DecisionService.open({ modelsDir, preload: [model] });
  const groups: NormalizedDecideRequest[][] = [];
  const store = new SqliteJobTable(path.join(workDir, `bench-${round}.sqlite`));
  const id = `bench_${round}`;
  store.insert({ id, owner: 'bench', model, requestedModel: model, total: 0, createdAt: Date.now(), questions: null, inputPath, inputBytes: 0, resultsPath: '' });
  store.markStarted(id, Date.now());
  try {
    const resolved = svc.resolveModel(model);
    // Warm-up on other states (nothing of the measured input is cached).
    await svc.decide({ model, state: 'warm-up state', questions: { q: { type: 'noul', instructions: 'Warm?' } } });
    const scorer = {
      decideRecords: (m: string, requests: NormalizedDecideRequest[], priority?: 'live' | 'batch') => {
        groups.push(requests);
        return svc.decideRecords(m, requests, priority);
      },
    };
    const t0 = process.hrtime.bigint();
    const result = await runBatch({
      scorer,
      model: resolved,
      inputPath,
      resultsPath: path.join(workDir, `results-${round}.jsonl`),
      start: ZERO,
      commit: (p) => void store.commitProgress(id, p),
    });
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    if (!result.finished || result.progress.failed > 0) throw new Error(`runner: unexpected result ${JSON.stringify(result.progress)}`);
    return { seconds, groups, rows: result.progress.completed };
  } finally {
    store.close();
    await svc.close();
  }
}

/** The same groups straight into the engine, one scoreBatch per group, tokenized beforehand. */
async function timeEngine(modelsDir: string, model: string, groups: NormalizedDecideRequest[][]) {
  const svc = await DecisionService.open({ modelsDir, preload: [model] });
  try {
    const runtime = await svc.runtime(model);
    await svc.decide({ model, state: 'warm-up state', questions: { q: { type: 'noul', instructions: 'Warm?' } } });
    const prepared: PreparedRequest[][] = [];
    const tp = process.hrtime.bigint();
    for (const g of groups) prepared.push(await Promise.all(g.map((r) => runtime.prepare(r))));
    const prepareSeconds = Number(process.hrtime.bigint() - tp) / 1e9;
    const t0 = process.hrtime.bigint();
    for (const p of prepared) await runtime.engine.scoreBatch(p.map((x) => x.group));
    return { seconds: Number(process.hrtime.bigint() - t0) / 1e9, prepareSeconds };
  } finally {
    await svc.close();
  }
}

export async function benchBatchRunner(options: { modelsDir: string; model: string; records: number; rounds: number }): Promise<BenchResult> {
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'decide-bench-batch-'));
  try {
    const inputPath = path.join(workDir, 'input.jsonl');
    await writeFile(inputPath, makeRecords(options.records));
    let runnerBest = Infinity;
    let engineBest = Infinity;
    let prepareBest = Infinity;
    let chunks = 0;
    for (let round = 0; round < options.rounds; round++) {
      const runner = await timeRunner(options.modelsDir, options.model, inputPath, workDir, round);
      chunks = runner.groups.length;
      runnerBest = Math.min(runnerBest, runner.seconds);
      const engine = await timeEngine(options.modelsDir, options.model, runner.groups);
      engineBest = Math.min(engineBest, engine.seconds);
      prepareBest = Math.min(prepareBest, engine.prepareSeconds);
    }
    const runnerRate = options.records / runnerBest;
    const engineRate = options.records / engineBest;
    return {
      records: options.records,
      chunks,
      runnerSeconds: runnerBest,
      engineSeconds: engineBest,
      tokenizeSeconds: prepareBest,
      runnerDecisionsPerSecond: runnerRate,
      engineDecisionsPerSecond: engineRate,
      ratio: runnerRate / engineRate,
    };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

export function formatBenchResult(r: BenchResult): string {
  return [
    `batch runner vs engine: ${r.records} records (3 questions each) in ${r.chunks} chunks, best of rounds`,
    `  runner  ${r.runnerSeconds.toFixed(3)} s  ${r.runnerDecisionsPerSecond.toFixed(1)} decisions/s`,
    `  engine  ${r.engineSeconds.toFixed(3)} s  ${r.engineDecisionsPerSecond.toFixed(1)} decisions/s`,
    `  (tokenizing the same records alone: ${r.tokenizeSeconds.toFixed(3)} s, included in the runner's time, not in the engine's)`,
    `  runner / engine = ${(100 * r.ratio).toFixed(1)}%`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'models-dir': { type: 'string', default: process.env.DECIDE_MODELS_DIR ?? 'models' },
      model: { type: 'string', default: 'svc-alpha' },
      records: { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '3' },
      json: { type: 'string' },
    },
  });
  const result = await benchBatchRunner({
    modelsDir: values['models-dir']!,
    model: values.model!,
    records: Number(values.records),
    rounds: Number(values.rounds),
  });
  process.stdout.write(`${formatBenchResult(result)}\n`);
  if (values.json) await writeFile(values.json, `${JSON.stringify(result, null, 2)}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]).endsWith(path.join('bench', 'batch-runner.js'))) {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exitCode = 1;
  });
}
