/**
 * One process owns a SQLite data dir: its job pump resumes and runs every unfinished job of the
 * dir, so a second process on the same dir would run the same jobs into the same result files
 * (rows twice, lines cut) and never see the other's cancels. The owner holds
 * `<dataDir>/batches.lock` (a pid lock: a killed owner's is taken over). Several processes share
 * batch work through the Postgres store instead.
 */
import path from 'node:path';

import { takePidLock } from '../pid-lock.js';

const LOCK_FILE = 'batches.lock';

/** Takes the data dir's lock for this process, or throws naming the process that holds it; returns the release. */
export function lockDataDir(dataDir: string): () => void {
  return takePidLock(
    path.join(dataDir, LOCK_FILE),
    (owner) =>
      `the batch data dir ${dataDir} is in use by process ${owner}${owner === process.pid ? ' (this one)' : ''}: ` +
      'one process owns a SQLite data dir (give each its own --data-dir, or share batch work through Postgres with DECIDE_DATABASE_URL)',
  );
}
