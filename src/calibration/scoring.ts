/**
 * Scores calibration rows with the service's record scoring (DecisionService.decideRecords, the
 * call the batch runner makes for each chunk), at batch priority, keeping each row's raw label
 * logits. The rows are already validated requests (data.ts): nothing is re-serialised, and the
 * labelled data never goes to a file.
 *
 * Each row's outcome lands in that row's own slot. A row the engine cannot score (a state over the
 * context) or one over the /v1/decide body limit is an error in its slot, reported and left out by
 * the caller; the other rows are scored as usual.
 */
import { toApiError } from '../api/errors.js';
import { DEFAULT_MAX_RECORD_BYTES } from '../batches/records.js';
import { DEFAULT_CHUNK_OPTIONS } from '../batches/runner.js';
import type { NormalizedDecideRequest } from '../api/validate.js';
import type { RawQuestionScore } from '../runtime/model-runtime.js';
import type { RecordOutcome } from '../service/decision-service.js';
import type { CalibrationRow } from './data.js';

export type RowScore = { raw: RawQuestionScore[] } | { error: string };

/** What scoring needs of DecisionService. */
export interface RowScorer {
  decideRecords(modelId: string, requests: NormalizedDecideRequest[], priority?: 'live' | 'batch'): Promise<RecordOutcome[]>;
}

export interface ScoreOptions {
  /** Rows per decideRecords call (default: the batch chunk size, 128). */
  chunkRows?: number;
  /** Longest line scored (default 1 MiB, the /v1/decide body limit). */
  maxRecordBytes?: number;
  /** Called after each chunk with the rows done so far (scored or failed). */
  onProgress?(done: number, total: number): void;
}

const describe = (o: Extract<RecordOutcome, { ok: false }>) => `${o.error.code}: ${o.error.message}`;

/** Scores `rows` in order, two chunks in flight (one tokenized while the other scores). */
export async function scoreCalibrationRows(scorer: RowScorer, model: string, rows: readonly CalibrationRow[], options: ScoreOptions = {}): Promise<RowScore[]> {
  const chunkRows = options.chunkRows ?? DEFAULT_CHUNK_OPTIONS.chunkRecords;
  const maxRecordBytes = options.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES;
  const out: RowScore[] = new Array(rows.length);
  let done = 0;

  const scoreChunk = async (from: number, to: number): Promise<void> => {
    const indexes: number[] = [];
    for (let i = from; i < to; i++) {
      const row = rows[i]!;
      if (row.bytes > maxRecordBytes) {
        out[i] = { error: `state_too_long: the line is ${row.bytes} bytes; at most ${maxRecordBytes} bytes per record (the /v1/decide body limit)` };
      } else {
        indexes.push(i);
      }
    }
    const outcomes = await scoreOrEach(scorer, model, indexes.map((i) => rows[i]!.request));
    outcomes.forEach((o, k) => {
      out[indexes[k]!] = !o.ok ? { error: describe(o) } : o.raw ? { raw: o.raw } : { error: 'server_error: no label scores came back' };
    });
    done += to - from;
    options.onProgress?.(done, rows.length);
  };

  const depth = DEFAULT_CHUNK_OPTIONS.pipelineDepth;
  let next = 0;
  const lane = async () => {
    while (next < rows.length) {
      const from = next;
      next = Math.min(rows.length, from + chunkRows);
      await scoreChunk(from, next);
    }
  };
  await Promise.all(Array.from({ length: depth }, lane));
  return out;
}

/** One call for the chunk; when it fails as a whole, record by record so one row cannot fail the others. */
async function scoreOrEach(scorer: RowScorer, model: string, requests: NormalizedDecideRequest[]): Promise<RecordOutcome[]> {
  if (requests.length === 0) return [];
  try {
    return await scorer.decideRecords(model, requests, 'batch');
  } catch {
    return Promise.all(
      requests.map((r) =>
        scorer.decideRecords(model, [r], 'batch').then(
          (o) => o[0]!,
          (e: unknown): RecordOutcome => ({ ok: false, error: toApiError(e) }),
        ),
      ),
    );
  }
}
