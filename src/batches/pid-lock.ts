/**
 * A lock file that names the process holding it (pid and start time, process-identity.ts):
 * created exclusively, so one process holds it at a time; a lock whose process is gone (killed,
 * crashed) is taken over, so a run that was killed can always be resumed, even where the new
 * process got the dead one's pid (pid 1 in a restarted container). `decide batch` holds
 * `<out>.lock` for the whole run; a SQLite data dir's owner `<dataDir>/batches.lock`.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

import { isRunning, sameProcess, thisProcess, type ProcessIdentity } from './process-identity.js';
import { PRIVATE_FILE_MODE } from './private-files.js';

/** The locks this process holds: one naming this process that is not among them is a dead process's. */
const held = new Set<string>();

/** The process a lock file names ("<pid> <start time>"; older files: the pid alone), or undefined. */
function pidLockOwner(file: string): ProcessIdentity | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const [pidText, start] = text.trim().split(/\s+/);
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return start !== undefined && /^\d+$/.test(start) ? { pid, start } : { pid };
}

/**
 * Takes `file` for this process, or throws an Error with `inUse(pid)` as its message when a live
 * process holds it (this one included: a second holder in one process is refused too). Returns
 * the release, which removes the file if it is still ours.
 */
export function takePidLock(file: string, inUse: (pid: number) => string): () => void {
  const key = path.resolve(file);
  const me = thisProcess();
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx', PRIVATE_FILE_MODE);
      try {
        writeSync(fd, `${me.pid}${me.start === undefined ? '' : ` ${me.start}`}\n`);
      } finally {
        closeSync(fd);
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
    }
    const owner = pidLockOwner(file);
    // This process's pid in a lock it did not take: the process before it with that pid wrote it.
    const ours = owner !== undefined && sameProcess(owner, me);
    if (owner !== undefined && isRunning(owner) && (!ours || held.has(key))) throw new Error(inUse(owner.pid));
    // Left by a process that is gone (or half written by one killed while creating it): take it over.
    unlinkSync(file);
  }
  held.add(key);
  return () => {
    const owner = pidLockOwner(file);
    if (owner !== undefined && sameProcess(owner, me)) unlinkSync(file);
    held.delete(key);
  };
}
