/**
 * Customer data on disk is for the service's own user only: batch inputs and results, the job
 * database and staged uploads are files of mode 0600 in directories of mode 0700, whatever the
 * umask. A directory this package made (`batches/`, its staging dir) is tightened to 0700 when an
 * older version left it wider; the data dir itself is created 0700 and tightened only when it is
 * recognisably ours (it holds `batches.sqlite` or `api-key`), since `--data-dir` may name a
 * directory someone else shares; otherwise a wide data dir is reported (dataDirWarning).
 */
import { chmodSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';

import { makeDirectories } from '../models/make-directories.js';
import { statIfExists } from '../support/stat-if-exists.js';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
/** The embedded batch store's database in the data dir (sqlite/). */
export const SQLITE_DATABASE_FILE = 'batches.sqlite';
/** The API key `decide serve` generates in the data dir when none is configured (server/api-keys.ts). */
export const GENERATED_KEY_FILE = 'api-key';

/**
 * Files whose presence marks a data dir as this package's own, when a run before this process
 * wrote them: the key `decide serve` has just written into a directory it found does not make that
 * directory ours.
 */
const DATA_DIR_MARKERS = [SQLITE_DATABASE_FILE, GENERATED_KEY_FILE];

/** Creates `dir` (and missing parents) 0700, or tightens it to 0700 when it exists. */
export function privateDir(dir: string): void {
  makeDirectories(dir, PRIVATE_DIR_MODE);
  tighten(dir, PRIVATE_DIR_MODE);
}

/**
 * Creates the data dir 0700 when it is missing; tightens it when it holds this package's files.
 * Returns a warning when it stays readable or searchable by group or others.
 */
export function prepareDataDir(dir: string): string | undefined {
  if (!existsSync(dir)) makeDirectories(dir, PRIVATE_DIR_MODE);
  else if (DATA_DIR_MARKERS.some((name) => writtenBeforeThisProcess(path.join(dir, name)))) tighten(dir, PRIVATE_DIR_MODE);
  return dataDirWarning(dir);
}

function writtenBeforeThisProcess(file: string): boolean {
  const info = statIfExists(file);
  return info !== undefined && info.mtimeMs < performance.timeOrigin;
}

/** A warning when the data dir lets group or others in (batch data and keys live there). */
export function dataDirWarning(dir: string): string | undefined {
  const mode = statSync(dir).mode & 0o777;
  if ((mode & 0o077) === 0) return undefined;
  return `the data dir ${dir} is mode ${mode.toString(8).padStart(4, '0')}: others on this machine can list or read batch data there; chmod 700 it`;
}

/** Sets `file`'s mode to 0600 when it exists (a file an older version wrote, or SQLite created). */
export function privateFile(file: string): void {
  if (existsSync(file)) tighten(file, PRIVATE_FILE_MODE);
}

function tighten(file: string, mode: number): void {
  if ((statSync(file).mode & 0o777) !== mode) chmodSync(file, mode);
}
