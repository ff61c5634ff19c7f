/**
 * Which failures are the data dir's disk refusing writes (full, over quota, read-only, failing)
 * rather than a fault of the request or of this code: the SQLite store's database and files, and
 * the staged uploads of either store. What the API answers while one lasts: 503 server_error with
 * Retry-After, in each route's own shape, as Postgres outages answer (store-outages.ts). Nothing
 * accepted is lost: a write that failed committed nothing, and a running job pauses and resumes
 * from its last committed row (job-pump.ts).
 */
import { ApiError } from '../api/errors.js';
import { answeringOutages, outageAnswer } from './store-outages.js';

/** SQLite's result codes (better-sqlite3's `code`, extended codes included) of a disk that takes no write. */
const SQLITE_STORAGE_CODE = /^SQLITE_(FULL|READONLY|IOERR|CANTOPEN)(_|$)/;

/** The system's errors of a disk that takes no write (staging an upload, placing a job's files). */
const STORAGE_ERRNO = new Set(['ENOSPC', 'EDQUOT', 'EROFS', 'EIO']);

/** Seconds a client is asked to wait: freeing disk space takes an operator, not a moment. */
export const STORAGE_RETRY_AFTER_SECONDS = 30;

export function isStorageFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && (SQLITE_STORAGE_CODE.test(code) || STORAGE_ERRNO.has(code));
}

/** The API's answer to a call that failed because the store's disk refused a write. */
export function storageUnavailable(cause: unknown): ApiError {
  const code = (cause as { code?: string }).code;
  return new ApiError('server_error', `the batch store cannot write to its disk (${code}: full, read-only or failing); nothing was stored; retry later`, {
    status: 503,
    retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS,
    cause,
  });
}

/** `store` with every storage failure answered by storageUnavailable(). */
export function answeringStorageFailures<T extends object>(store: T): T {
  return answeringOutages(store, isStorageFailure, storageUnavailable);
}

/** `err`, or its 503 when it is a storage failure (for writes made outside a store: staged uploads). */
export function storageFailureAnswer(err: unknown): unknown {
  return outageAnswer(err, isStorageFailure, storageUnavailable);
}
