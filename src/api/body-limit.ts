/**
 * The largest request body a door reads by default (1 MiB): createServer's JSON body limit, and
 * the largest batch line, since a line is one such request (batch settings' maxRecordBytes).
 */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * A decision request body or a batch line of at least this many bytes is read (JSON text, then
 * the door's validation) in a worker thread, not on the main thread: a JSON-object state of 1 MiB
 * takes hundreds of milliseconds to parse and check, and the health probes would wait as long.
 * Smaller ones, nearly all of them, are read at once, without the hop.
 */
export const OFF_THREAD_BODY_BYTES = 32 * 1024;
