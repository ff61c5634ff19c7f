/**
 * What creation checks of an OpenAI batch's input, on each line as the store reads it (the one
 * pass of input-lines.ts, each line decoded once): every non-blank line is a request envelope for
 * the batch's endpoint, with a custom_id not used before; the batch's model is the first such
 * line's `body.model`. What is wrong inside a body (even a key given twice there) is left to the
 * endpoint, line by line, when the job runs (lines.ts). A refused input is a 400 (param
 * input_file_id) listing up to 20 bad lines, thrown after the last line, so the store creates
 * nothing.
 */
import { shownValue } from '../../api/json-value.js';
import type { LineCheck } from '../input-lines.js';
import { decodeLine, type DecodedLine } from '../records.js';
import { splitLines, type RawLine } from '../jsonl-lines.js';
import { unreadableBody } from './envelope-text.js';
import { oaError } from './errors.js';
import { envelopeProblem } from './lines.js';

/** Problems a creation error lists. */
const MAX_LISTED_PROBLEMS = 20;

export class EnvelopeCheck implements LineCheck {
  /** The first request line's body.model, once seen. */
  model: string | undefined;
  private readonly problems: string[] = [];
  private count = 0;
  private duplicates = 0;
  private readonly seen = new Map<string, number>();

  constructor(private readonly endpoint: string) {}

  line(line: RawLine, decoded: DecodedLine): void {
    // A body the endpoint cannot read is that line's error-file entry, not the file's problem.
    const value = 'error' in decoded ? unreadableBody(line.bytes, decoded)?.value : decoded.value;
    if (value === undefined) return this.note((decoded as { error: Error }).error.message);
    const problem = envelopeProblem(value, this.endpoint);
    if (problem) return this.note(`line ${line.lineNo}: ${problem}`);
    const id = value.custom_id as string;
    const first = this.seen.get(id);
    if (first !== undefined) {
      this.duplicates += 1;
      return this.note(`line ${line.lineNo}: custom_id ${JSON.stringify(id.slice(0, 100))} is a duplicate of line ${first}`);
    }
    this.seen.set(id, line.lineNo);
    if (this.model === undefined) {
      const m = (value.body as Record<string, unknown>).model;
      if (typeof m !== 'string' || m === '') this.note(`line ${line.lineNo}: body.model: required, the model that runs the batch (got ${shownValue(m)})`);
      else this.model = m;
    }
  }

  end(): void {
    const { count, problems } = this;
    if (count > 0) {
      const more = count > problems.length ? `; and ${count - problems.length} more` : '';
      throw oaError(
        400,
        `input_file_id: the input file has ${count} invalid line${count === 1 ? '' : 's'}, so no batch was created: ${problems.join('; ')}${more}`,
        'input_file_id',
        this.duplicates === count ? 'duplicate_custom_id' : 'invalid_input_file',
      );
    }
    if (this.model === undefined) throw oaError(400, 'input_file_id: the input file has no request lines', 'input_file_id');
  }

  private note(text: string): void {
    this.count += 1;
    if (this.problems.length < MAX_LISTED_PROBLEMS) this.problems.push(text);
  }
}

/**
 * The model the input's first non-blank line names, when that line is a request envelope for
 * `endpoint` with a body.model; undefined otherwise (the check then refuses the input). Reads only
 * that line of the stream.
 */
export async function firstLineModel(stream: AsyncIterable<Buffer | string>, endpoint: string, maxRecordBytes: number): Promise<string | undefined> {
  for await (const line of splitLines(stream, { maxLineBytes: maxRecordBytes })) {
    if (line.blank) continue;
    const check = new EnvelopeCheck(endpoint);
    check.line(line, decodeLine(line, maxRecordBytes));
    return check.model;
  }
  return undefined;
}
