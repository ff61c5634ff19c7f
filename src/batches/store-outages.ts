/**
 * Batch store calls of this process that failed because the store's database was not answering
 * (Postgres down, restarting or unreachable: pg/outage.ts counts them; each became a 503, or a
 * runner's retry). /metrics exports it as decide_batch_store_unavailable_total, so an outage shows
 * in monitoring, not only in the clients that met it; /readyz does not change with it (live
 * decisions do not need the database). Here, beside the backends, so the server reads it without
 * reaching into one.
 */
export const storeOutageStats = { unavailable: 0 };
