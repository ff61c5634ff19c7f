/**
 * One process owns a SQLite data dir: its job pump resumes and runs every unfinished job of the
 * dir, so a second process on the same dir would run the same jobs into the same result files
 * (rows twice, lines cut) and never see the other's cancels. The owner holds
 * `<dataDir>/batches.lock`, which names its pid; a lock whose process is gone (killed) is taken
 * over. Several processes share batch work through the Postgres store instead.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

import { processAlive } from '../../models/output-dir.js';
import { PRIVATE_FILE_MODE } from '../private-files.js';

export const LOCK_FILE = 'batches.lock';

/** The pid in a lock file, or undefined when there is none or it cannot be read as one. */
function lockOwner(file: string): number | undefined {
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
 * Takes the data dir's lock for this process, or throws naming the process that holds it.
 * Returns the release, which removes the lock file if it is still ours.
 */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, LOCK_FILE);
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
    const owner = lockOwner(file);
    if (owner !== undefined && processAlive(owner)) {
      throw new Error(
        `the batch data dir ${dataDir} is in use by process ${owner}${owner === process.pid ? ' (this one)' : ''}: ` +
          'one process owns a SQLite data dir (give each its own --data-dir, or share batch work through Postgres with DECIDE_DATABASE_URL)',
      );
    }
    // Left by a process that is gone: take it over.
    unlinkSync(file);
  }
  return () => {
    if (lockOwner(file) === process.pid) unlinkSync(file);
  };
}
