/**
 * The lock of a SQLite data dir (`batches.lock`) and of a `decide batch` output (`<out>.lock`), on
 * real files and real processes: a kernel lock, held exactly while its holder lives. A second
 * holder in this process or another is refused, naming the holder's pid; a holder killed with
 * SIGKILL holds nothing; and where `unshare` can make PID namespaces (containers: every one's
 * process is pid 1), a live holder in one still refuses a process in another, and a dead one's
 * lock is taken over.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { takePidLock } from '../../src/batches/pid-lock.js';
import { decideBin, ROOT } from '../helpers/bin.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'pid-lock-'));
const children: ChildProcess[] = [];
beforeAll(async () => {
  await decideBin(); // dist/ current: the child processes lock through it
});
afterAll(async () => {
  for (const child of children) await killed(child).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

const inUse = (pid: number) => `in use by ${pid}${pid === process.pid ? ' (this one)' : ''}`;
const LOCK_MODULE = path.join(ROOT, 'dist', 'src', 'batches', 'pid-lock.js');

/** A script that takes `file` and prints `held <pid>` (then holds it until killed), or prints the refusal. */
function lockScript(file: string): string {
  return (
    `const { takePidLock } = await import(${JSON.stringify(LOCK_MODULE)});` +
    `try { takePidLock(${JSON.stringify(file)}, (pid) => 'in use by ' + pid); console.log('held ' + process.pid); setInterval(() => {}, 1000); }` +
    `catch (err) { console.log(err.message); process.exit(0); }`
  );
}

/** Starts `command` and resolves with it and its first line of output. */
async function firstLine(command: string, args: string[]): Promise<{ child: ChildProcess; line: string }> {
  // Its own process group, killed whole: unshare's pid 1 goes with it (as a container's does).
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d));
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before a line: ${out}${err}`)));
  });
  return { child, line };
}

/** SIGKILL to `child`'s process group; resolves once `child` has exited. */
async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  process.kill(-child.pid!, 'SIGKILL');
  await exited;
}

describe('takePidLock', () => {
  it('a second holder in this process is refused, naming this one; a release removes the file and frees it', () => {
    const file = path.join(dir, 'in-process.lock');
    const release = takePidLock(file, inUse);
    expect(() => takePidLock(file, inUse)).toThrow(`in use by ${process.pid} (this one)`);
    // The refusal opened nothing of the file: the lock is still held, against other processes too.
    const other = spawnSync(process.execPath, ['--input-type=module', '-e', lockScript(file)], { encoding: 'utf8' });
    expect(other.stdout.trim()).toBe(`in use by ${process.pid}`);
    release();
    expect(existsSync(file)).toBe(false);
    takePidLock(file, inUse)();
  });

  it('another live process holds it (refused, naming it); once it is killed, the lock is free', async () => {
    const file = path.join(dir, 'other-process.lock');
    const { child, line } = await firstLine(process.execPath, ['--input-type=module', '-e', lockScript(file)]);
    expect(line).toBe(`held ${child.pid}`);
    expect(() => takePidLock(file, inUse)).toThrow(`in use by ${child.pid}`);
    await killed(child);
    expect(existsSync(file)).toBe(true);
    takePidLock(file, inUse)();
  });

  it("an older version's text lock: its live pid holds it, a dead one's is taken over", async () => {
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore', detached: true });
    children.push(sleeper);
    await new Promise((resolve) => sleeper.once('spawn', resolve));
    const live = path.join(dir, 'text-live.lock');
    writeFileSync(live, `${sleeper.pid} 123\n`);
    expect(() => takePidLock(live, inUse)).toThrow(`in use by ${sleeper.pid}`);
    await killed(sleeper);
    takePidLock(live, inUse)();
  });
});

const unshare = ['--pid', '--fork', '--mount-proc'];
const namespaces = spawnSync('unshare', [...unshare, 'true']).status === 0;

describe.skipIf(!namespaces)('takePidLock across PID namespaces (each holder is pid 1 in its own)', () => {
  it("a live holder in one refuses a process in another; a killed one's lock is taken over by the next", async () => {
    const file = path.join(dir, 'namespaces.lock');
    const first = await firstLine('unshare', [...unshare, process.execPath, '--input-type=module', '-e', lockScript(file)]);
    expect(first.line).toBe('held 1');
    const second = spawnSync('unshare', [...unshare, process.execPath, '--input-type=module', '-e', lockScript(file)], { encoding: 'utf8' });
    expect(second.stdout.trim()).toBe('in use by 1');
    await killed(first.child);
    const third = await firstLine('unshare', [...unshare, process.execPath, '--input-type=module', '-e', lockScript(file)]);
    expect(third.line).toBe('held 1');
    await killed(third.child);
  });
});
