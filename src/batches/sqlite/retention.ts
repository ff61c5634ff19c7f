/**
 * Retention: the results of a finished job (completed, failed, cancelled) are deleted `retentionMs`
 * after it finished and the job becomes `expired`. A sweep runs at start and every
 * `sweepIntervalMs`; at start, job directories that no live job owns (crash leftovers) go too.
 */
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';

import type { SqliteJobTable } from './sqlite-jobs.js';

export class RetentionSweeper {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly store: SqliteJobTable,
    /** Holds one directory per job (and `.staging`, left alone). */
    private readonly jobsDir: string,
    private readonly log: (line: string) => void,
  ) {}

  /** Sweeps every `intervalMs` until stop(); the timer does not keep the process alive. */
  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.sweep().catch((err) => this.log(`batch sweep failed: ${String(err)}`)), intervalMs);
    this.timer.unref();
  }

  /** Expires finished jobs whose retention has passed: status expired, files deleted. */
  async sweep(now = Date.now()): Promise<void> {
    if (this.stopped) return;
    if (this.sweeping) return this.sweeping;
    this.sweeping = (async () => {
      for (;;) {
        const due = this.store.dueForExpiry(now);
        if (due.length === 0) break;
        for (const job of due) {
          // Expire first: from here on the results are never served, so deleting cannot cut a reader short.
          this.store.markExpired(job.id);
          await rm(path.join(this.jobsDir, job.id), { recursive: true, force: true });
          this.log(`batch ${job.id}: expired, files deleted`);
        }
      }
    })().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  /** Removes job directories that no live job owns (crash leftovers, expired jobs). */
  async removeOrphans(): Promise<void> {
    await mkdir(this.jobsDir, { recursive: true });
    const jobs = this.store.allIds();
    for (const name of await readdir(this.jobsDir)) {
      if (name === '.staging') continue;
      const status = jobs.get(name);
      if (status === undefined || status === 'expired') {
        const full = path.join(this.jobsDir, name);
        if ((await stat(full)).isDirectory()) await rm(full, { recursive: true, force: true });
      }
    }
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.sweeping?.catch(() => undefined);
  }
}
