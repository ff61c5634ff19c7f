/**
 * `decide serve`, `decide batch` and `decide worker` under an address-space limit (`ulimit -v`):
 * below what they need (src/cli/address-space.ts) they refuse at the start, saying so, before a key
 * or a folder is made or a database is reached; above it the server serves a large body, read in its body thread. That thread, and the
 * batch lines' one, run from the start: V8 ends the whole process when a thread cannot reserve its
 * memory, so a limit that cannot hold them must end the start, not the first large body. Real
 * processes, Linux (the limit is read from /proc/self/limits).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { ADDRESS_SPACE_NEEDED_MIB } from '../../src/cli/address-space.js';
import { decideBin } from '../helpers/bin.js';
import { decideBody, expectValidAnswers, MIXED_QUESTIONS, tempModels, TEST_KEY, type TempDirs } from '../api/fixtures.js';
import { postDecide, startServe, type ServeProcess } from './serve-process.js';

const linux = process.platform === 'linux';
let dirs: TempDirs;
let server: ServeProcess | undefined;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
});
afterEach(async () => {
  await server?.stop('SIGKILL');
  server = undefined;
});
afterAll(() => dirs?.cleanup());

/** Runs `decide <args>` under `ulimit -v kib`; resolves with its exit code and output. */
async function runLimited(kib: number, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('bash', ['-c', `ulimit -v ${kib} && exec "$0" "$@"`, process.execPath, await decideBin(), ...args], {
    env: { ...process.env, DECIDE_API_KEYS: undefined, DECIDE_API_KEYS_FILE: undefined, PORT: undefined, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  // The refusal comes within a second; a command that runs on instead is stopped, its code null.
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** A valid /v1/decide body of about `bytes` bytes (JSON whitespace makes up the size): read in the body thread. */
function largeBody(bytes: number): string {
  const body = JSON.stringify(decideBody('The parcel arrived broken and late.'));
  return `${body.slice(0, -1)}${' '.repeat(bytes - body.length)}}`;
}

/** /proc/<pid>/status's thread count. */
function threads(pid: number): number {
  return Number(/^Threads:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

async function whenReady(url: string): Promise<void> {
  for (let i = 0; i < 600 && (await fetch(`${url}/readyz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
}

describe.skipIf(!linux)('under ulimit -v', () => {
  // 2400000 KiB: the limit under which a server once started, passed its probes and died at its
  // first large body.
  const below = 2_400_000;

  it('decide serve below what it needs refuses at the start, naming both figures; no key, no data dir', async () => {
    expect(below).toBeLessThan(ADDRESS_SPACE_NEEDED_MIB.serve * 1024);
    const dataDir = path.join(dirs.root, 'refused-data');
    const r = await runLimited(below, ['serve', '--port', '0', '--models-dir', dirs.modelsDir, '--data-dir', dataDir, '--threads', '1']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(
      `decide serve: not enough address space: it needs at least ${ADDRESS_SPACE_NEEDED_MIB.serve} MiB (ulimit -v); this process has ${Math.floor(below / 1024)} MiB (ulimit -v ${below})`,
    );
    expect(r.stdout).toBe('');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('decide serve on the Postgres store asks for the worker\'s figure: refused under a limit that serves on SQLite', async () => {
    // Enough for serve on SQLite, not for the Postgres client's reservations (it died at 5000000
    // with "WebAssembly.instantiate(): Out of memory" before the check asked for this).
    const limit = 5_000_000;
    expect(limit).toBeGreaterThan(ADDRESS_SPACE_NEEDED_MIB.serve * 1024);
    expect(limit).toBeLessThan(ADDRESS_SPACE_NEEDED_MIB.servePostgres * 1024);
    const dataDir = path.join(dirs.root, 'refused-pg-data');
    const r = await runLimited(limit, ['serve', '--port', '0', '--models-dir', dirs.modelsDir, '--data-dir', dataDir, '--threads', '1'], {
      DECIDE_DATABASE_URL: 'postgres://decide@127.0.0.1:1/decide',
    });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(
      `decide serve: not enough address space: it needs at least ${ADDRESS_SPACE_NEEDED_MIB.servePostgres} MiB (ulimit -v); this process has ${Math.floor(limit / 1024)} MiB`,
    );
    expect(r.stderr).toContain('(the Postgres batch store, DECIDE_DATABASE_URL, needs it)');
    expect(r.stdout).toBe('');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('decide batch below what it needs refuses at the start; no --out written', async () => {
    expect(below).toBeLessThan(ADDRESS_SPACE_NEEDED_MIB.batch * 1024);
    const input = path.join(dirs.root, 'in.jsonl');
    const out = path.join(dirs.root, 'out.jsonl');
    writeFileSync(input, `${JSON.stringify({ custom_id: 'a', ...decideBody('ticket 1') })}\n`);
    const r = await runLimited(below, ['batch', input, '--model', 'svc-alpha', '--models-dir', dirs.modelsDir, '--out', out, '--threads', '1']);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`decide batch: not enough address space: it needs at least ${ADDRESS_SPACE_NEEDED_MIB.batch} MiB (ulimit -v)`);
    expect(existsSync(out)).toBe(false);
  });

  it('decide worker below what it needs refuses at the start, before it connects to the database or loads a model', async () => {
    expect(below).toBeLessThan(ADDRESS_SPACE_NEEDED_MIB.worker * 1024);
    // A port nothing listens on: a worker that went on would fail to connect (exit 1, another message).
    const r = await runLimited(below, ['worker', '--models-dir', dirs.modelsDir, '--threads', '1'], { DECIDE_DATABASE_URL: 'postgres://decide@127.0.0.1:1/decide' });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toBe(
      `decide worker: not enough address space: it needs at least ${ADDRESS_SPACE_NEEDED_MIB.worker} MiB (ulimit -v); this process has ${Math.floor(below / 1024)} MiB (ulimit -v ${below}): ` +
        `raise the limit to ulimit -v ${ADDRESS_SPACE_NEEDED_MIB.worker * 1024} or more, or unlimited\n`,
    );
    expect(r.stdout).toBe('');
  });

  it('decide serve comfortably above it serves a 500 KB body; its first large body starts no thread (the reader threads run from the start)', async () => {
    server = await startServe({
      args: ['--models-dir', dirs.modelsDir, '--data-dir', path.join(dirs.root, 'data'), '--threads', '1', '--log-level', 'warn'],
      env: { DECIDE_API_KEYS: TEST_KEY, PORT: undefined },
      addressSpaceKiB: (ADDRESS_SPACE_NEEDED_MIB.serve + 1024) * 1024,
    });
    await whenReady(server.url);
    const before = threads(server.child.pid!);
    const r = await postDecide(server.url, TEST_KEY, largeBody(500_000));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expectValidAnswers(r.body.answers, MIXED_QUESTIONS);
    expect(threads(server.child.pid!)).toBe(before);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/^decide_request_bodies_off_thread_total 1$/m);
    expect(await server.stop('SIGTERM')).toBe(0);
  });
});
