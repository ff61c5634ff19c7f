/**
 * A JSONL batch input read line by line with exact byte offsets (a file from any offset, or an
 * upload streamed in pieces), holding at most a record's worth of one line, and the count of its
 * records. What a line holds is records.ts's business.
 *
 * - Blank lines (only spaces, tabs, CR) are kept as blank; a UTF-8 byte order mark at the very
 *   start of the file is skipped.
 * - A line ending (LF, or CRLF) is no part of the line: `length` and `bytes` exclude it.
 * - A line longer than `maxLineBytes` is returned with `bytes: null` and its length, never held whole.
 */
import type { FileHandle } from 'node:fs/promises';

import { DEFAULT_BODY_LIMIT_BYTES } from '../api/body-limit.js';

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const NEWLINE = 0x0a;

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
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_BODY_LIMIT_BYTES;
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
