/**
 * Batch input records: one line (read by jsonl-lines.ts) into a validated decide request, with the
 * same rules as POST /v1/decide.
 *
 * A line is one of
 *   {"custom_id": "row-1", "state": "..." | {...}, "questions": {...}}
 *   {"custom_id": "row-1", "method": "POST", "url": "/v1/decide", "body": {"state": ..., "questions": ...}}
 * Decisions taken here (the docs repeat them):
 * - Blank lines (only spaces, tabs, CR) are ignored and produce no result row; every other line
 *   produces exactly one row. A UTF-8 byte order mark at the very start of the file is skipped.
 * - `custom_id` is a string of 1..256 characters (code points), unique within the file. A row that
 *   fails because of its `custom_id` (missing, wrong type or length) reports `custom_id: null` and
 *   its message names the line number (as every error of a line that is not a JSON object does); a
 *   later duplicate reports its custom_id and names the line of the first use. The first use of a
 *   custom_id claims it even when that record fails for another reason.
 * - A record without `questions` takes the form's `questions`; a record with its own keeps them.
 * - `model` (top level, or `body.model` in an envelope) is optional; when present it must equal the
 *   batch's model as given on the form or as resolved (the dated id).
 * - Unknown fields are rejected, as /v1/decide rejects them.
 * - A line longer than `maxRecordBytes` (default 1 MiB, the /v1/decide body limit) is a failed row
 *   with state_too_long and custom_id null; it is never held in memory whole.
 */

import { DEFAULT_BODY_LIMIT_BYTES } from '../api/body-limit.js';
import { DECIDE_PATH } from '../api/decide/index.js';
import { ApiError, toApiError } from '../api/errors.js';
import { parseJsonText } from '../api/json-text.js';
import { isPlainObject, jsonType } from '../api/json-value.js';
import { validateDecideRequest, type NormalizedDecideRequest, type ValidationLimits } from '../api/validate.js';
import { parseDatedId } from '../models/registry.js';
import type { RawLine } from './jsonl-lines.js';

export const MAX_CUSTOM_ID_LENGTH = 256;
/** A line is one request: the same bound as a request body. */
export const DEFAULT_MAX_RECORD_BYTES = DEFAULT_BODY_LIMIT_BYTES;

const RECORD_FIELDS = ['custom_id', 'model', 'state', 'questions', 'label_mass'];
const ENVELOPE_FIELDS = ['custom_id', 'method', 'url', 'body'];
const ENVELOPE_MARKERS = ['method', 'url', 'body'];
export interface RecordContext {
  /** The batch's model, resolved (dated id); records are validated against it. */
  model: string;
  /** The model as the form gave it (may be an alias); `model` fields may name either (namesBatchModel). */
  requestedModel?: string;
  /** The form's `questions` (parsed JSON), for records without their own. */
  formQuestions?: unknown;
  /** custom_id -> line number of its first use; parseRecord() adds to it. */
  seen: Map<string, number>;
  limits?: Partial<ValidationLimits>;
  maxRecordBytes?: number;
  /**
   * Set for a job created in OpenAI's dialect: every line is `{custom_id, method, url, body}` for
   * this endpoint and its row is written as OpenAI writes batch output (openai/lines.ts).
   */
  endpoint?: string;
}

export type ParsedRecord =
  | { ok: true; customId: string; request: NormalizedDecideRequest }
  | { ok: false; customId: string | null; error: ApiError };

const utf8 = new TextDecoder('utf-8', { fatal: true });

function codePoints(s: string, cap: number): number {
  if (s.length <= cap) return [...s].length;
  let n = 0;
  for (const _ of s) if (++n > cap) break;
  return n;
}

/**
 * A line's JSON object, or why it is none. `readable`: the object as JSON.parse reads it when the
 * line is refused only for a fault away from its custom_id (a key repeated, or a lone surrogate,
 * elsewhere in the record): its custom_id still names the failed row and claims the id.
 */
export type DecodedLine = { value: Record<string, unknown> } | { error: ApiError; readable?: Record<string, unknown> };

/** Whether parseJsonText's fault `path` lies in the record's custom_id (or is the custom_id key repeated). */
const inCustomId = (path: string | undefined) => path === undefined || path === 'custom_id' || /^custom_id[.[]/.test(path);

/** The record's JSON value, or a failed row's error when the line is not a JSON object. */
export function decodeLine(line: RawLine, maxRecordBytes: number): DecodedLine {
  if (line.bytes === null) {
    return {
      error: new ApiError(
        'state_too_long',
        `line ${line.lineNo}: the record is ${line.length} bytes; at most ${maxRecordBytes} bytes per record (the /v1/decide body limit)`,
      ),
    };
  }
  let text: string;
  try {
    text = utf8.decode(line.bytes);
  } catch {
    return { error: new ApiError('invalid_question', `line ${line.lineNo}: not valid UTF-8 (the input must be UTF-8 JSONL)`) };
  }
  const parsed = parseJsonText(text);
  if (!parsed.ok) {
    // A record is one line of the file: the parser's "line 1" would read as a second line number.
    const reason = parsed.reason.replace(/ \(at line 1, column (\d+)\)$/, ' (at column $1)');
    const error = new ApiError('invalid_question', `line ${line.lineNo}: ${reason}`);
    return isPlainObject(parsed.value) && !inCustomId(parsed.path) ? { error, readable: parsed.value } : { error };
  }
  const value = parsed.value;
  if (!isPlainObject(value)) {
    return { error: new ApiError('invalid_question', `line ${line.lineNo}: a record must be a JSON object, got ${jsonType(value)}`) };
  }
  return { value };
}

/** The record's custom_id when it is a valid one, else the reason. */
function readCustomId(record: Record<string, unknown>): { id: string } | { error: ApiError } {
  const id = record.custom_id;
  const rule = `a string of 1 to ${MAX_CUSTOM_ID_LENGTH} characters, unique within the file`;
  if (id === undefined) return { error: new ApiError('invalid_question', `custom_id: required (${rule})`) };
  if (typeof id !== 'string') return { error: new ApiError('invalid_question', `custom_id: must be ${rule}, got ${jsonType(id)}`) };
  const n = codePoints(id, MAX_CUSTOM_ID_LENGTH);
  if (n === 0 || n > MAX_CUSTOM_ID_LENGTH) {
    return { error: new ApiError('invalid_question', `custom_id: must be ${rule}, got ${n === 0 ? 'an empty string' : `more than ${MAX_CUSTOM_ID_LENGTH} characters`}`) };
  }
  return { id };
}

/**
 * The custom_id a line claims (a valid custom_id of a JSON object line), whatever else is wrong
 * with the record; undefined when it claims none. parseRecord() claims exactly these.
 */
export function claimedCustomId(line: RawLine, maxRecordBytes = DEFAULT_MAX_RECORD_BYTES): string | undefined {
  if (line.blank) return undefined;
  return claimedCustomIdOf(decodeLine(line, maxRecordBytes));
}

/** claimedCustomId() of a line already decoded. */
export function claimedCustomIdOf(decoded: DecodedLine): string | undefined {
  const record = 'error' in decoded ? decoded.readable : decoded.value;
  if (record === undefined) return undefined;
  const cid = readCustomId(record);
  return 'id' in cid ? cid.id : undefined;
}

/**
 * Registers the line's custom_id in `seen` exactly as parseRecord() would, without validating the
 * rest. Used to rebuild `seen` when a job resumes from the middle of its input.
 */
export function claimCustomId(line: RawLine, seen: Map<string, number>, maxRecordBytes = DEFAULT_MAX_RECORD_BYTES): void {
  const id = claimedCustomId(line, maxRecordBytes);
  if (id !== undefined && !seen.has(id)) seen.set(id, line.lineNo);
}

/** What a record's line says on its own, before its custom_id is checked against the file's others. */
export type RecordRead =
  /** No custom_id claimed: the line is no JSON object, its custom_id is invalid, or the fault is in the custom_id itself. */
  | { customId: null; error: ApiError }
  | { customId: string; request: NormalizedDecideRequest }
  /** A valid custom_id (claimed all the same) on a record that fails. */
  | { customId: string; error: ApiError };

/** What reading a line needs to know: everything of RecordContext but the file's claims. */
export type RecordReadContext = Omit<RecordContext, 'seen'>;

/**
 * Reads and validates one non-blank line on its own (readRecord, pure: a worker thread may run it
 * for a large line, src/batches/record-thread.ts); claimRecord() then checks its custom_id against
 * the lines before it.
 */
export function readRecord(line: RawLine, ctx: RecordReadContext): RecordRead {
  const decoded = decodeLine(line, ctx.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
  if ('error' in decoded) {
    const customId = claimedCustomIdOf(decoded);
    return customId === undefined ? { customId: null, error: decoded.error } : { customId, error: decoded.error };
  }
  const record = decoded.value;
  const cid = readCustomId(record);
  // The row will say custom_id null: the line number is what lets the caller find the record.
  if ('error' in cid) return { customId: null, error: new ApiError(cid.error.code, `line ${line.lineNo}: ${cid.error.message}`) };
  try {
    return { customId: cid.id, request: toRequest(record, ctx) };
  } catch (err) {
    return { customId: cid.id, error: toApiError(err) };
  }
}

/**
 * The record as its file has it: a duplicate custom_id fails (whatever else the line says), and the
 * first use of one claims it in `seen`, even when that record fails for another reason.
 */
export function claimRecord(read: RecordRead, lineNo: number, seen: Map<string, number>): ParsedRecord {
  if (read.customId === null) return { ok: false, customId: null, error: read.error };
  const customId = read.customId;
  const first = seen.get(customId);
  if (first !== undefined) {
    return {
      ok: false,
      customId,
      error: new ApiError(
        'invalid_question',
        `custom_id: ${JSON.stringify(customId)} is a duplicate of line ${first}; custom_id must be unique within the file`,
      ),
    };
  }
  seen.set(customId, lineNo);
  return 'request' in read ? { ok: true, customId, request: read.request } : { ok: false, customId, error: read.error };
}

/**
 * Parses and validates one non-blank line. Never throws for bad input: a bad record comes back as
 * `{ ok: false, customId, error }` and becomes a failed result row.
 */
export function parseRecord(line: RawLine, ctx: RecordContext): ParsedRecord {
  return claimRecord(readRecord(line, ctx), line.lineNo, ctx.seen);
}

function rejectUnknown(obj: Record<string, unknown>, allowed: string[], where: string): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) {
      throw new ApiError('invalid_question', `${where}${JSON.stringify(key).slice(1, -1)}: unknown field (allowed: ${allowed.join(', ')})`);
    }
  }
}

/**
 * Whether a line's `model` names the batch's model: its dated id, the id the batch was created
 * with, or that dated id's undated alias (`svc-alpha` in a batch of `svc-alpha-2026-10`), whichever
 * spelling the first line or the form used. A batch runs the one version it was created on, so the
 * alias here means that version, as it does for a batch created with the alias.
 */
export function namesBatchModel(model: unknown, ctx: Pick<RecordContext, 'model' | 'requestedModel'>): boolean {
  if (typeof model !== 'string') return false;
  return model === ctx.model || model === ctx.requestedModel || model === parseDatedId(ctx.model)?.alias;
}

function checkModel(model: unknown, ctx: RecordReadContext, where: string): void {
  if (model === undefined) return;
  if (namesBatchModel(model, ctx)) return;
  const shown = typeof model === 'string' ? JSON.stringify(model.slice(0, 200)) : jsonType(model);
  throw new ApiError(
    'invalid_question',
    `${where}model: ${shown} differs from the batch's model ${JSON.stringify(ctx.requestedModel ?? ctx.model)}; a batch runs one model (omit the field or repeat the batch's model)`,
  );
}

function toRequest(record: Record<string, unknown>, ctx: RecordReadContext): NormalizedDecideRequest {
  const isEnvelope = ENVELOPE_MARKERS.some((k) => Object.hasOwn(record, k));
  let payload: Record<string, unknown>;
  let where = '';
  if (isEnvelope) {
    rejectUnknown(record, ENVELOPE_FIELDS, '');
    if (record.method !== 'POST') {
      throw new ApiError('invalid_question', `method: must be "POST", got ${typeof record.method === 'string' ? JSON.stringify(record.method.slice(0, 50)) : jsonType(record.method)}`);
    }
    if (record.url !== DECIDE_PATH) {
      throw new ApiError('invalid_question', `url: must be "${DECIDE_PATH}", got ${typeof record.url === 'string' ? JSON.stringify(record.url.slice(0, 200)) : jsonType(record.url)}`);
    }
    if (!isPlainObject(record.body)) {
      throw new ApiError('invalid_question', `body: required, the /v1/decide request body as a JSON object (got ${jsonType(record.body)})`);
    }
    payload = record.body;
    where = 'body.';
  } else {
    rejectUnknown(record, RECORD_FIELDS, '');
    const { custom_id: _ignored, ...rest } = record;
    payload = rest;
  }
  checkModel(payload.model, ctx, where);
  let questions = payload.questions;
  if (questions === undefined) {
    if (ctx.formQuestions === undefined) {
      throw new ApiError('invalid_question', `${where}questions: required (give the record its own questions, or the form field "questions" for every record)`);
    }
    questions = ctx.formQuestions;
  }
  try {
    return validateDecideRequest({ ...payload, model: ctx.model, questions }, ctx.limits);
  } catch (err) {
    if (err instanceof ApiError && where) throw new ApiError(err.code, `${where}${err.message}`);
    throw err;
  }
}
