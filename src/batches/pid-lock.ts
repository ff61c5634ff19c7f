/**
 * The lock of something one process at a time may work on: a SQLite data dir
 * (`<dataDir>/batches.lock`) or a `decide batch` output (`<out>.lock`). A kernel lock on the file
 * (file-lock.ts), so a holder that is gone (killed, crashed, its container stopped) never holds it,
 * and a live one always does, in whatever PID namespace either runs; a refusal names the holder's
 * pid. A clean release removes the file.
 */
import { tryLockFile } from './file-lock.js';

/**
 * Takes `file` for this process, or throws an Error with `inUse(pid)` as its message while another
 * holder lives (this process included: a second holder in one process is refused too; pid 0 when
 * the holder's pid cannot be read). Returns the release.
 */
export function takePidLock(file: string, inUse: (pid: number) => string): () => void {
  const attempt = tryLockFile(file);
  if (!attempt.held) throw new Error(inUse(attempt.holder ?? 0));
  return attempt.release;
}
