/**
 * A request body read as JSON: UTF-8 (a byte-order mark dropped), each key once per object, key
 * order and number texts kept (src/api/json-text.ts). Failures name the problem and never echo the
 * body. Shared by the server's JSON parser and the body thread (body-worker.ts), so a body reads
 * the same way on either.
 */
import { isUtf8 } from 'node:buffer';

import type { FastifyRequest } from 'fastify';

import type { ApiError } from '../api/errors.js';
import { readJsonBodyText, unreadableBodyError, type JsonBody } from '../api/json-text.js';

export function readJsonBody(body: Uint8Array): JsonBody {
  if (body.length === 0) return { ok: false, message: 'request body: empty; send a JSON object' };
  if (!isUtf8(body)) return { ok: false, message: 'request body: not valid UTF-8' };
  return readJsonBodyText(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
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
