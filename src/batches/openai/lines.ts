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

import type { WireError } from '../../api/dialect.js';
import { ApiError } from '../../api/errors.js';
import type { DecideResponse } from '../../api/schemas.js';
import type { NormalizedDecideRequest } from '../../api/validate.js';
import { jsonInOrder } from '../../domain/key-order.js';
import { decodeLine, DEFAULT_MAX_RECORD_BYTES, MAX_CUSTOM_ID_LENGTH, type RawLine, type RecordContext } from '../records.js';
import { batchEndpoint } from './endpoints.js';

const ENVELOPE_FIELDS = ['custom_id', 'method', 'url', 'body'];

/** An outcome as the chunk scorer has it (see RecordOutcome). */
type Outcome = { ok: true; response: DecideResponse } | { ok: false; error: ApiError };

/** One parsed line: the request to score (absent when the line already failed) and its row maker. */
export interface EndpointLine {
  customId: string | null;
  request?: NormalizedDecideRequest;
  /** Why the line failed before scoring (counts it as failed). */
  error?: ApiError;
  /** The output-file or error-file line for this line's outcome (with its newline). */
  format(outcome: Outcome): string;
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

function row(customId: string | null, response: { status_code: number; request_id: string; body: unknown } | null, error: { code: string; message: string } | null): string {
  // The body's keys in the caller's order, as the endpoint writes them synchronously.
  return `${jsonInOrder({ id: `batch_req_${ulid()}`, custom_id: customId, response, error })}\n`;
}

function wireRow(customId: string | null, wire: WireError, requestId: string): string {
  return row(customId, { status_code: wire.status, request_id: requestId, body: wire.body }, null);
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
    const got = typeof id !== 'string' ? typeName(id) : id.length === 0 ? 'an empty string' : `more than ${MAX_CUSTOM_ID_LENGTH} characters`;
    return `custom_id: required, a string of 1 to ${MAX_CUSTOM_ID_LENGTH} characters unique within the file (got ${got})`;
  }
  if (value.method !== 'POST') return `method: must be "POST", got ${JSON.stringify(value.method ?? null)?.slice(0, 60)}`;
  if (value.url !== endpoint) {
    return `url: must equal the batch's endpoint ${JSON.stringify(endpoint)}, got ${typeof value.url === 'string' ? JSON.stringify(value.url.slice(0, 200)) : typeName(value.url)}`;
  }
  if (typeof value.body !== 'object' || value.body === null || Array.isArray(value.body)) {
    return `body: required, the ${endpoint} request as a JSON object (got ${typeName(value.body)})`;
  }
  return null;
}

/** Parses one non-blank line of an OpenAI-dialect batch; never throws. Claims its custom_id in ctx.seen. */
export function parseEndpointLine(line: RawLine, ctx: RecordContext & { endpoint: string }): EndpointLine {
  const adapter = batchEndpoint(ctx.endpoint);
  const broken = (customId: string | null, error: ApiError): EndpointLine => ({
    customId,
    error,
    format: () => row(customId, null, { code: error.code, message: error.message }),
  });
  if (!adapter) return broken(null, new ApiError('server_error', `line ${line.lineNo}: the batch's endpoint ${ctx.endpoint} is not served`));
  const decoded = decodeLine(line, ctx.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES);
  if ('error' in decoded) return broken(null, decoded.error);
  const value = decoded.value;
  const problem = envelopeProblem(value, ctx.endpoint);
  const customId = typeof value.custom_id === 'string' ? value.custom_id : null;
  if (problem) return broken(problem.startsWith('custom_id') ? null : customId, new ApiError('invalid_question', `line ${line.lineNo}: ${problem}`));
  const id = customId!;
  const first = ctx.seen.get(id);
  if (first !== undefined && first !== line.lineNo) {
    return broken(id, new ApiError('invalid_question', `line ${line.lineNo}: custom_id ${JSON.stringify(id)} is a duplicate of line ${first}`));
  }
  ctx.seen.set(id, line.lineNo);

  // The endpoint refused the request (its 4xx): an error-file row with its status and body.
  const refused = (wire: WireError, requestId = `req_${ulid()}`): EndpointLine => ({
    customId: id,
    error: new ApiError('invalid_question', `refused with status ${wire.status}`),
    format: () => wireRow(id, withRequestId(wire, requestId), requestId),
  });
  const parsed = adapter.parse(value.body, ctx.limits);
  if (!parsed.ok) return refused(parsed.error);
  const model = parsed.request.model;
  if (model !== ctx.model && model !== ctx.requestedModel) {
    const requestId = `req_${ulid()}`;
    const wire = adapter.error(
      new ApiError(
        'invalid_question',
        `model: ${JSON.stringify(String(model).slice(0, 200))} differs from the batch's model ${JSON.stringify(ctx.requestedModel ?? ctx.model)} (the model of its first line); a batch runs one model`,
      ),
      requestId,
    );
    return refused(wire, requestId);
  }
  return {
    customId: id,
    request: { ...parsed.request, model: ctx.model },
    format: (outcome) => {
      if (outcome.ok) {
        return row(id, { status_code: 200, request_id: outcome.response.id, body: parsed.render(outcome.response) }, null);
      }
      const requestId = `req_${ulid()}`;
      return wireRow(id, adapter.error(outcome.error, requestId), requestId);
    },
  };
}

/** Our error bodies carry the request id; a body parsed before the id existed gets it filled in. */
function withRequestId(wire: WireError, requestId: string): WireError {
  const body = wire.body as { request_id?: unknown } | null;
  if (body && typeof body === 'object' && body.request_id === '') return { ...wire, body: { ...body, request_id: requestId } };
  return wire;
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
