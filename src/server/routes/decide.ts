/**
 * POST /v1/decide. The route schema documents the contract (OpenAPI) but does not validate: the body
 * goes as parsed to DecisionService.decide(), whose validator (src/api/validate.ts) is the one
 * source of the rules and of the `invalid_question` messages, for HTTP, batches and library alike.
 * The response is serialized as the service produced it, with keys in the order it recorded
 * (jsonInOrder: answers by question id and probs by option in the caller's order, integer-like keys included).
 */
import type { FastifyPluginAsync } from 'fastify';

import { ref } from '../../api/schemas.js';
import { jsonInOrder } from '../../domain/key-order.js';
import type { DecisionService } from '../../service/decision-service.js';

export interface DecideRouteOptions {
  service: DecisionService;
  /** Request body limit in bytes (413 state_too_long above it). */
  bodyLimit: number;
}

const errors = (codes: string) => ref('Error', codes);

export const decideRoutes: FastifyPluginAsync<DecideRouteOptions> = async (app, { service, bodyLimit }) => {
  app.post(
    '/decide',
    {
      bodyLimit,
      schema: {
        summary: 'Decide: calibrated probabilities for typed questions about one state',
        operationId: 'decide',
        tags: ['decide'],
        body: ref('DecideRequest'),
        response: {
          200: ref('DecideResponse'),
          400: errors('invalid_question: malformed JSON, a wrong field type, or a question that breaks a rule'),
          401: errors('invalid_key'),
          404: errors('not_found: the model is not installed (the message lists the installed ids)'),
          413: errors('state_too_long: the state exceeds the token limit, or the body the byte limit'),
          429: errors('rate_limited: see the Retry-After header (integer seconds)'),
          500: errors('server_error: retry with backoff'),
        },
      },
      // The schema above is for the OpenAPI document only (see the file comment).
      validatorCompiler: () => () => true,
      serializerCompiler: () => (data) => jsonInOrder(data),
    },
    async (request) => service.decide(request.body, { requestId: request.id }),
  );
};
