/**
 * One chunk of batch input, from raw lines to result rows: parse and validate each line (records.ts),
 * score the valid ones in one `decideRecords` call at batch priority (behind live /v1/decide), and
 * format one result row per line, in line order. Shared by the file runner (runner.ts: SQLite jobs
 * and `decide batch`) and the Postgres chunk worker (pg/chunk-worker.ts), so both produce the same
 * rows for the same input.
 */
import { decideResponse } from '../api/decide/index.js';
import { ApiError, toApiError } from '../api/errors.js';
import type { NormalizedDecideRequest } from '../api/validate.js';
import { jsonInOrder } from '../domain/key-order.js';
import type { RecordOutcome } from '../service/decision-service.js';
import { ModelChangedError, type VersionPin } from '../service/version-pin.js';
import { addUsage, zeroUsage, type RecordScorer, type TokenUsage } from './ports.js';
import { parseEndpointLineOffMain, parseRecordOffMain } from './record-thread.js';
import { type RecordContext } from './records.js';
import { type RawLine } from './jsonl-lines.js';

interface Item {
  customId: string | null;
  /** Index into the chunk's requests, or the record's own error. */
  request?: number;
  error?: ApiError;
  /** A line of an OpenAI-dialect batch formats its own row (openai/lines.ts); else resultRow(). */
  format?: (outcome: RecordOutcome | { ok: false; error: ApiError }) => string;
}

/** The parsed lines of one chunk: one item per non-blank line, and the valid records' requests. */
export interface ParsedChunk {
  items: Item[];
  requests: NormalizedDecideRequest[];
  /** Bytes of the valid records, a stand-in for their tokens. */
  requestBytes: number;
}

export function emptyChunk(): ParsedChunk {
  return { items: [], requests: [], requestBytes: 0 };
}

/**
 * Parses one non-blank line into the chunk (a bad record becomes an item with its error); a large
 * line is read in the record thread (record-thread.ts). Lines must be added in file order, one at
 * a time: each claims its custom_id against the lines before it.
 */
export async function addLine(chunk: ParsedChunk, line: RawLine, ctx: RecordContext): Promise<void> {
  if (ctx.endpoint !== undefined) {
    const parsed = await parseEndpointLineOffMain(line, { ...ctx, endpoint: ctx.endpoint });
    if (parsed.request) {
      chunk.items.push({ customId: parsed.customId, request: chunk.requests.length, format: parsed.format });
      chunk.requests.push(parsed.request);
      chunk.requestBytes += line.length;
    } else {
      chunk.items.push({ customId: parsed.customId, error: parsed.error, format: parsed.format });
    }
    return;
  }
  const parsed = await parseRecordOffMain(line, ctx);
  if (parsed.ok) {
    chunk.items.push({ customId: parsed.customId, request: chunk.requests.length });
    chunk.requests.push(parsed.request);
    chunk.requestBytes += line.length;
  } else {
    chunk.items.push({ customId: parsed.customId, error: parsed.error });
  }
}

/**
 * The job's model is gone or cannot load: a failure of the whole job, not of its records. Thrown
 * instead of failing every remaining record with the same error; the rows finished before stay.
 */
export class ModelUnusableError extends Error {
  readonly error: ApiError;
  constructor(model: string, cause: unknown) {
    const e = toApiError(cause);
    super(`model ${model} could not be used: ${e.message}`);
    this.error = new ApiError(e.code, this.message);
  }
}

/** Throws ModelUnusableError when the scorer can tell (RecordScorer.runtime) that the model cannot be used. */
async function checkModel(scorer: RecordScorer, model: string): Promise<void> {
  if (!scorer.runtime) return;
  try {
    await scorer.runtime(model);
  } catch (err) {
    throw new ModelUnusableError(model, err);
  }
}

/**
 * Scores the chunk's valid records in one engine call at batch priority. When the shared call
 * fails, scores record by record so that one record cannot fail the others; `stopping()` true
 * skips that fallback (the caller is abandoning the chunk). A failure that is the model's (removed
 * or unloadable meanwhile, or replaced under the run's `pin`) throws ModelUnusableError rather than
 * becoming every record's error.
 */
export async function scoreChunk(
  scorer: RecordScorer,
  model: string,
  chunk: ParsedChunk,
  stopping: () => boolean = () => false,
  pin?: VersionPin,
  cacheScope?: string,
): Promise<RecordOutcome[]> {
  const { requests } = chunk;
  if (requests.length === 0) return [];
  try {
    return await scorer.decideRecords(model, requests, 'batch', pin, cacheScope);
  } catch (err) {
    if (stopping()) throw err;
    // The version the run started on was replaced: the job's failure, not each record's.
    if (err instanceof ModelChangedError) throw new ModelUnusableError(model, err);
    await checkModel(scorer, model);
    const outcomes = await Promise.all(
      requests.map((r) =>
        scorer.decideRecords(model, [r], 'batch', undefined, cacheScope).then(
          (o) => o[0]!,
          (e: unknown): RecordOutcome => ({ ok: false, error: toApiError(e) }),
        ),
      ),
    );
    // The model may have gone while the records were scored one by one.
    if (outcomes.some((o) => !o.ok)) await checkModel(scorer, model);
    return outcomes;
  }
}

/** One result row as JSONL text (with its newline). */
export function resultRow(customId: string | null, outcome: RecordOutcome | { ok: false; error: ApiError }): string {
  if (outcome.ok) {
    const r = decideResponse(outcome.result);
    // POST /v1/decide's body less `model` (the batch names it); keys in the caller's order.
    return `${jsonInOrder({ custom_id: customId, id: r.id, answers: r.answers, usage: r.usage })}\n`;
  }
  return `${JSON.stringify({ custom_id: customId, error: { code: outcome.error.code, message: outcome.error.message } })}\n`;
}

/** What an answered record adds to its job's usage (BatchJob.usage); a failed one adds nothing. */
function outcomeUsage(outcome: RecordOutcome | { ok: false; error: ApiError }): TokenUsage {
  if (!outcome.ok) return zeroUsage();
  const { inputTokens, cachedTokens, outputTokens } = outcome.result;
  return { inputTokens, cachedTokens, outputTokens };
}

/** A chunk's result rows, in line order, with what the stores keep beside them. */
export interface ChunkRows {
  rows: string[];
  /** Each row's status: true for a failed row (our `error` rows, OpenAI's error-file rows). */
  rowFailed: boolean[];
  rowUsage: TokenUsage[];
  completed: number;
  failed: number;
  /** UTF-8 bytes of the failed rows (what the chunk adds to OpenAI's error file). */
  failedBytes: number;
  usage: TokenUsage;
}

/**
 * The chunk's result rows and each row's status, counted here, where the outcome is known: the
 * stores keep the status with the row, so a download split by status never parses a row again.
 */
export function chunkRows(chunk: ParsedChunk, outcomes: RecordOutcome[]): ChunkRows {
  const out: ChunkRows = { rows: [], rowFailed: [], rowUsage: [], completed: 0, failed: 0, failedBytes: 0, usage: zeroUsage() };
  for (const item of chunk.items) {
    const outcome = item.error ? { ok: false as const, error: item.error } : outcomes[item.request!]!;
    const row = item.format ? item.format(outcome) : resultRow(item.customId, outcome);
    out.rows.push(row);
    out.rowFailed.push(!outcome.ok);
    if (outcome.ok) out.completed += 1;
    else {
      out.failed += 1;
      out.failedBytes += Buffer.byteLength(row);
    }
    out.rowUsage.push(outcomeUsage(outcome));
    out.usage = addUsage(out.usage, out.rowUsage.at(-1)!);
  }
  return out;
}
