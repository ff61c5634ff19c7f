/**
 * Batch input records: reading a JSONL file line by line with exact byte offsets, and turning one
 * line into a validated decide request, with the same rules as POST /v1/decide.
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
import type { FileHandle } from 'node:fs/promises';

import { DEFAULT_BODY_LIMIT_BYTES } from '../api/body-limit.js';
import { ApiError, toApiError } from '../api/errors.js';
import { parseJsonText } from '../api/json-text.js';
import { isPlainObject, jsonType } from '../api/json-value.js';
import { validateDecideRequest, type NormalizedDecideRequest, type ValidationLimits } from '../api/validate.js';
import { parseDatedId } from '../models/registry.js';

export const MAX_CUSTOM_ID_LENGTH = 256;
/** A line is one request: the same bound as a request body. */
export const DEFAULT_MAX_RECORD_BYTES = DEFAULT_BODY_LIMIT_BYTES;

const RECORD_FIELDS = ['custom_id', 'model', 'state', 'questions', 'label_mass'];
const ENVELOPE_FIELDS = ['custom_id', 'method', 'url', 'body'];
const ENVELOPE_MARKERS = ['method', 'url', 'body'];
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const NEWLINE = 0x0a;

// ---------------------------------------------------------------------------------------------
// Lines

/** One line of the input: bytes [start, end) of the file, `end` just past its newline. */
export interface RawLine {
  start: number;
  end: number;
  /** 1-based line number in the file, blank lines included. */
  lineNo: number;
  /** The line without its newline (and without a trailing CR); null when over the byte limit. */
  bytes: Buffer | null;
  /** Bytes of the line without its newline (and without a trailing CR: a line ending is no part of the record). */
  length: number;
  blank: boolean;
}

function isBlankBytes(buf: Buffer, from = 0, to = buf.length): boolean {
  for (let i = from; i < to; i++) {
    const b = buf[i]!;
    if (b !== 0x20 && b !== 0x09 && b !== 0x0d && b !== NEWLINE) return false;
  }
  return true;
}

/**
 * Reads lines from `fh` starting at byte `from` (a line start), holding at most `maxLineBytes` of
 * a line in memory. `firstLineNo` is the number of the line that starts at `from`.
 */
export async function* readLines(
  fh: FileHandle,
  options: { from?: number; firstLineNo?: number; maxLineBytes?: number; chunkBytes?: number } = {},
): AsyncGenerator<RawLine> {
  const from = options.from ?? 0;
  async function* pieces(): AsyncGenerator<Buffer> {
    // One buffer, reused: splitLines() copies what it keeps.
    const buf = Buffer.allocUnsafe(options.chunkBytes ?? 1 << 20);
    for (let position = from; ; ) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, position);
      if (bytesRead === 0) return;
      position += bytesRead;
      yield buf.subarray(0, bytesRead);
    }
  }
  yield* splitLines(pieces(), { start: from, firstLineNo: options.firstLineNo, maxLineBytes: options.maxLineBytes });
}

/**
 * The lines of a byte stream (a file read from `start`, or an upload streamed from a store), as
 * readLines() gives them: exact offsets counted from `start`, at most `maxLineBytes` of a line held,
 * a byte order mark skipped when `start` is 0. The pieces may be reused by the source once the next
 * one is asked for.
 */
export async function* splitLines(
  source: AsyncIterable<Buffer | string>,
  options: { start?: number; firstLineNo?: number; maxLineBytes?: number } = {},
): AsyncGenerator<RawLine> {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_RECORD_BYTES;
  let position = options.start ?? 0;
  let lineNo = options.firstLineNo ?? 1;
  let lineStart = position;
  let parts: Buffer[] = [];
  let held = 0;
  let length = 0;
  let overflow = false;
  let blank = true;
  // Whether the line's last byte so far is a CR: with the newline after it, it is a CRLF ending.
  let endsInCr = false;
  // At the start of the file, the first bytes are held until they tell whether a BOM begins it.
  let head: Buffer | undefined = position === 0 ? Buffer.alloc(0) : undefined;

  const finish = (end: number): RawLine => {
    let bytes: Buffer | null = null;
    if (endsInCr) length -= 1;
    if (!overflow) {
      bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts, held);
      if (endsInCr) bytes = bytes.subarray(0, bytes.length - 1);
      blank = isBlankBytes(bytes);
      // take() held one byte more than the limit, in case it was the CR of a CRLF.
      if (length > maxLineBytes) bytes = null;
    }
    const line: RawLine = { start: lineStart, end, lineNo, bytes, length, blank };
    lineNo += 1;
    lineStart = end;
    parts = [];
    held = 0;
    length = 0;
    overflow = false;
    blank = true;
    endsInCr = false;
    return line;
  };

  const take = (piece: Buffer): void => {
    length += piece.length;
    if (piece.length > 0) endsInCr = piece[piece.length - 1] === 0x0d;
    if (overflow) {
      if (blank && !isBlankBytes(piece)) blank = false;
      return;
    }
    if (length > maxLineBytes + 1) {
      // Too long to be a record: keep only whether it is blank.
      overflow = true;
      blank = parts.every((p) => isBlankBytes(p)) && isBlankBytes(piece);
      parts = [];
      held = 0;
      return;
    }
    // Copy: the source may reuse its buffer for the next piece.
    parts.push(Buffer.from(piece));
    held += piece.length;
  };

  function* lines(buf: Buffer): Generator<RawLine> {
    let at = 0;
    while (at < buf.length) {
      const nl = buf.indexOf(NEWLINE, at);
      if (nl === -1) {
        take(buf.subarray(at));
        at = buf.length;
      } else {
        take(buf.subarray(at, nl));
        at = nl + 1;
        yield finish(position + at);
      }
    }
    position += buf.length;
  }

  /** The held head once it is known: without its BOM (a line offset counts it all the same). */
  const afterHead = (h: Buffer): Buffer => {
    if (h.length >= 3 && h.subarray(0, 3).equals(BOM)) {
      position += 3;
      lineStart = position;
      return h.subarray(3);
    }
    return h;
  };

  for await (const piece of source) {
    let buf = typeof piece === 'string' ? Buffer.from(piece) : piece;
    if (head !== undefined) {
      head = Buffer.concat([head, buf]);
      if (head.length < 3) continue;
      buf = afterHead(head);
      head = undefined;
    }
    yield* lines(buf);
  }
  if (head !== undefined) yield* lines(afterHead(head));
  if (length > 0 || parts.length > 0 || overflow) yield finish(position);
}

/**
 * Counts the records (non-blank lines) of a byte stream fed in pieces, e.g. an upload.
 * Agrees with readLines(): a line is blank when it holds only spaces, tabs and CRs (after a BOM
 * at the start of the file).
 */
export class RecordCounter {
  records = 0;
  bytes = 0;
  private lineHasContent = false;
  private bomMatched = 0;
  private bomDone = false;

  push(chunk: Buffer): void {
    let at = 0;
    if (!this.bomDone) {
      // A BOM at the start of the stream is no content, even when split across pieces; a partial
      // one is (its bytes are not whitespace), as readLines() sees it.
      while (at < chunk.length && this.bomMatched < 3 && chunk[at] === BOM[this.bomMatched]) {
        at += 1;
        this.bomMatched += 1;
      }
      if (this.bomMatched === 3) {
        this.bomDone = true;
      } else if (at < chunk.length) {
        this.bomDone = true;
        if (this.bomMatched > 0) this.lineHasContent = true;
      }
    }
    while (at < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, at);
      const end = nl === -1 ? chunk.length : nl;
      if (!this.lineHasContent && !isBlankBytes(chunk, at, end)) this.lineHasContent = true;
      if (nl === -1) break;
      if (this.lineHasContent) this.records += 1;
      this.lineHasContent = false;
      at = nl + 1;
    }
    this.bytes += chunk.length;
  }

  /** Records including a last line without a newline. */
  total(): number {
    const partialBom = !this.bomDone && this.bomMatched > 0;
    return this.records + (this.lineHasContent || partialBom ? 1 : 0);
  }
}

// ---------------------------------------------------------------------------------------------
// Records

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

/** A line's JSON object, or why it is none. */
export type DecodedLine = { value: Record<string, unknown> } | { error: ApiError };

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
  if (!parsed.ok) return { error: new ApiError('invalid_question', `line ${line.lineNo}: ${parsed.reason}`) };
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
  if ('error' in decoded) return undefined;
  const cid = readCustomId(decoded.value);
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

/**
 * Parses and validates one non-blank line. Never throws for bad input: a bad record comes back as
 * `{ ok: false, customId, error }` and becomes a failed result row.
 */
export function parseRecord(line: RawLine, ctx: RecordContext): ParsedRecord {
  const decoded = decodeLine(line, ctx.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
  if ('error' in decoded) return { ok: false, customId: null, error: decoded.error };
  const record = decoded.value;
  const cid = readCustomId(record);
  // The row will say custom_id null: the line number is what lets the caller find the record.
  if ('error' in cid) return { ok: false, customId: null, error: new ApiError(cid.error.code, `line ${line.lineNo}: ${cid.error.message}`) };
  const customId = cid.id;
  const first = ctx.seen.get(customId);
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
  ctx.seen.set(customId, line.lineNo);
  try {
    return { ok: true, customId, request: toRequest(record, ctx) };
  } catch (err) {
    return { ok: false, customId, error: toApiError(err) };
  }
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

function checkModel(model: unknown, ctx: RecordContext, where: string): void {
  if (model === undefined) return;
  if (namesBatchModel(model, ctx)) return;
  const shown = typeof model === 'string' ? JSON.stringify(model.slice(0, 200)) : jsonType(model);
  throw new ApiError(
    'invalid_question',
    `${where}model: ${shown} differs from the batch's model ${JSON.stringify(ctx.requestedModel ?? ctx.model)}; a batch runs one model (omit the field or repeat the batch's model)`,
  );
}

function toRequest(record: Record<string, unknown>, ctx: RecordContext): NormalizedDecideRequest {
  const isEnvelope = ENVELOPE_MARKERS.some((k) => Object.hasOwn(record, k));
  let payload: Record<string, unknown>;
  let where = '';
  if (isEnvelope) {
    rejectUnknown(record, ENVELOPE_FIELDS, '');
    if (record.method !== 'POST') {
      throw new ApiError('invalid_question', `method: must be "POST", got ${typeof record.method === 'string' ? JSON.stringify(record.method.slice(0, 50)) : jsonType(record.method)}`);
    }
    if (record.url !== '/v1/decide') {
      throw new ApiError('invalid_question', `url: must be "/v1/decide", got ${typeof record.url === 'string' ? JSON.stringify(record.url.slice(0, 200)) : jsonType(record.url)}`);
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
