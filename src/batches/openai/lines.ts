/**
 * The lines of an OpenAI-dialect batch, as OpenAI's Batch API reads and writes them
 * (docs/compatibility.md, "Result lines" and "Sources"):
 *   input   {"custom_id", "method": "POST", "url": <the batch's endpoint>, "body": <that endpoint's request>}
 *   output  {"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}
 * A request the endpoint answered (200) goes to the batch's output file; one it refused (its 4xx,
 * or a 5xx) goes to the error file with that status and the endpoint's own error body. A line that
 * is not a request at all has `response: null` and `error: {code, message}` (creation refuses such
 * files, so only a damaged input gets there). One row per line, written by the same runners as our
 * dialect's rows (chunk-scoring.ts), so crash-resume keeps every custom_id exactly once.
 */
import { ulid } from 'ulid';

import { DECIDE_PATH } from '../../api/decide/index.js';
import type { DialectCall, ErrorContext, ParseContext, WireError } from '../../api/dialect.js';
import { dialectFor } from '../../api/dialects.js';
import { ApiError } from '../../api/errors.js';
import { newRequestId } from '../../api/request-ids.js';
import { jsonType } from '../../api/json-value.js';
import type { NormalizedDecideRequest } from '../../api/validate.js';
import type { DecisionResult } from '../../domain/decision.js';
import { jsonInOrder } from '../../domain/key-order.js';
import { decodeLine, DEFAULT_MAX_RECORD_BYTES, MAX_CUSTOM_ID_LENGTH, namesBatchModel, type RecordContext, type RecordReadContext } from '../records.js';
import { type RawLine } from '../jsonl-lines.js';
import { unreadableBody } from './envelope-text.js';

const ENVELOPE_FIELDS = ['custom_id', 'method', 'url', 'body'];

/** An outcome as the chunk scorer has it (see RecordOutcome). */
type Outcome = { ok: true; result: DecisionResult } | { ok: false; error: ApiError };

/** One parsed line: the request to score (absent when the line already failed) and its row maker. */
export interface EndpointLine {
  customId: string | null;
  request?: NormalizedDecideRequest;
  /** Why the line failed before scoring (counts it as failed). */
  error?: ApiError;
  /** The output-file or error-file line for this line's outcome (with its newline). */
  format(outcome: Outcome): string;
}

function row(customId: string | null, response: { status_code: number; request_id: string; body: unknown } | null, error: { code: string; message: string } | null): string {
  // The body's keys in the caller's order, as the endpoint writes them synchronously.
  return `${jsonInOrder({ id: `batch_req_${ulid()}`, custom_id: customId, response, error })}\n`;
}

function wireRow(customId: string | null, wire: WireError, requestId: string): string {
  return row(customId, { status_code: wire.status, request_id: requestId, body: wire.body }, null);
}

/**
 * What a line's dialect is told: the batch's limits and the line's request id, in the form the
 * synchronous endpoint gives (newRequestId), made on first read: an id is not free at batch
 * rates, and a /v1/decide line that is answered uses its decision id instead.
 */
function lineContext(limits: ParseContext['limits'], endpoint: string): ParseContext & ErrorContext & { readonly requestId: string } {
  let id: string | undefined;
  return {
    limits,
    get requestId() {
      return (id ??= newRequestId('POST', endpoint));
    },
  };
}

/**
 * What is wrong with a line's envelope for a batch calling `endpoint`, or null when it is a
 * request line (the body itself is the endpoint's to judge). Shared by creation and the runners.
 */
export function envelopeProblem(value: Record<string, unknown>, endpoint: string): string | null {
  for (const key of Object.keys(value)) {
    if (!ENVELOPE_FIELDS.includes(key)) return `${JSON.stringify(key.slice(0, 100))}: unknown field (allowed: ${ENVELOPE_FIELDS.join(', ')})`;
  }
  const id = value.custom_id;
  if (typeof id !== 'string' || id.length === 0 || [...id].length > MAX_CUSTOM_ID_LENGTH) {
    const got = typeof id !== 'string' ? jsonType(id) : id.length === 0 ? 'an empty string' : `more than ${MAX_CUSTOM_ID_LENGTH} characters`;
    return `custom_id: required, a string of 1 to ${MAX_CUSTOM_ID_LENGTH} characters unique within the file (got ${got})`;
  }
  if (value.method !== 'POST') return `method: must be "POST", got ${JSON.stringify(value.method ?? null)?.slice(0, 60)}`;
  if (value.url !== endpoint) {
    return `url: must equal the batch's endpoint ${JSON.stringify(endpoint)}, got ${typeof value.url === 'string' ? JSON.stringify(value.url.slice(0, 200)) : jsonType(value.url)}`;
  }
  if (typeof value.body !== 'object' || value.body === null || Array.isArray(value.body)) {
    return `body: required, the ${endpoint} request as a JSON object (got ${jsonType(value.body)})`;
  }
  return null;
}

/**
 * What an OpenAI-dialect line says on its own, before its custom_id is checked against the file's
 * others: not a request line (no claim), a request the endpoint refuses (its error, with the
 * request id the error names), or the endpoint's parsed call.
 */
export type EndpointRead =
  | { kind: 'broken'; customId: string | null; error: ApiError }
  | { kind: 'refused'; customId: string; wire: WireError; requestId: string }
  | { kind: 'call'; customId: string; call: DialectCall };

/**
 * Reads one non-blank line of an OpenAI-dialect batch on its own (pure: a worker thread may run it
 * for a large line, src/batches/record-thread.ts); never throws. endpointLine() then claims its
 * custom_id.
 */
export function readEndpointLine(line: RawLine, ctx: RecordReadContext & { endpoint: string }): EndpointRead {
  const dialect = dialectFor(ctx.endpoint);
  const broken = (customId: string | null, error: ApiError): EndpointRead => ({ kind: 'broken', customId, error });
  if (!dialect) return broken(null, new ApiError('server_error', `line ${line.lineNo}: the batch's endpoint ${ctx.endpoint} is not served`));
  const decoded = decodeLine(line, ctx.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
  const unreadable = unreadableBody(line.bytes, decoded);
  if ('error' in decoded && !unreadable) return broken(null, decoded.error);
  const value = unreadable?.value ?? (decoded as { value: Record<string, unknown> }).value;
  const problem = envelopeProblem(value, ctx.endpoint);
  const customId = typeof value.custom_id === 'string' ? value.custom_id : null;
  if (problem) return broken(problem.startsWith('custom_id') ? null : customId, new ApiError('invalid_question', `line ${line.lineNo}: ${problem}`));
  const id = customId!;

  const wireContext = lineContext(ctx.limits, ctx.endpoint);
  // The endpoint refused the request (its 4xx): an error-file row with its status and body.
  const refused = (wire: WireError): EndpointRead => ({ kind: 'refused', customId: id, wire, requestId: wireContext.requestId });
  if (unreadable) {
    // What the synchronous endpoint answers a body it cannot read as JSON (a key given twice).
    const error = new ApiError('invalid_question', `request body: ${unreadable.bodyReason}`, unreadable.bodyPath === undefined ? {} : { field: unreadable.bodyPath });
    return refused(dialect.error(error, { requestId: wireContext.requestId, unreadableBody: true }));
  }
  // The body as the synchronous endpoint reads it: the same dialect, from the same registry.
  const parsed = dialect.parse(value.body, wireContext);
  if (!parsed.ok) return refused(parsed.error);
  const model = parsed.call.request.model;
  if (!namesBatchModel(model, ctx)) {
    const mismatch = new ApiError(
      'invalid_question',
      `model: ${JSON.stringify(String(model).slice(0, 200))} differs from the batch's model ${JSON.stringify(ctx.requestedModel ?? ctx.model)} (the model of its first line); a batch runs one model`,
      { field: 'model' },
    );
    return refused(dialect.error(mismatch, wireContext));
  }
  return { kind: 'call', customId: id, call: parsed.call };
}

/**
 * The line as its file has it: a line that is not a request claims nothing; a duplicate custom_id
 * fails; the first use of one claims it in ctx.seen. With the row maker of its outcome.
 */
export function endpointLine(read: EndpointRead, lineNo: number, ctx: Pick<RecordContext, 'seen' | 'limits' | 'model'> & { endpoint: string }): EndpointLine {
  const broken = (customId: string | null, error: ApiError): EndpointLine => ({
    customId,
    error,
    format: () => row(customId, null, { code: error.code, message: error.message }),
  });
  if (read.kind === 'broken') return broken(read.customId, read.error);
  const id = read.customId;
  const first = ctx.seen.get(id);
  if (first !== undefined && first !== lineNo) {
    return broken(id, new ApiError('invalid_question', `line ${lineNo}: custom_id ${JSON.stringify(id)} is a duplicate of line ${first}`));
  }
  ctx.seen.set(id, lineNo);
  if (read.kind === 'refused') {
    const { wire, requestId } = read;
    return { customId: id, error: new ApiError('invalid_question', `refused with status ${wire.status}`), format: () => wireRow(id, wire, requestId) };
  }
  const { call } = read;
  const dialect = dialectFor(ctx.endpoint)!;
  const wireContext = lineContext(ctx.limits, ctx.endpoint);
  return {
    customId: id,
    request: { ...call.request, model: ctx.model },
    format: (outcome) => {
      if (outcome.ok) {
        // /v1/decide's request id is its decision id (the body's `id`); the other doors' are their own.
        const requestId = ctx.endpoint === DECIDE_PATH ? outcome.result.id : wireContext.requestId;
        return row(id, { status_code: 200, request_id: requestId, body: dialect.respond(call, outcome.result) }, null);
      }
      return wireRow(id, dialect.error(outcome.error, wireContext), wireContext.requestId);
    },
  };
}

/** Parses one non-blank line of an OpenAI-dialect batch; never throws. Claims its custom_id in ctx.seen. */
export function parseEndpointLine(line: RawLine, ctx: RecordContext & { endpoint: string }): EndpointLine {
  return endpointLine(readEndpointLine(line, ctx), line.lineNo, ctx);
}

/**
 * Whether a stored result row (either dialect) is a failure: ours has `error`, OpenAI's has a
 * response whose status is not 200 (or none). New rows carry their status beside them (chunkRows);
 * this reads it back from the row of a job written before that (sqlite/result-rows.ts).
 */
export function rowFailed(text: string): boolean {
  const value = JSON.parse(text) as { response?: { status_code?: number } | null; error?: unknown };
  if ('response' in value) return value.response?.status_code !== 200;
  return 'error' in value;
}
