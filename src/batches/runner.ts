/**
 * The batch runner: streams a JSONL input from a byte offset, scores its records in large
 * `decideRecords` calls (one scheduler job each) and appends one result row per non-blank input
 * line, in input order. Used by the SQLite job store (sqlite/sqlite-store.ts) and by `decide batch`
 * (CLI); the chunk itself is parsed, scored and formatted by chunk-scoring.ts, shared with Postgres.
 *
 * Crash safety: rows are written chunk by chunk. For each chunk the runner appends its rows to the
 * results file (and their statuses to the status file, when it keeps one), fsyncs them, and only then
 * calls `commit()` with the new input offset, results length and counts; the caller stores them atomically (one SQLite transaction, or an atomically replaced
 * sidecar file). A run that starts from a committed checkpoint first truncates the results file to
 * the committed length (the status file to one byte per committed row), so rows written after the
 * last commit are dropped and written again: every input row ends up in the results exactly once.
 *
 * Throughput: reading and validating the next chunk and tokenizing it (inside decideRecords) overlap
 * with the engine scoring the previous one (`pipelineDepth` chunks in flight); rows are still written
 * strictly in order.
 */
import { open, type FileHandle } from 'node:fs/promises';

import type { ValidationLimits } from '../api/validate.js';
import type { RecordOutcome } from '../service/decision-service.js';
import { addLine, chunkRows, emptyChunk, scoreChunk, type ParsedChunk } from './chunk-scoring.js';
import { addUsage, type ChunkOptions, type JobProgress, type RecordScorer } from './ports.js';
import { claimCustomId, DEFAULT_MAX_RECORD_BYTES, type RecordContext } from './records.js';
import { readLines, type RawLine } from './jsonl-lines.js';
import type { VersionPin } from '../service/version-pin.js';

export { resultRow } from './chunk-scoring.js';
export type { ChunkOptions, JobProgress, RecordScorer } from './ports.js';

export const DEFAULT_CHUNK_OPTIONS: Readonly<ChunkOptions> = Object.freeze({ chunkRecords: 128, chunkBytes: 64 * 1024, pipelineDepth: 2 });

export interface RunOptions extends Partial<ChunkOptions> {
  scorer: RecordScorer;
  /** Resolved (dated) model id. */
  model: string;
  /** The model as the caller named it (records' `model` fields may repeat either). */
  requestedModel?: string;
  /** Questions for records without their own (parsed JSON, already validated). */
  formQuestions?: unknown;
  /** An OpenAI-dialect batch's endpoint: lines are its request envelopes (see RecordContext.endpoint). */
  endpoint?: string;
  /** Who may share the records' cached states (DecideContext.cacheScope): the job owner's key id. */
  cacheScope?: string;
  inputPath: string;
  resultsPath: string;
  /**
   * Where each row's status goes, one byte per row in row order (ROW_FAILED or ROW_ANSWERED), so a
   * download split by status reads no row's JSON (sqlite/result-rows.ts). Omitted: not kept.
   */
  statusPath?: string;
  /** Where to continue: a committed checkpoint, or all zeros for a new run. */
  start: JobProgress;
  /** Stores a checkpoint durably. Called after the rows it covers are fsynced. */
  commit(progress: JobProgress): void | Promise<void>;
  /** Checked at every chunk boundary; true stops the run there (committed rows are kept). */
  shouldStop?(): boolean;
  /** Called after every commit. */
  onProgress?(progress: JobProgress): void;
  maxRecordBytes?: number;
  validation?: Partial<ValidationLimits>;
  /** Mode of a results file this run creates (default 0o666 less the umask; the job store gives 0600). */
  resultsMode?: number;
}

export interface RunResult {
  /** True when the whole input was read and every row committed; false when stopped. */
  finished: boolean;
  progress: JobProgress;
}

interface Chunk extends ParsedChunk {
  endOffset: number;
  endLine: number;
  outcomes?: Promise<RecordOutcome[]>;
}

async function writeFully(fh: FileHandle, buf: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    done += bytesWritten;
  }
}

/**
 * Runs (or resumes) one batch over its input. Bad records become failed rows; only I/O errors on
 * the job's own files reject, and ModelUnusableError (chunk-scoring.ts) when the model goes or
 * stops loading mid-run: the rows committed before it stay.
 * @example
 * const result = await runBatch({ scorer: svc, model: 'svc-alpha-2026-10', inputPath: 'in.jsonl', resultsPath: 'out.jsonl',
 *   start: { inputOffset: 0, inputLine: 0, resultsBytes: 0, completed: 0, failed: 0, usage: zeroUsage() }, commit: (p) => save(p) });
 */
export async function runBatch(options: RunOptions): Promise<RunResult> {
  const chunking: ChunkOptions = {
    chunkRecords: options.chunkRecords ?? DEFAULT_CHUNK_OPTIONS.chunkRecords,
    chunkBytes: options.chunkBytes ?? DEFAULT_CHUNK_OPTIONS.chunkBytes,
    pipelineDepth: Math.max(1, options.pipelineDepth ?? DEFAULT_CHUNK_OPTIONS.pipelineDepth),
  };
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const stop = () => options.shouldStop?.() ?? false;
  const progress: JobProgress = { ...options.start };
  // The run scores every chunk on the version its first chunk loaded (a replaced one fails the job).
  const pin: VersionPin = {};

  const input = await open(options.inputPath, 'r');
  let results: FileHandle | undefined;
  let statuses: FileHandle | undefined;
  const inFlight: Chunk[] = [];
  try {
    // Rows written after the last commit are dropped; their records are read again below.
    results = await openCommitted(options.resultsPath, progress.resultsBytes, options.resultsMode);
    if (options.statusPath !== undefined) statuses = await openCommitted(options.statusPath, progress.completed + progress.failed, options.resultsMode);

    const ctx: RecordContext = {
      model: options.model,
      requestedModel: options.requestedModel,
      formQuestions: options.formQuestions,
      endpoint: options.endpoint,
      seen: new Map(),
      limits: options.validation,
      maxRecordBytes,
    };
    if (progress.inputOffset > 0) {
      for await (const line of readLines(input, { maxLineBytes: maxRecordBytes })) {
        if (line.start >= progress.inputOffset) break;
        claimCustomId(line, ctx.seen, maxRecordBytes);
      }
    }

    const lines = readLines(input, { from: progress.inputOffset, firstLineNo: progress.inputLine + 1, maxLineBytes: maxRecordBytes });
    let eof = false;
    const maxItems = chunking.chunkRecords * 8;

    const readChunk = async (): Promise<Chunk | undefined> => {
      const chunk: Chunk = { ...emptyChunk(), endOffset: -1, endLine: -1 };
      while (chunk.requests.length < chunking.chunkRecords && chunk.requestBytes < chunking.chunkBytes && chunk.items.length < maxItems) {
        const next = await lines.next();
        if (next.done) {
          eof = true;
          break;
        }
        const line: RawLine = next.value;
        chunk.endOffset = line.end;
        chunk.endLine = line.lineNo;
        if (!line.blank) await addLine(chunk, line, ctx);
      }
      return chunk.endOffset === -1 ? undefined : chunk;
    };

    for (;;) {
      while (!eof && inFlight.length < chunking.pipelineDepth && !stop()) {
        const chunk = await readChunk();
        if (!chunk) break;
        chunk.outcomes = scoreChunk(options.scorer, options.model, chunk, stop, pin, options.cacheScope);
        chunk.outcomes.catch(() => undefined);
        inFlight.push(chunk);
      }
      const chunk = inFlight.shift();
      if (!chunk) break;
      if (stop()) {
        inFlight.unshift(chunk);
        break;
      }
      const outcomes = await chunk.outcomes!;
      if (stop()) {
        inFlight.unshift(chunk);
        break;
      }
      const { rows, rowFailed, completed, failed, failedBytes, usage } = chunkRows(chunk, outcomes);
      const buf = Buffer.from(rows.join(''), 'utf8');
      if (buf.length > 0) {
        await writeFully(results, buf, progress.resultsBytes);
        if (statuses) {
          await writeFully(statuses, Buffer.from(rowFailed.map((f) => (f ? ROW_FAILED : ROW_ANSWERED))), progress.completed + progress.failed);
          await statuses.datasync();
        }
        await results.datasync();
      }
      progress.inputOffset = chunk.endOffset;
      progress.inputLine = chunk.endLine;
      progress.resultsBytes += buf.length;
      progress.failedBytes += failedBytes;
      progress.completed += completed;
      progress.failed += failed;
      progress.usage = addUsage(progress.usage, usage);
      await options.commit({ ...progress });
      options.onProgress?.({ ...progress });
    }
    return { finished: eof && inFlight.length === 0, progress };
  } finally {
    await settle(inFlight);
    await input.close().catch(() => undefined);
    await results?.close().catch(() => undefined);
    await statuses?.close().catch(() => undefined);
  }
}

/** Status bytes of the status file (RunOptions.statusPath). */
export const ROW_ANSWERED = 0x30; // '0'
export const ROW_FAILED = 0x31; // '1'

/**
 * Opens a file the run appends to, cut back to its committed length: what was written after the
 * last commit goes. Shorter than that is damage, never repaired silently.
 */
async function openCommitted(file: string, committed: number, mode: number | undefined): Promise<FileHandle> {
  const fh = await open(file, committed === 0 ? 'w+' : 'r+', mode);
  try {
    const { size } = await fh.stat();
    if (size < committed) throw new Error(`${file} holds ${size} bytes but ${committed} were committed; the file was damaged`);
    if (size > committed) {
      await fh.truncate(committed);
      await fh.datasync();
    }
    return fh;
  } catch (err) {
    await fh.close().catch(() => undefined);
    throw err;
  }
}

/** Lets chunks still in flight settle so that no engine work outlives the run unobserved. */
async function settle(inFlight: Chunk[]): Promise<void> {
  await Promise.all(inFlight.map((c) => c.outcomes?.catch(() => undefined)));
}
