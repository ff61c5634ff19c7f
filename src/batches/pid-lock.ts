/**
 * A lock file that names the pid of the process holding it: created exclusively, so one process
 * holds it at a time; a lock whose process is gone (killed, crashed) is taken over, so a run that
 * was killed can always be resumed. `decide batch` holds `<out>.lock` for the whole run.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';

import { processAlive } from '../models/output-dir.js';
import { PRIVATE_FILE_MODE } from './private-files.js';

/** The pid in a lock file, or undefined when there is none or it cannot be read as one. */
function pidLockOwner(file: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number(text.trim().split(/\s+/)[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * Takes `file` for this process, or throws an Error with `inUse(pid)` as its message when a live
 * process holds it. Returns the release, which removes the file if it is still ours.
 */
export function takePidLock(file: string, inUse: (pid: number) => string): () => void {
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx', PRIVATE_FILE_MODE);
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
    }
    const owner = pidLockOwner(file);
    if (owner !== undefined && processAlive(owner)) throw new Error(inUse(owner));
    // Left by a process that is gone (or half written by one killed while creating it): take it over.
    unlinkSync(file);
  }
  return () => {
    if (pidLockOwner(file) === process.pid) unlinkSync(file);
  };
}
