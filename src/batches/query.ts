/**
 * HTTP inputs of the batch endpoints that the routes pass through unparsed: batch ids, the list
 * query (?limit, ?after) and the form's questions field. Bad values are 400 invalid_question with
 * the rule in the message.
 */
import { ApiError } from '../api/errors.js';
import { parseJsonText } from '../api/json-text.js';
import { normalizeQuestions, type ValidationLimits } from '../api/validate.js';

/** A list endpoint's ?limit: its default and its most. */
export interface ListLimit {
  readonly default: number;
  readonly max: number;
}

/** GET /v1/batches (both dialects). */
export const BATCH_LIST_LIMIT: ListLimit = Object.freeze({ default: 20, max: 100 });

/**
 * ?limit as a query string carries it ("1".."max"; digits only) or as a number (the in-process
 * library): the default when absent, null when it is not an integer within the bounds. The caller
 * words the 400 in its own dialect.
 */
export function readListLimit(value: unknown, bounds: ListLimit): number | null {
  if (value === undefined) return bounds.default;
  const limit = typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : typeof value === 'number' ? value : NaN;
  return Number.isInteger(limit) && limit >= 1 && limit <= bounds.max ? limit : null;
}

const BATCH_ID = /^batch_[0-9A-HJKMNP-TV-Z]{26}$/;

export function isBatchId(id: unknown): id is string {
  return typeof id === 'string' && BATCH_ID.test(id);
}

export interface ListQuery {
  limit: number;
  /** The last id of the previous page. */
  after: string | undefined;
}

/** ?limit (BATCH_LIST_LIMIT) and ?after (a batch id), as strings from a query string or numbers. */
export function parseListQuery(query: { limit?: unknown; after?: unknown }): ListQuery {
  const limit = readListLimit(query.limit, BATCH_LIST_LIMIT);
  if (limit === null) throw new ApiError('invalid_question', `limit: must be an integer from 1 to ${BATCH_LIST_LIMIT.max}`, { field: 'limit' });
  let after: string | undefined;
  if (query.after !== undefined) {
    if (!isBatchId(query.after)) {
      throw new ApiError('invalid_question', 'after: must be a batch id (the last id of the previous page)', { field: 'after' });
    }
    after = query.after;
  }
  return { limit, after };
}

/**
 * The questions for records without their own (the form field, or `decide batch --questions`):
 * JSON text, validated as /v1/decide validates questions. Returns the parsed value.
 */
export function parseFormQuestions(text: string, limits?: Partial<ValidationLimits>, source = 'the form field'): unknown {
  const parsed = parseJsonText(text);
  if (!parsed.ok) throw new ApiError('invalid_question', `questions: ${source} must be JSON text (${parsed.reason})`);
  normalizeQuestions(parsed.value, limits);
  return parsed.value;
}

/**
 * A job's stored form questions (the text parseFormQuestions() accepted at creation), parsed as
 * the form was: JSON.parse would put integer-like question ids and option keys first.
 */
export function storedFormQuestions(text: string | null): unknown {
  if (text === null) return undefined;
  const parsed = parseJsonText(text);
  if (!parsed.ok) throw new ApiError('server_error', `the batch's stored questions are not JSON (${parsed.reason})`);
  return parsed.value;
}
