/**
 * Which database failures are an outage (the server refuses, drops or does not answer connections:
 * down, restarting, unreachable) rather than a fault of the request or the setup, and what the
 * API answers while one lasts: 503 server_error with Retry-After saying the batch store is
 * unavailable, in each route's own shape, instead of the 500 of an unexpected failure.
 */
import { ApiError } from '../../api/errors.js';
import { answeringOutages } from '../store-outages.js';

/** Socket errors of a server that is down, restarting or unreachable. */
const OUTAGE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'EPIPE', 'EAI_AGAIN']);

/**
 * SQLSTATEs of a server that cannot serve now: class 08 (connection exception), shutting down
 * (57P01 admin, 57P02 crash), starting up (57P03), out of connection slots (53300).
 */
const OUTAGE_SQLSTATE = /^(08...|57P0[123]|53300)$/;

/** node-postgres's own messages for a connection lost or never made in time. */
const OUTAGE_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection error and is not queryable/i;

/** Seconds a client is asked to wait before it tries again during an outage. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/** True for a failure that waiting can fix: the database is down, restarting or unreachable. */
export function isDatabaseOutage(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown; errors?: unknown } | undefined;
  if (!e) return false;
  if (typeof e.code === 'string' && (OUTAGE_ERRNO.has(e.code) || OUTAGE_SQLSTATE.test(e.code))) return true;
  if (typeof e.message === 'string' && OUTAGE_MESSAGE.test(e.message)) return true;
  // A host name with several addresses fails each: node's AggregateError holds one per address.
  return Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every(isDatabaseOutage);
}

/** The API's answer to a call that failed because the database is unavailable. */
export function storeUnavailable(cause: unknown): ApiError {
  return new ApiError('server_error', 'the batch store is unavailable: its database is not answering; retry shortly', {
    status: 503,
    retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS,
    cause,
  });
}

/** `store` with every outage of its database answered by storeUnavailable() (store-outages.ts). */
export function answeringDatabaseOutages<T extends object>(store: T): T {
  return answeringOutages(store, isDatabaseOutage, storeUnavailable);
}
