/**
 * Batch settings: the limits, retention, concurrency and chunk sizes a BatchService runs with,
 * each from an explicit option, else its DECIDE_BATCH_* environment variable, else the default.
 * A malformed environment value is an error at start, never a silent fallback.
 */
import type { ValidationLimits } from '../api/validate.js';
import type { BatchSettings, ChunkOptions } from './ports.js';
import { DEFAULT_MAX_RECORD_BYTES } from './records.js';
import { DEFAULT_CHUNK_OPTIONS } from './runner.js';
import { parseDecimal } from '../support/decimal.js';

export type { BatchSettings };

export const DEFAULT_MAX_FILE_BYTES = 200 * 1024 * 1024;
export const DEFAULT_MAX_RECORDS = 100_000;
export const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;
export const DEFAULT_SWEEP_INTERVAL_MS = 60 * 1000;
export const DEFAULT_CONCURRENCY = 2;
/** The Postgres store's chunk lease without a heartbeat (DECIDE_BATCH_LEASE_SECONDS); pg-boss refuses shorter heartbeats than the minimum. */
export const LEASE_SECONDS = Object.freeze({ default: 30, min: 10 });
/**
 * The longest retention: a job's expiry (now + retention, in ms) is stored as an integer (SQLite
 * INTEGER, Postgres bigint) and must stay an exact JavaScript integer; 100 years is far inside both.
 */
export const MAX_RETENTION_SECONDS = 100 * 365 * 24 * 3600;
/** The longest sweep interval: Node runs a timer longer than 2^31-1 ms every millisecond instead. */
export const MAX_SWEEP_SECONDS = (2 ** 31 - 1) / 1000;

/** The DECIDE_BATCH_* lines of `decide serve --help` (the lease is listed beside the database URL). */
export const BATCH_SETTINGS_HELP = `  DECIDE_BATCH_MAX_FILE_BYTES     largest batch upload in bytes (default ${DEFAULT_MAX_FILE_BYTES})
  DECIDE_BATCH_MAX_RECORDS        most records in one batch file (default ${DEFAULT_MAX_RECORDS})
  DECIDE_BATCH_RETENTION_SECONDS  results are kept this long after a batch ends (default ${DEFAULT_RETENTION_MS / 1000},
                                  7 days; at most ${MAX_RETENTION_SECONDS}, 100 years; rounded to whole ms)
  DECIDE_BATCH_SWEEP_SECONDS      how often expired results and uploads are deleted (default ${DEFAULT_SWEEP_INTERVAL_MS / 1000};
                                  0.01 to ${MAX_SWEEP_SECONDS}, about 24.8 days: Node's longest timer)
  DECIDE_BATCH_CONCURRENCY        batches run at once, SQLite store (default ${DEFAULT_CONCURRENCY})
  DECIDE_BATCH_CHUNK_RECORDS, DECIDE_BATCH_CHUNK_BYTES  records / input bytes per chunk (default
                                  ${DEFAULT_CHUNK_OPTIONS.chunkRecords}, ${DEFAULT_CHUNK_OPTIONS.chunkBytes})
`;

/** The options a caller may set; every one is optional. */
export interface BatchSettingsOptions {
  /** Upload size limit in bytes; default DECIDE_BATCH_MAX_FILE_BYTES or 200 MiB. */
  maxFileBytes?: number;
  /** Records (non-blank lines) per file; default DECIDE_BATCH_MAX_RECORDS or 100,000. */
  maxRecords?: number;
  /** Bytes of one record line; default 1 MiB (the /v1/decide body limit). */
  maxRecordBytes?: number;
  /** How long results are kept after a job finishes; default DECIDE_BATCH_RETENTION_SECONDS or 7 days. */
  retentionMs?: number;
  /** How often expired results are swept; default DECIDE_BATCH_SWEEP_SECONDS or 60 s. */
  sweepIntervalMs?: number;
  /** Jobs run at once; default DECIDE_BATCH_CONCURRENCY or 2. */
  concurrency?: number;
  /** Records / bytes per engine call; default DECIDE_BATCH_CHUNK_RECORDS / DECIDE_BATCH_CHUNK_BYTES, else DEFAULT_CHUNK_OPTIONS. */
  chunk?: Partial<ChunkOptions>;
  validation?: Partial<ValidationLimits>;
  /** Environment read for the defaults; default process.env. */
  env?: NodeJS.ProcessEnv;
}

/** A number from the environment; `fallback` when unset or empty, an Error naming the variable when malformed. */
export function envNumber(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  { integer = true, min = 1, max = Number.MAX_SAFE_INTEGER } = {},
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = parseDecimal(raw) ?? NaN;
  if (!Number.isFinite(value) || value < min || value > max || (integer && !Number.isInteger(value))) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new Error(`${name}: must be ${integer ? 'an integer' : 'a number'} ${range}, got '${raw}'`);
  }
  return value;
}

/**
 * A duration in seconds from the environment, as whole milliseconds (a fraction finer than a
 * millisecond is rounded: the stores keep times as integer milliseconds).
 */
function envMilliseconds(env: NodeJS.ProcessEnv, name: string, fallbackMs: number, min: number, max: number): number {
  return Math.round(envNumber(env, name, fallbackMs / 1000, { integer: false, min, max }) * 1000);
}

function integerIn(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name}: must be an integer from ${min} to ${max}, got ${value}`);
  return value;
}

/** The Postgres store's chunk lease in seconds, from DECIDE_BATCH_LEASE_SECONDS. */
export function leaseSeconds(env: NodeJS.ProcessEnv = process.env): number {
  return envNumber(env, 'DECIDE_BATCH_LEASE_SECONDS', LEASE_SECONDS.default, { min: LEASE_SECONDS.min });
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name}: must be a positive integer, got ${value}`);
  return value;
}

/**
 * The chunk size from DECIDE_BATCH_CHUNK_RECORDS / DECIDE_BATCH_CHUNK_BYTES, else the defaults: read
 * by the server's jobs and by `decide batch` alike.
 */
export function chunkOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): ChunkOptions {
  return {
    chunkRecords: envNumber(env, 'DECIDE_BATCH_CHUNK_RECORDS', DEFAULT_CHUNK_OPTIONS.chunkRecords),
    chunkBytes: envNumber(env, 'DECIDE_BATCH_CHUNK_BYTES', DEFAULT_CHUNK_OPTIONS.chunkBytes),
    pipelineDepth: DEFAULT_CHUNK_OPTIONS.pipelineDepth,
  };
}

/**
 * Resolves every batch setting.
 * @example
 * const settings = resolveBatchSettings({ retentionMs: 3600_000 }); // the rest from DECIDE_BATCH_* or defaults
 */
export function resolveBatchSettings(options: BatchSettingsOptions = {}): BatchSettings {
  const env = options.env ?? process.env;
  return {
    maxFileBytes: positiveInteger('maxFileBytes', options.maxFileBytes ?? envNumber(env, 'DECIDE_BATCH_MAX_FILE_BYTES', DEFAULT_MAX_FILE_BYTES)),
    maxRecords: positiveInteger('maxRecords', options.maxRecords ?? envNumber(env, 'DECIDE_BATCH_MAX_RECORDS', DEFAULT_MAX_RECORDS)),
    maxRecordBytes: positiveInteger('maxRecordBytes', options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES),
    retentionMs: integerIn(
      'retentionMs',
      options.retentionMs ?? envMilliseconds(env, 'DECIDE_BATCH_RETENTION_SECONDS', DEFAULT_RETENTION_MS, 0, MAX_RETENTION_SECONDS),
      0,
      MAX_RETENTION_SECONDS * 1000,
    ),
    sweepIntervalMs: integerIn(
      'sweepIntervalMs',
      options.sweepIntervalMs ?? envMilliseconds(env, 'DECIDE_BATCH_SWEEP_SECONDS', DEFAULT_SWEEP_INTERVAL_MS, 0.01, MAX_SWEEP_SECONDS),
      1,
      MAX_SWEEP_SECONDS * 1000,
    ),
    concurrency: positiveInteger('concurrency', options.concurrency ?? envNumber(env, 'DECIDE_BATCH_CONCURRENCY', DEFAULT_CONCURRENCY)),
    chunk: { ...chunkOptionsFromEnv(env), ...options.chunk },
    validation: options.validation,
  };
}
