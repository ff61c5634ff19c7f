/**
 * The worker side of the record thread (record-thread.ts): reads one batch line on its own, as
 * the runner would on the main thread (readRecord, or readEndpointLine for an OpenAI-dialect
 * batch), and answers with what it found. Errors travel as data (ErrorData) and a call with its
 * written key orders and number texts (key-order.ts); record-thread.ts rebuilds them.
 */
import type { DialectCall, WireError } from '../api/dialect.js';
import type { ApiError, ErrorCode } from '../api/errors.js';
import type { NormalizedDecideRequest } from '../api/validate.js';
import { giveWrittenForms, writtenFormsOf, type WrittenForms } from '../domain/key-order.js';
import { serveRequests } from '../support/thread-client.js';
import type { RawLine } from './jsonl-lines.js';
import { readEndpointLine } from './openai/lines.js';
import { readRecord, type RecordReadContext } from './records.js';

/** An ApiError as data (a thread's message carries no class). */
export interface ErrorData {
  code: ErrorCode;
  message: string;
  status: number;
  field?: string;
}

export interface LineRequest {
  line: RawLine;
  ctx: RecordReadContext;
  /** The written forms of ctx.formQuestions. */
  formForms: WrittenForms;
}

export type LineReply =
  | { record: { customId: string | null; error: ErrorData } | { customId: string; request: NormalizedDecideRequest } }
  | { endpoint: { kind: 'broken'; customId: string | null; error: ErrorData } }
  | { endpoint: { kind: 'refused'; customId: string; wire: WireError; requestId: string } }
  | { endpoint: { kind: 'call'; customId: string; call: DialectCall }; forms: WrittenForms };

function errorData(err: ApiError): ErrorData {
  return { code: err.code, message: err.message, status: err.status, ...(err.field !== undefined ? { field: err.field } : {}) };
}

serveRequests(({ line, ctx, formForms }: LineRequest): LineReply => {
  // The form's questions keep their written key order here too.
  if (ctx.formQuestions !== undefined) giveWrittenForms(ctx.formQuestions, formForms);
  if (ctx.endpoint !== undefined) {
    const read = readEndpointLine(line, { ...ctx, endpoint: ctx.endpoint });
    if (read.kind === 'broken') return { endpoint: { ...read, error: errorData(read.error) } };
    if (read.kind === 'refused') return { endpoint: read };
    return { endpoint: read, forms: writtenFormsOf(read.call) };
  }
  const read = readRecord(line, ctx);
  return { record: 'error' in read ? { customId: read.customId, error: errorData(read.error) } : read };
});
