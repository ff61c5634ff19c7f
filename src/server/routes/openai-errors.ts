/**
 * The error handler of the OpenAI-dialect routes (/v1/files*, a JSON `POST /v1/batches`): every
 * failure, the shared hooks' included (authentication, rate limit, body parsing), as OpenAI's
 * `{"error": {message, type, param, code}}` with the statuses the `openai` SDKs type.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

import { OpenAiWireError, toOpenAiWire } from '../../batches/openai/errors.js';
import { httpError } from '../errors.js';
import { sendWire } from './dialect-route.js';

export function sendOpenAiError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const wire = toOpenAiWire(err instanceof OpenAiWireError ? err : httpError(err, request), 'id');
  if (wire.status >= 500) request.log.error({ err }, 'request failed');
  else request.log.info({ status: wire.status }, 'request rejected');
  return sendWire(reply, wire);
}

export function openAiErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendOpenAiError(err, request, reply);
}

/** A request with a JSON body (OpenAI's batch creation), as opposed to our multipart form. */
export function isJsonRequest(request: FastifyRequest): boolean {
  return /^application\/json\b/i.test(String(request.headers['content-type'] ?? ''));
}
