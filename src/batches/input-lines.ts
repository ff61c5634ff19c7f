/**
 * A job's input read once at creation: each non-blank line decoded once, the line that first
 * claimed its custom_id found (the claims parseRecord() and the runners make), and creation's own
 * check, when it has one (an OpenAI batch's envelopes), run on the same decoded line. What a store
 * that keeps lines (Postgres) stores, and the one pass in which a line is checked before its job
 * exists.
 */
import type { InputLine } from './ports.js';
import { claimedCustomIdOf, decodeLine, type DecodedLine } from './records.js';
import { splitLines, type RawLine } from './jsonl-lines.js';

/**
 * What creation checks of every line (openai/input-check.ts). A check refuses every input in which
 * a custom_id repeats, so no line of an input it accepts is a duplicate: inputLines() then claims
 * no custom_ids itself.
 */
export interface LineCheck {
  /** Sees every non-blank line with its decoded record (or why it is none). */
  line(line: RawLine, decoded: DecodedLine): void;
  /** After the last line: throws when the input is refused. */
  end(): void;
}

/** The input's non-blank lines from a byte stream of the whole file. */
export async function* inputLines(source: AsyncIterable<Buffer | string>, options: { maxRecordBytes: number; check?: LineCheck }): AsyncGenerator<InputLine> {
  const claims = new Map<string, number>();
  for await (const line of splitLines(source, { maxLineBytes: options.maxRecordBytes })) {
    if (line.blank) continue;
    const decoded = decodeLine(line, options.maxRecordBytes);
    options.check?.line(line, decoded);
    const id = options.check ? undefined : claimedCustomIdOf(decoded);
    let dupOfLine: number | null = null;
    if (id !== undefined) {
      const first = claims.get(id);
      if (first === undefined) claims.set(id, line.lineNo);
      else dupOfLine = first;
    }
    yield { lineNo: line.lineNo, length: line.length, bytes: line.bytes, dupOfLine };
  }
  options.check?.end();
}
