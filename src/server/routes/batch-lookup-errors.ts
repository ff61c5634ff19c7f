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
import type { WireError } from '../../api/dialect.js';
import type { ApiError } from '../../api/errors.js';
import { toOpenAiWire } from '../../batches/openai/errors.js';
import { sendError } from '../errors.js';

function bothShapes(api: ApiError, requestId: string): WireError {
  const ours = decideError(api, { requestId });
  const openai = toOpenAiWire(api);
  const body = { ...(ours.body as object), error: (openai.body as { error: unknown }).error };
  return { status: ours.status, body, headers: { ...openai.headers, ...ours.headers } };
}

export function sendBatchLookupError(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendError(err, request, reply, bothShapes);
}
