/**
 * The error handler of the batch routes both dialects share (GET /v1/batches, GET /v1/batches/{id},
 * POST /v1/batches/{id}/cancel). Which dialect a job speaks is only known once it is found, and the
 * listing holds jobs of both, so their errors (a miss, a bad ?limit or ?after, authentication, the
 * rate limit) answer in both shapes at once: ours, `{code, message, request_id}`, with OpenAI's
 * `{"error": {message, type, param, code}}` beside it. Our clients read `code` and `message`; the
 * `openai` SDKs read `body.error` for their typed errors (`type`, `param`, `code`), and a 429 has
 * both `retry-after` and `retry-after-ms`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

import { decideError } from '../../api/decide/index.js';
import { toOpenAiWire } from '../../batches/openai/errors.js';
import { httpError, sendWire } from '../errors.js';
import { logErrorAnswer } from '../request-log.js';

export function sendBatchLookupError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const mapped = httpError(err, request);
  logErrorAnswer(request, mapped.status, mapped.code, err);
  reply.header('x-request-id', request.id);
  const ours = decideError(mapped, { requestId: request.id });
  const openai = toOpenAiWire(mapped);
  const body = { ...(ours.body as object), error: (openai.body as { error: unknown }).error };
  return sendWire(reply, { status: ours.status, body, headers: { ...openai.headers, ...ours.headers } });
}
