/**
 * Batch lines of OFF_THREAD_BODY_BYTES or more read in a worker thread, shorter ones at once: a
 * line is a request of up to 1 MiB, and a JSON-object state that large takes hundreds of
 * milliseconds to parse and check, during which a server running the batch would answer nothing
 * (the health probes included). The line is read on its own there (readRecord, readEndpointLine);
 * its custom_id is checked against the file's other lines here, in line order (claimRecord,
 * endpointLine), so the rows are those the main thread alone would give. One thread per process
 * (src/support/thread-client.ts), idle when no batch runs. A line the thread fails (it died) is
 * read here.
 */
import { OFF_THREAD_BODY_BYTES } from '../api/body-limit.js';
import { ApiError } from '../api/errors.js';
import { giveWrittenForms, writtenFormsOf, type WrittenForms } from '../domain/key-order.js';
import { ThreadClient } from '../support/thread-client.js';
import type { RawLine } from './jsonl-lines.js';
import { endpointLine, parseEndpointLine, type EndpointLine, type EndpointRead } from './openai/lines.js';
import { claimRecord, parseRecord, type ParsedRecord, type RecordContext, type RecordRead } from './records.js';
import type { ErrorData, LineReply, LineRequest } from './record-worker.js';

const lines = new ThreadClient<LineRequest, LineReply>(import.meta.url, 'record-worker');
let linesRead = 0;

/**
 * Starts the thread now (src/support/thread-client.ts, start()): a server or `decide batch` meets
 * a failure to make it at its start, not at the first large line.
 */
export function startRecordThread(): Promise<void> {
  return lines.start();
}

/** Lines read in the thread since the process started, and those waiting for it or being read now (for /metrics). */
export function recordThreadStats(): { linesRead: number; inProgress: number } {
  return { linesRead, inProgress: lines.inProgress };
}

const apiError = (e: ErrorData) => new ApiError(e.code, e.message, { status: e.status, ...(e.field !== undefined ? { field: e.field } : {}) });

/** Whether the line is read in the thread. */
function large(line: RawLine): boolean {
  return line.bytes !== null && line.bytes.length >= OFF_THREAD_BODY_BYTES;
}

/** The written forms of a job's form questions, found once per job (every large line sends them). */
const formFormsOf = new WeakMap<object, WrittenForms>();
function formForms(formQuestions: unknown): WrittenForms {
  if (typeof formQuestions !== 'object' || formQuestions === null) return [];
  let forms = formFormsOf.get(formQuestions);
  if (!forms) formFormsOf.set(formQuestions, (forms = writtenFormsOf(formQuestions)));
  return forms;
}

/** The thread's reading of the line; undefined when the thread failed it. */
async function readInThread(line: RawLine, ctx: RecordContext): Promise<LineReply | undefined> {
  const { seen: _claims, ...readContext } = ctx;
  try {
    return await lines.call({ line, ctx: readContext, formForms: formForms(ctx.formQuestions) });
  } catch {
    return undefined;
  } finally {
    linesRead += 1;
  }
}

/** parseRecord(), a large line read in the thread. */
export async function parseRecordOffMain(line: RawLine, ctx: RecordContext): Promise<ParsedRecord> {
  if (!large(line)) return parseRecord(line, ctx);
  const reply = await readInThread(line, ctx);
  // The thread failed (it died, say): the line is read here, late rather than lost.
  if (!reply || !('record' in reply)) return parseRecord(line, ctx);
  const r = reply.record;
  const read: RecordRead = 'request' in r ? r : r.customId === null ? { customId: null, error: apiError(r.error) } : { customId: r.customId, error: apiError(r.error) };
  return claimRecord(read, line.lineNo, ctx.seen);
}

/** parseEndpointLine() of an OpenAI-dialect batch's line, a large one read in the thread. */
export async function parseEndpointLineOffMain(line: RawLine, ctx: RecordContext & { endpoint: string }): Promise<EndpointLine> {
  if (!large(line)) return parseEndpointLine(line, ctx);
  const reply = await readInThread(line, ctx);
  if (!reply || !('endpoint' in reply)) return parseEndpointLine(line, ctx);
  const e = reply.endpoint;
  let read: EndpointRead;
  if (e.kind === 'broken') read = { ...e, error: apiError(e.error) };
  else if (e.kind === 'call') {
    giveWrittenForms(e.call, 'forms' in reply ? reply.forms : []);
    read = e;
  } else read = e;
  return endpointLine(read, line.lineNo, ctx);
}
