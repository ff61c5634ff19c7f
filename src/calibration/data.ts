/**
 * The calibration data file: JSONL, one decide request plus its truth per line,
 *   {"state": ..., "questions": {...}, "expected": {"<question id>": "<option key>"}}
 * (`model` and `custom_id` may be present and are ignored: `--model` names the model; so may
 * `label_mass`, checked as /v1/decide checks it and not used).
 *
 * A line that is not a JSON object (a key given twice included, as /v1/decide refuses it), has no
 * usable `expected`, or is not a valid decide request is an error: the whole file is refused, listing the bad lines, so a fit never silently drops data. An
 * `expected` value that names no option of its question (or names a question that is not there)
 * is only reported: that pair is left out and the rest of the row is used.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';

import { ApiError } from '../api/errors.js';
import { parseJsonText } from '../api/json-text.js';
import { scoreLevelValue, validateDecideRequest, type NormalizedDecideRequest } from '../api/validate.js';
import { writtenNumberText } from '../domain/key-order.js';

export interface CalibrationRow {
  /** 1-based line number in the file. */
  line: number;
  /** Bytes of the line (a line over the /v1/decide body limit is reported and left out). */
  bytes: number;
  request: NormalizedDecideRequest;
  /** Question id -> index of the expected option (in the question's option order). */
  expected: Map<string, number>;
}

export interface Unusable {
  line: number;
  question: string;
  reason: string;
}

export interface CalibrationData {
  rows: CalibrationRow[];
  sha256: string;
  bytes: number;
  /** Expected labels left out, with the reason. */
  unusable: Unusable[];
}

export class CalibrationDataError extends Error {
  constructor(
    message: string,
    /** The lines that refused the file, each with why; empty when the file as a whole was refused. */
    readonly badLines: Array<{ line: number; error: string }> = [],
  ) {
    super(message);
  }
}

const MAX_LISTED = 10;
// label_mass: a decide request's and a batch record's diagnostic, so logged requests can be
// labelled as they are; checked as /v1/decide checks it, and not used (it adds a figure to answers,
// it changes no probability).
const FIELDS = new Set(['state', 'questions', 'expected', 'model', 'custom_id', 'label_mass']);

/**
 * The index of the option an `expected` value names, or -1. An option key always matches; besides,
 * a score level may be written as a number or as another spelling of its value (3, "3.0" for "3"),
 * and a noul answer as a boolean (true for "yes"), as labelled data often has them. A score label
 * names a level exactly as /v1/decide compares levels (scoreLevelValue: exact decimals, never
 * through a double, and only the spellings it accepts for score keys), so
 * "100000000000000000001" is not "100000000000000000000" and "0x3" or "1e0" names no level.
 * `numberText` is the text a JSON number label was written with (its double may have lost digits).
 */
export function expectedOptionIndex(
  question: NormalizedDecideRequest['questions'][number],
  label: unknown,
  numberText: string | undefined = typeof label === 'number' ? String(label) : undefined,
): number {
  const byKey = typeof label === 'string' ? question.options.findIndex((o) => o.key === label) : -1;
  if (byKey >= 0) return byKey;
  if (question.type === 'score') {
    const spelling = typeof label === 'string' ? label : typeof label === 'number' ? numberText : undefined;
    const value = spelling === undefined ? undefined : scoreLevelValue(spelling);
    if (value !== undefined) return question.options.findIndex((o) => scoreLevelValue(o.key) === value);
  }
  if (question.type === 'noul' && typeof label === 'boolean') return question.options.findIndex((o) => o.key === (label ? 'yes' : 'no'));
  return -1;
}

/** Reads and checks a calibration file; throws CalibrationDataError naming the bad lines. */
export async function readCalibrationData(file: string, model: string): Promise<CalibrationData> {
  let buf: Buffer;
  try {
    buf = await readFile(file);
  } catch (err) {
    throw new CalibrationDataError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const text = buf.toString('utf8').replace(/^\uFEFF/, '');
  const errors: Array<{ line: number; error: string }> = [];
  const rows: CalibrationRow[] = [];
  const unusable: Unusable[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === '') return;
    // The /v1/decide body parser: a key given twice is refused, never "last wins".
    const parsed = parseJsonText(raw);
    if (!parsed.ok) {
      errors.push({ line, error: parsed.reason });
      return;
    }
    const value = parsed.value;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      errors.push({ line, error: 'must be a JSON object {"state", "questions", "expected"}' });
      return;
    }
    const record = value as Record<string, unknown>;
    const unknown = Object.keys(record).filter((k) => !FIELDS.has(k));
    if (unknown.length > 0) {
      errors.push({ line, error: `unknown field ${JSON.stringify(unknown[0])} (a row is state, questions, expected; model, custom_id, label_mass are allowed)` });
      return;
    }
    const expected = record.expected;
    if (typeof expected !== 'object' || expected === null || Array.isArray(expected) || Object.keys(expected).length === 0) {
      errors.push({ line, error: 'expected: required, an object from question id to the right option key' });
      return;
    }
    let request: NormalizedDecideRequest;
    try {
      const { labelMass: _ignored, ...checked } = validateDecideRequest({ model, state: record.state, questions: record.questions, label_mass: record.label_mass });
      request = checked;
    } catch (err) {
      errors.push({ line, error: err instanceof ApiError ? err.message : String(err) });
      return;
    }
    const map = new Map<string, number>();
    for (const [qid, label] of Object.entries(expected as Record<string, unknown>)) {
      const question = request.questions.find((q) => q.id === qid);
      if (!question) {
        unusable.push({ line, question: qid, reason: `no question "${qid}" in this row` });
        continue;
      }
      // A JSON number as it was written: its double may have lost digits (100000000000000000001).
      const numberText = typeof label === 'number' ? (writtenNumberText(expected, qid) ?? String(label)) : undefined;
      const index = expectedOptionIndex(question, label, numberText);
      if (index < 0) {
        const keys = question.options.map((o) => o.key).join(', ');
        const shown = typeof label === 'string' ? JSON.stringify(label.slice(0, 60)) : (numberText ?? JSON.stringify(label) ?? String(label)).slice(0, 60);
        const spelling = typeof label === 'string' ? label : numberText;
        const why =
          question.type === 'score' && spelling !== undefined && scoreLevelValue(spelling) === undefined
            ? 'is not a score level as /v1/decide writes them ("0", "2.5", "-1": no spaces, "+", hex or exponent)'
            : 'is not an option';
        unusable.push({ line, question: qid, reason: `${shown} ${why} (options: ${keys})` });
        continue;
      }
      map.set(qid, index);
    }
    rows.push({ line, bytes: Buffer.byteLength(raw), request, expected: map });
  });
  if (errors.length > 0) {
    const listed = errors.slice(0, MAX_LISTED).map((e) => `line ${e.line}: ${e.error}`).join('\n  ');
    const more = errors.length > MAX_LISTED ? `\n  ... and ${errors.length - MAX_LISTED} more` : '';
    throw new CalibrationDataError(`${file}: ${errors.length} bad line${errors.length > 1 ? 's' : ''}; nothing was fitted:\n  ${listed}${more}`, errors);
  }
  if (rows.length === 0) throw new CalibrationDataError(`${file} has no rows (one JSON object per line: state, questions, expected)`);
  return { rows, sha256: createHash('sha256').update(buf).digest('hex'), bytes: buf.length, unusable };
}
