/**
 * The error handler of the OpenAI-dialect routes (/v1/files*, a JSON `POST /v1/batches`): every
 * failure, the shared hooks' included (authentication, rate limit, body parsing), as OpenAI's
 * `{"error": {message, type, param, code}}` with the statuses the `openai` SDKs type.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';

import { errorCodeOfStatus } from '../../api/errors.js';
import { oaError, OpenAiWireError, toOpenAiWire } from '../../batches/openai/errors.js';
import { httpError, sendWire } from '../errors.js';
import { logErrorAnswer } from '../request-log.js';

/**
 * A JSON body over the route's limit: on these routes no state or file is in a JSON body (the
 * requests go in an uploaded file), so it is not the body-limit message /v1/decide and the
 * decisions dialect give (a state to trim, `param: "input"`), nor a file over the batch limits.
 */
function bodyTooLarge(err: unknown, request: FastifyRequest): OpenAiWireError | undefined {
  if ((err as { code?: unknown })?.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') return undefined;
  const limit = request.routeOptions?.bodyLimit;
  return oaError(
    413,
    `request body is larger than ${limit ? `${limit} bytes` : 'the limit'}: a JSON body here holds only a few fields; the requests go in a JSONL file uploaded with POST /v1/files`,
  );
}

export function sendOpenAiError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const known = err instanceof OpenAiWireError ? err : bodyTooLarge(err, request);
  const api = known ? undefined : httpError(err, request);
  const wire = toOpenAiWire(known ?? api, 'id');
  // Logged with our code, as on every route: an error made in OpenAI's words has it by its status.
  logErrorAnswer(request, wire.status, api?.code ?? errorCodeOfStatus(wire.status), err);
  return sendWire(reply, wire);
}

export function openAiErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendOpenAiError(err, request, reply);
}

/** A request with a JSON body (OpenAI's batch creation), as opposed to our multipart form. */
export function isJsonRequest(request: FastifyRequest): boolean {
  return /^application\/json\b/i.test(String(request.headers['content-type'] ?? ''));
}
