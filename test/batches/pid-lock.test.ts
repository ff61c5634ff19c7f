/**
 * The pid lock (`<dataDir>/batches.lock`, `decide batch`'s `<out>.lock`) on real files: a lock is
 * held only while the very process that wrote it runs. A later process that got the same pid (a
 * restarted container's server is pid 1 every time; a busy host reuses pids) takes it over.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { takePidLock } from '../../src/batches/pid-lock.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'pid-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const inUse = (pid: number) => `in use by ${pid}${pid === process.pid ? ' (this one)' : ''}`;

/** Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot. */
function startTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

describe.skipIf(process.platform !== 'linux')('takePidLock', () => {
  it("writes this process's pid and start time; a second holder in this process is refused; release removes it", () => {
    const file = path.join(dir, 'held.lock');
    const release = takePidLock(file, inUse);
    expect(readFileSync(file, 'utf8')).toBe(`${process.pid} ${startTime(process.pid)}\n`);
    expect(() => takePidLock(file, inUse)).toThrow(`in use by ${process.pid} (this one)`);
    release();
    takePidLock(file, inUse)();
  });

  it("a lock naming this process's pid that it did not take (the process before it with that pid) is taken over", () => {
    for (const [name, text] of [
      ['same-pid-older-format.lock', `${process.pid}\n`],
      ['same-pid-other-start.lock', `${process.pid} 1\n`],
    ] as const) {
      const file = path.join(dir, name);
      writeFileSync(file, text);
      const release = takePidLock(file, inUse);
      expect(readFileSync(file, 'utf8'), name).toBe(`${process.pid} ${startTime(process.pid)}\n`);
      release();
    }
  });

  it('a live process holds its lock; another process that has its pid now (another start time) does not', async () => {
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    await new Promise((resolve) => other.once('spawn', resolve));
    try {
      const pid = other.pid!;
      const held = path.join(dir, 'other-live.lock');
      writeFileSync(held, `${pid} ${startTime(pid)}\n`);
      expect(() => takePidLock(held, inUse)).toThrow(`in use by ${pid}`);
      const reused = path.join(dir, 'other-reused.lock');
      writeFileSync(reused, `${pid} 1\n`);
      takePidLock(reused, inUse)();
    } finally {
      other.kill();
    }
  });
});
