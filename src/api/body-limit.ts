/**
 * The largest request body a door reads by default (1 MiB): createServer's JSON body limit, and
 * the largest batch line, since a line is one such request (batch settings' maxRecordBytes).
 */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
