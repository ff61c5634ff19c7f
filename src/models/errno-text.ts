/**
 * A file system error in words a person reads, with its code (and the call that met it) kept in
 * parentheses for a search: `permission denied (EACCES, open)`. A code without words here is given
 * as it is.
 */
const WORDS: Readonly<Record<string, string>> = {
  ENOENT: 'does not exist',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ELOOP: 'a symbolic link loop',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EISDIR: 'a directory, not a file',
  ENAMETOOLONG: 'the name is too long',
  EROFS: 'a read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is used up',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files on the system',
  EIO: 'an input/output error',
  EBUSY: 'in use',
  EXDEV: 'on another file system',
};

/** The reason in `err` (a Node file system error, else any error), in words. */
export function errnoText(err: unknown): string {
  const e = err as NodeJS.ErrnoException | undefined;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (code === undefined) return (err as Error)?.message ?? String(err);
  const detail = e?.syscall ? `${code}, ${e.syscall}` : code;
  return Object.hasOwn(WORDS, code) ? `${WORDS[code]} (${detail})` : e?.syscall ? `${code} (${e.syscall})` : code;
}
