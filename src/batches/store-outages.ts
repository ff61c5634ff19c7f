/**
 * Batch store calls that failed because the store could not serve them (Postgres down, restarting
 * or unreachable: pg/outage.ts; the SQLite store's disk full or read-only: storage-failures.ts),
 * and the one way a store's rejections of that kind become the API's 503 with Retry-After in each
 * route's own shape, instead of the 500 of an unexpected failure. /metrics exports the count as
 * decide_batch_store_unavailable_total, so an outage shows in monitoring, not only in the clients
 * that met it; /readyz does not change with it (live decisions need neither the database nor the
 * disk). Here, beside the backends, so the server reads it without reaching into one.
 */
import type { ApiError } from '../api/errors.js';

export const storeOutageStats = { unavailable: 0 };

/**
 * `store` with every method's rejection that `isOutage` recognises turned into `answer(err)` (and
 * counted): what a route answers is then that error, whatever store method it called.
 */
export function answeringOutages<T extends object>(store: T, isOutage: (err: unknown) => boolean, answer: (cause: unknown) => ApiError): T {
  return new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        let result: unknown;
        try {
          result = (value as (...a: unknown[]) => unknown).apply(target, args);
        } catch (err) {
          throw outageAnswer(err, isOutage, answer);
        }
        if (!(result instanceof Promise)) return result;
        return result.catch((err: unknown) => {
          throw outageAnswer(err, isOutage, answer);
        });
      };
    },
  });
}

/** `err` itself, or, when it is an outage, its answer (counted once). */
export function outageAnswer(err: unknown, isOutage: (err: unknown) => boolean, answer: (cause: unknown) => ApiError): unknown {
  if (!isOutage(err)) return err;
  storeOutageStats.unavailable += 1;
  return answer(err);
}
