/**
 * A lock the kernel holds for this process on a file: released however the process ends (kill -9,
 * a crash, its container stopped), and seen alike by every process on the machine, in any PID
 * namespace (containers sharing a volume) and whatever pids were reused. A pid written in a file
 * cannot tell these apart: a dead container's pid 1 and a live container's pid 1 read the same.
 * Node has no flock, so the lock is SQLite's own POSIX lock on a small database file (better-sqlite3
 * is a dependency already), kept in EXCLUSIVE locking mode while the connection is open; the
 * database's user_version holds the holder's pid, for messages only.
 *
 * POSIX locks belong to a process, and closing ANY descriptor of the file drops them: this process
 * never opens a file it holds except through its lock (a second attempt in this process is
 * answered from `held`, without opening the file).
 */
import { closeSync, openSync, readFileSync, realpathSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';

import { processAlive } from '../models/output-dir.js';
import { PRIVATE_FILE_MODE } from './private-files.js';
import { openSqlite, SqliteUnavailableError, type SqliteDatabase } from './sqlite-driver.js';
import { statIfExists } from '../support/stat-if-exists.js';

export type LockAttempt = { held: true; release(): void } | { held: false; holder: number | undefined };

/**
 * The files this process holds, by real path, with their connections: kept here so that a holder
 * that drops its release function still holds (a collected connection closes, and frees the lock).
 */
const held = new Map<string, SqliteDatabase>();

function keyOf(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

/** The pid recorded in a lock file this process does not hold (SQLite's user_version, bytes 60-63), or undefined. */
function recordedHolder(file: string): number | undefined {
  try {
    const pid = readFileSync(file).readUInt32BE(60);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** The pid in a lock file of the versions that wrote one as text ("<pid>[ <start>]"), or undefined. */
function textHolder(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'latin1').trim().split(/\s+/)[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function lockedConnection(file: string): SqliteDatabase | 'busy' | 'not a database' {
  const db = openSqlite(file, { busyTimeoutMs: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    // No journal file beside the lock (a one-row write needs no rollback on disk).
    db.pragma('journal_mode = MEMORY');
    db.exec('BEGIN EXCLUSIVE');
    db.pragma(`user_version = ${process.pid}`);
    db.exec('COMMIT');
    return db;
  } catch (err) {
    db.close();
    const code = (err as { code?: string }).code;
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') return 'busy';
    if (code === 'SQLITE_NOTADB') return 'not a database';
    throw err;
  }
}

/** Text locks this process holds (pidFileLock), by real path. */
const heldText = new Set<string>();

/** The pid of a text lock's holder while it runs (this process: only where it took that lock), else undefined. */
function liveTextHolder(file: string, key: string): number | undefined {
  const pid = textHolder(file);
  if (pid === undefined) return undefined;
  return (pid === process.pid ? heldText.has(key) : processAlive(pid)) ? pid : undefined;
}

/**
 * Without better-sqlite3's binary (an install that ran no scripts: `decide batch` still works
 * there) the lock is a file created exclusively that names this pid, as older versions made:
 * taken over when its pid is gone, and unable to tell two PID namespaces apart.
 */
function pidFileLock(file: string): LockAttempt {
  for (let attempt = 0; attempt < 2; attempt++) {
    const key = keyOf(file);
    try {
      const fd = openSync(file, 'wx', PRIVATE_FILE_MODE);
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      heldText.add(key);
      return {
        held: true,
        release: () => {
          heldText.delete(key);
          if (textHolder(file) === process.pid) unlinkSync(file);
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = liveTextHolder(file, key);
    if (pid !== undefined) return { held: false, holder: pid };
    unlinkSync(file);
  }
  throw new Error(`${file}: could not be locked (it was replaced at every attempt)`);
}

/** Takes the lock on `file` (created when missing) for this process, or says which process holds it. */
export function tryLockFile(file: string): LockAttempt {
  try {
    return kernelLock(file);
  } catch (err) {
    if (err instanceof SqliteUnavailableError) return pidFileLock(file);
    throw err;
  }
}

function kernelLock(file: string): LockAttempt {
  for (let attempt = 0; attempt < 5; attempt++) {
    const key = keyOf(file);
    if (held.has(key)) return { held: false, holder: process.pid };
    // Made here (private, as everything in a data dir), not by SQLite (its mode follows the umask).
    closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
    const before = statIfExists(file)?.ino;
    const db = lockedConnection(file);
    if (db === 'busy') return { held: false, holder: recordedHolder(file) };
    if (db === 'not a database') {
      // A text lock of an older version: held while its pid runs (it cannot say more).
      const pid = liveTextHolder(file, key);
      if (pid !== undefined) return { held: false, holder: pid };
      unlinkSync(file);
      continue;
    }
    // The lock is on the file this connection opened; the path must still name it: a holder
    // unlinks its file as it releases, so a file opened just before that is not the lock any more.
    if (before === undefined || statIfExists(file)?.ino !== before) {
      db.close();
      continue;
    }
    held.set(key, db);
    let released = false;
    return {
      held: true,
      release: () => {
        if (released) return;
        released = true;
        held.delete(key);
        // Unlinked before the lock goes: nobody opens this file once it is free.
        try {
          unlinkSync(file);
        } catch {
          // already removed (its folder was)
        }
        db.close();
      },
    };
  }
  throw new Error(`${file}: could not be locked (it was replaced at every attempt)`);
}
