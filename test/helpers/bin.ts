/**
 * The `decide` bin for tests that spawn it. bin/decide.js runs dist/, so dist/ must match src/:
 * decideBin() compiles (tsc) only when a source file is newer than its output or has none, and
 * only in the test files that spawn the bin. Every other test runs the TypeScript directly through
 * vitest. After `npm ci` (which builds dist/) nothing is compiled.
 * Concurrent test workers take turns through a lock file, so one tsc runs at a time.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'bin', 'decide.js');
const SOURCE_DIRS = ['src', 'bench'];
const LOCK = path.join(ROOT, 'test', '.tmp', 'tsc.lock');
/** A lock older than this was left by a killed run. */
const STALE_LOCK_MS = 10 * 60_000;

/** Source files (relative to ROOT) whose dist/ output is missing or older than they are. */
export function staleSources(): string[] {
  const stale: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const out = path.join(ROOT, 'dist', child.replace(/\.ts$/, '.js'));
        const outTime = statSync(out, { throwIfNoEntry: false })?.mtimeMs ?? -1;
        if (outTime < statSync(path.join(ROOT, child)).mtimeMs) stale.push(child);
      }
    }
  };
  for (const dir of SOURCE_DIRS) walk(dir);
  const config = statSync(path.join(ROOT, 'tsconfig.json')).mtimeMs;
  const anyOut = statSync(path.join(ROOT, 'dist', 'src', 'index.js'), { throwIfNoEntry: false })?.mtimeMs ?? -1;
  if (anyOut < config) stale.push('tsconfig.json');
  return stale;
}

/** Runs `fn` while holding the tests' build lock (one build at a time across vitest workers). */
export async function withLock<T>(fn: () => Promise<T>): Promise<T> {
  mkdirSync(path.dirname(LOCK), { recursive: true });
  for (;;) {
    try {
      writeFileSync(LOCK, String(process.pid), { flag: 'wx' });
      break;
    } catch {
      const age = Date.now() - (statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) rmSync(LOCK, { force: true });
      else await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(LOCK, { force: true });
  }
}

let ready: Promise<string> | undefined;

/** The path of bin/decide.js, with dist/ compiled from the current sources. */
export function decideBin(): Promise<string> {
  ready ??= (async () => {
    if (staleSources().length === 0) return BIN;
    await withLock(async () => {
      if (staleSources().length === 0) return;
      const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
      await promisify(execFile)(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.json')], { cwd: ROOT });
    });
    return BIN;
  })();
  return ready;
}

/** What one run of the `decide` CLI printed, and its exit code (non-zero exits do not throw). */
export interface DecideRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `decide ...args` to its end in `cwd` (the repository root unless given). */
export async function runDecide(args: string[], cwd = ROOT, env: Record<string, string | undefined> = {}): Promise<DecideRun> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [await decideBin(), ...args], { cwd, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
