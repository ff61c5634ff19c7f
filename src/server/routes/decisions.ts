/**
 * POST /v1/decisions: OpenAI's decisions format (src/api/openai), the endpoint the official SDKs
 * call with `client.decisions.create`, answered by the same service path as /v1/decide. Errors
 * come in OpenAI's shape so the SDK raises its typed errors.
 */
import type { FastifyPluginAsync } from 'fastify';

import { DecisionCreateSchema, DecisionSchema, OpenAiErrorSchema, openAiDecisions } from '../../api/openai/index.js';
import { registerDialectRoute, type DialectRouteOptions } from './dialect-route.js';

const error = (description: string) => ({ ...OpenAiErrorSchema, description });

export const decisionsRoutes: FastifyPluginAsync<DialectRouteOptions> = async (app, options) => {
  registerDialectRoute(app, openAiDecisions, '/decisions', options, {
    schema: {
      summary: 'OpenAI decisions: predicate, choice and score questions about one input',
      description: 'Drop-in for client.decisions.create; what differs from OpenAI is in docs/compatibility.md.',
      operationId: 'createDecision',
      tags: ['compatibility'],
      body: DecisionCreateSchema,
      response: {
        200: DecisionSchema,
        400: error('invalid_request_error: param names the field; context_length_exceeded for a state over the token limit'),
        401: error('invalid_api_key'),
        404: error('model_not_found'),
        429: error('rate_limit_exceeded: see Retry-After (seconds) and retry-after-ms'),
        500: error('server_error: retry with backoff'),
      },
    },
  });
};
