/**
 * `mkdir -p` one level at a time, for every folder a command creates at a path the user gave (an
 * output folder, --models-dir, --data-dir). Node's recursive mkdir retries forever when the kernel
 * answers ENOENT for a folder whose parent exists (anywhere under /proc, say), spinning a core; one
 * level at a time, every refusal (ENOENT, EACCES, ENOTDIR, EROFS) is an error naming the folder.
 */
import { mkdirSync, rmdirSync } from 'node:fs';
import path from 'node:path';

import { lstatIfExists, statIfExists } from '../support/stat-if-exists.js';

/** Thrown when a folder cannot be created; the message names the folder and the reason. */
export class DirectoryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DirectoryError';
  }
}

/** The folders from the nearest existing one down to `dir` that are missing, outermost first. */
function missingLevels(dir: string): string[] {
  const missing: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    let info;
    try {
      info = statIfExists(d);
    } catch (err) {
      // A loop of links (ELOOP), a level that cannot be looked into (EACCES): no folder can be made there.
      throw new DirectoryError(`cannot create ${dir}: ${d}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (info !== undefined) {
      if (!info.isDirectory()) throw new DirectoryError(`cannot create ${dir}: ${d} is not a folder`);
      return missing;
    }
    // Nothing there to follow, but something may be there itself: a link to nothing usable, which
    // no mkdir replaces.
    if (lstatIfExists(d) !== undefined) throw new DirectoryError(`cannot create ${dir}: ${d} is a link that leads to no folder`);
    missing.unshift(d);
    if (path.dirname(d) === d) return missing;
  }
}

/**
 * Creates `dir` and its missing parents (each with `mode`, as mkdir applies it), or throws
 * DirectoryError. A folder created meanwhile by someone else is fine.
 * @example
 * makeDirectories(reportDir);
 */
export function makeDirectories(dir: string, mode?: number): void {
  for (const d of missingLevels(dir)) {
    try {
      mkdirSync(d, mode === undefined ? undefined : { mode });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' && statIfExists(d)?.isDirectory() === true) continue;
      throw new DirectoryError(`cannot create ${d}: ${code ?? (err as Error).message}`);
    }
  }
}

/**
 * Why `dir` could not be created, or undefined when it exists as a folder or could be: for checks
 * before any work, which must not leave a folder behind. The outermost missing level is created and
 * removed again, since only the system says whether a place takes a folder (root passes every
 * permission check, and /proc refuses anyway).
 * @example
 * const problem = directoryProblem(outDir); // 'cannot create /proc/x: ENOENT'
 */
export function directoryProblem(dir: string): string | undefined {
  let missing;
  try {
    missing = missingLevels(dir);
  } catch (err) {
    return (err as Error).message;
  }
  const outermost = missing[0];
  if (outermost === undefined) return undefined;
  try {
    mkdirSync(outermost);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return undefined;
    return `cannot create ${outermost}: ${code ?? (err as Error).message}`;
  }
  rmdirSync(outermost);
  return undefined;
}
