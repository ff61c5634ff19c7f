/**
 * `statSync` that reads "nothing there" as undefined on every Node this package supports. With
 * `{ throwIfNoEntry: false }`, Node 20 still throws ENOTDIR for a path that runs through a file
 * (`afile/models`) where Node 22 and later return undefined, so a check written against one would
 * answer differently (a raw system error instead of the refusal meant for it) on the other.
 */
import { lstatSync, statSync, type BigIntStats, type PathLike, type Stats } from 'node:fs';

/** A missing path, or one through a file: both are "not there". */
function notThere(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

export function statIfExists(file: PathLike): Stats | undefined;
export function statIfExists(file: PathLike, options: { bigint: true }): BigIntStats | undefined;
/** The path's stats (links followed), or undefined when nothing is there. */
export function statIfExists(file: PathLike, options?: { bigint: true }): Stats | BigIntStats | undefined {
  try {
    return options?.bigint ? statSync(file, { bigint: true, throwIfNoEntry: false }) : statSync(file, { throwIfNoEntry: false });
  } catch (err) {
    if (notThere(err)) return undefined;
    throw err;
  }
}

/** The path's own stats (a link not followed), or undefined when nothing is there. */
export function lstatIfExists(file: PathLike): Stats | undefined {
  try {
    return lstatSync(file, { throwIfNoEntry: false });
  } catch (err) {
    if (notThere(err)) return undefined;
    throw err;
  }
}
