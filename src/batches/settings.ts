/**
 * Batch settings: the limits, retention, concurrency and chunk sizes a BatchService runs with,
 * each from an explicit option, else its DECIDE_BATCH_* environment variable, else the default.
 * A malformed environment value is an error at start, never a silent fallback.
 */
import type { ValidationLimits } from '../api/validate.js';
import type { BatchSettings, ChunkOptions } from './ports.js';
import { DEFAULT_MAX_RECORD_BYTES } from './records.js';
import { DEFAULT_CHUNK_OPTIONS } from './runner.js';

export type { BatchSettings };

export const DEFAULT_MAX_FILE_BYTES = 200 * 1024 * 1024;
export const DEFAULT_MAX_RECORDS = 100_000;
export const DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000;
export const DEFAULT_SWEEP_INTERVAL_MS = 60 * 1000;
export const DEFAULT_CONCURRENCY = 2;
/** The Postgres store's chunk lease without a heartbeat (DECIDE_BATCH_LEASE_SECONDS); pg-boss refuses shorter heartbeats than the minimum. */
export const LEASE_SECONDS = Object.freeze({ default: 30, min: 10 });

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
export function envNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, { integer = true, min = 1 } = {}): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    throw new Error(`${name}: must be ${integer ? 'an integer' : 'a number'} >= ${min}, got '${raw}'`);
  }
  return value;
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
    retentionMs:
      options.retentionMs ?? envNumber(env, 'DECIDE_BATCH_RETENTION_SECONDS', DEFAULT_RETENTION_MS / 1000, { integer: false, min: 0 }) * 1000,
    sweepIntervalMs:
      options.sweepIntervalMs ?? envNumber(env, 'DECIDE_BATCH_SWEEP_SECONDS', DEFAULT_SWEEP_INTERVAL_MS / 1000, { integer: false, min: 0.01 }) * 1000,
    concurrency: positiveInteger('concurrency', options.concurrency ?? envNumber(env, 'DECIDE_BATCH_CONCURRENCY', DEFAULT_CONCURRENCY)),
    chunk: { ...chunkOptionsFromEnv(env), ...options.chunk },
    validation: options.validation,
  };
}
