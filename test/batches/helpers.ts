/** Shared pieces of the batch tests: a models dir holding the tiny model, input files, a real server process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { DecisionService } from '../../src/service/decision-service.js';
import { decideBin, ROOT } from '../helpers/bin.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

export { ROOT };
/** bin/decide.js; await decideBin() (test/helpers/bin.ts) once before spawning it. */
export const DECIDE_BIN = path.join(ROOT, 'bin', 'decide.js');
export const MODEL_ID = 'svc-alpha-2026-10';

/** A temp dir with `models/svc-alpha-2026-10` -> the tiny test model. */
export async function tempWorkspace(prefix: string): Promise<{ dir: string; modelsDir: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `${prefix}-`));
  const modelsDir = path.join(dir, 'models');
  await mkdir(modelsDir);
  await symlink(await tinyModelDir(), path.join(modelsDir, MODEL_ID), 'dir');
  return { dir, modelsDir };
}

export const QUESTIONS = {
  refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
  topic: { type: 'choice', instructions: 'What is it about?', criteria: { shipping: 'Delivery', billing: 'Charges', other: 'Anything else' } },
};

/** Deterministic good records (states of varied length). */
export function goodLines(n: number, seed = 1, prefix = 'row'): string[] {
  const words = ['parcel', 'broken', 'charged', 'twice', 'late', 'refund', 'hello', 'order', 'invoice'];
  let s = seed >>> 0;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  return Array.from({ length: n }, (_, i) => {
    const state = Array.from({ length: 3 + Math.floor(next() * 40) }, () => words[Math.floor(next() * words.length)]).join(' ');
    return JSON.stringify({ custom_id: `${prefix}-${i}`, state: `#${i} ${state}`, questions: QUESTIONS });
  });
}

export interface ExpectedRow {
  custom_id: string | null;
  /** Error code of a failed row; undefined for an answered row. */
  code?: string;
}

/**
 * Good rows mixed with blank lines, a non-JSON line, a duplicate custom_id, an invalid question,
 * an over-long state (> the tiny model's 4096-token context), a missing custom_id and an envelope.
 */
export function mixedFile(): { text: string; expected: ExpectedRow[] } {
  const good = goodLines(30, 5, 'mix');
  const lines: string[] = [];
  const expected: ExpectedRow[] = [];
  const add = (line: string, row: ExpectedRow | null) => {
    lines.push(line);
    if (row) expected.push(row);
  };
  good.slice(0, 10).forEach((l, i) => add(l, { custom_id: `mix-${i}` }));
  add('', null);
  add('   ', null);
  add('{"custom_id": "broken", "state": ', { custom_id: null, code: 'invalid_question' });
  add(JSON.stringify({ custom_id: 'mix-3', state: 'again', questions: QUESTIONS }), { custom_id: 'mix-3', code: 'invalid_question' });
  add(JSON.stringify({ custom_id: 'badq', state: 's', questions: { q: { type: 'choice', instructions: 'Which?', criteria: { only: 'one' } } } }), {
    custom_id: 'badq',
    code: 'invalid_question',
  });
  add(JSON.stringify({ custom_id: 'long', state: 'word '.repeat(6000), questions: QUESTIONS }), { custom_id: 'long', code: 'state_too_long' });
  add(JSON.stringify({ state: 'no id', questions: QUESTIONS }), { custom_id: null, code: 'invalid_question' });
  add(JSON.stringify({ custom_id: 'env', method: 'POST', url: '/v1/decide', body: { model: 'svc-alpha', state: 'envelope', questions: QUESTIONS } }), { custom_id: 'env' });
  good.slice(10, 20).forEach((l, i) => add(l, { custom_id: `mix-${10 + i}` }));
  add('', null);
  good.slice(20).forEach((l, i) => add(l, { custom_id: `mix-${20 + i}` }));
  return { text: `${lines.join('\n')}\n`, expected };
}

export interface ResultRow {
  custom_id: string | null;
  id?: string;
  answers?: Record<string, { type: string; probs: Record<string, number>; top: string; confidence: number }>;
  usage?: { input_tokens: number; cached_tokens?: number };
  error?: { code: string; message: string };
}

export function parseRows(text: string): ResultRow[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as ResultRow);
}

/** Largest |difference| between two rows' probabilities; Infinity when their shapes differ. */
export function maxProbDiff(a: ResultRow, b: ResultRow): number {
  if (a.custom_id !== b.custom_id || Boolean(a.error) !== Boolean(b.error)) return Infinity;
  if (a.error) return a.error.code === b.error!.code ? 0 : Infinity;
  let worst = 0;
  for (const [q, ans] of Object.entries(a.answers!)) {
    const other = b.answers![q];
    if (!other || other.top !== ans.top) return Infinity;
    for (const [k, p] of Object.entries(ans.probs)) worst = Math.max(worst, Math.abs(p - (other.probs[k] ?? Infinity)));
  }
  return worst;
}

export interface ServerProcess {
  url: string;
  proc: ChildProcess;
  output: () => string;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<number | null>;
  kill(): Promise<void>;
}

/** Spawns `decide serve --port 0` and waits for its "listening on" line. */
export async function startServer(opts: { dataDir: string; modelsDir: string; env?: Record<string, string>; args?: string[] }): Promise<ServerProcess> {
  const args = ['serve', '--port', '0', '--data-dir', opts.dataDir, '--models-dir', opts.modelsDir, '--log-level', 'warn', ...(opts.args ?? [])];
  const started = await startDecide(args, opts.env, /listening on (http:\/\/\S+)/);
  return { ...started, url: started.match[1]! };
}

/** Spawns `decide worker` (Postgres batch store) and waits for its "worker ready" line. */
export async function startWorker(opts: { modelsDir: string; env?: Record<string, string>; args?: string[] }): Promise<Omit<ServerProcess, 'url'>> {
  return startDecide(['worker', '--models-dir', opts.modelsDir, ...(opts.args ?? [])], opts.env, /worker ready/);
}

/** Spawns bin/decide.js and waits until its stdout matches `ready`. */
async function startDecide(args: string[], env: Record<string, string> | undefined, ready: RegExp): Promise<Omit<ServerProcess, 'url'> & { match: RegExpExecArray }> {
  const proc = spawn(process.execPath, [await decideBin(), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stdout = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`decide ${args[0]} did not start:\n${out}`)), 60_000);
    proc.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      const m = ready.exec(stdout);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`decide ${args[0]} exited with ${code}:\n${out}`));
    });
  });
  return {
    match,
    proc,
    output: () => out,
    async stop() {
      proc.kill('SIGTERM');
      return exited;
    },
    async kill() {
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** A tiny client for the batch endpoints over real HTTP. */
export function client(url: string, key: string) {
  const auth = { authorization: `Bearer ${key}` };
  return {
    async create(fields: { model?: string; file?: string | Buffer; questions?: string; questionsAsFile?: boolean; filename?: string }) {
      const form = new FormData();
      if (fields.model !== undefined) form.append('model', fields.model);
      if (fields.questions !== undefined) {
        if (fields.questionsAsFile) form.append('questions', new Blob([fields.questions]), 'questions.json');
        else form.append('questions', fields.questions);
      }
      if (fields.file !== undefined) form.append('file', new Blob([fields.file]), fields.filename ?? 'records.jsonl');
      const res = await fetch(`${url}/v1/batches`, { method: 'POST', body: form, headers: auth });
      return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> & { id: string; status: string; progress: { total: number; completed: number; failed: number } } };
    },
    async get(id: string) {
      const res = await fetch(`${url}/v1/batches/${id}`, { headers: auth });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> & { status: string; progress: { total: number; completed: number; failed: number }; code?: string; message?: string } };
    },
    async results(id: string) {
      const res = await fetch(`${url}/v1/batches/${id}/results`, { headers: auth });
      return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
    },
    async cancel(id: string) {
      const res = await fetch(`${url}/v1/batches/${id}/cancel`, { method: 'POST', headers: auth });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> & { status: string; progress: { total: number; completed: number; failed: number } } };
    },
    async list(query = '') {
      const res = await fetch(`${url}/v1/batches${query}`, { headers: auth });
      return { status: res.status, body: (await res.json()) as { data: Array<{ id: string }>; has_more: boolean; first_id: string | null; last_id: string | null; code?: string } };
    },
    /** Polls until the batch reaches one of `statuses`. */
    async waitFor(id: string, statuses: string[], timeoutMs = 60_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const { body } = await this.get(id);
        if (statuses.includes(body.status)) return body;
        if (Date.now() > until) throw new Error(`batch ${id} still ${body.status} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

/** What the Postgres batch tests share: a temp workspace, the tiny model's service, a Postgres server. */
export interface PgWorkspace {
  workDir: string;
  modelsDir: string;
  svc: DecisionService;
  postgres: TestPostgres;
}

/**
 * Opens a PgWorkspace: the model loads (one ORT thread: a tiny model's passes are too small for a
 * pool to pay off) while Postgres starts. Both settle before a failure is thrown, and what did open
 * is closed again, so a failed beforeAll leaves nothing running.
 */
export async function openPgWorkspace(prefix: string): Promise<PgWorkspace> {
  const { dir: workDir, modelsDir } = await tempWorkspace(prefix);
  const [svc, postgres] = await Promise.allSettled([DecisionService.open({ modelsDir, preload: [MODEL_ID], threads: 1 }), startPostgres()]);
  if (svc.status === 'fulfilled' && postgres.status === 'fulfilled') return { workDir, modelsDir, svc: svc.value, postgres: postgres.value };
  await closePgWorkspace({ workDir, svc: svc.status === 'fulfilled' ? svc.value : undefined, postgres: postgres.status === 'fulfilled' ? postgres.value : undefined });
  throw svc.status === 'rejected' ? svc.reason : (postgres as PromiseRejectedResult).reason;
}

export async function closePgWorkspace(ws: Partial<PgWorkspace> | undefined): Promise<void> {
  await ws?.svc?.close();
  await ws?.postgres?.stop();
  if (ws?.workDir) await rm(ws.workDir, { recursive: true, force: true });
}

/** A results stream (or any text stream) read whole. */
export async function streamText(stream: AsyncIterable<unknown>): Promise<string> {
  let out = '';
  for await (const piece of stream) out += String(piece);
  return out;
}
