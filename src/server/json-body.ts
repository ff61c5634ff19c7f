/**
 * A request body read as JSON: UTF-8 (a byte-order mark dropped), each key once per object, key
 * order and number texts kept (src/api/json-text.ts). Failures name the problem and never echo the
 * body. Shared by the server's JSON parser and the body thread (body-worker.ts), so a body reads
 * the same way on either.
 */
import { isUtf8 } from 'node:buffer';

import type { FastifyRequest } from 'fastify';

import { ApiError } from '../api/errors.js';
import { parseJsonText } from '../api/json-text.js';

/** On failure, `path`: where in the body, as it is written (parseJsonText's path), when the JSON itself is fine. */
export type JsonBody = { ok: true; value: unknown } | { ok: false; message: string; path?: string };

export function readJsonBody(body: Uint8Array): JsonBody {
  if (body.length === 0) return { ok: false, message: 'request body: empty; send a JSON object' };
  if (!isUtf8(body)) return { ok: false, message: 'request body: not valid UTF-8' };
  let text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const parsed = parseJsonText(text);
  if (parsed.ok) return parsed;
  return { ok: false, message: `request body: ${parsed.reason}`, ...(parsed.path === undefined ? {} : { path: parsed.path }) };
}

/**
 * A body read whole that is not JSON, handed on as the request's body instead of failing the parser:
 * fastify closes the connection after a parser error (the client might still be sending), which
 * would leave a request pipelined behind this one unanswered. rejectUnreadableBody() throws its
 * error before validation, so the route's error handler answers it as before.
 */
export class UnreadableBody {
  constructor(readonly error: ApiError) {}
}

/** The server's parser of `application/json` bodies (fastify's content type parser, parseAs buffer). */
export function parseJsonBody(_request: FastifyRequest, body: Buffer, done: (err: Error | null, value?: unknown) => void): void {
  const read = readJsonBody(body);
  done(null, read.ok ? read.value : new UnreadableBody(unreadableBodyError(read)));
}

/** The preValidation hook that answers an UnreadableBody with its error (through the route's error handler). */
export async function rejectUnreadableBody(request: FastifyRequest): Promise<void> {
  if (request.body instanceof UnreadableBody) throw request.body.error;
}

/** The error of a body that does not read as JSON; `field` is the place in the body, where one is known. */
export function unreadableBodyError(read: Extract<JsonBody, { ok: false }>): ApiError {
  return new ApiError('invalid_question', read.message, read.path === undefined ? {} : { field: read.path });
}
