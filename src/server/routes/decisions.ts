/**
 * POST /v1/decisions: OpenAI's decisions format (src/api/openai), the endpoint the official SDKs
 * call with `client.decisions.create`, answered by the same service path as /v1/decide. Errors
 * come in OpenAI's shape so the SDK raises its typed errors, also for another method on the path
 * (405) and any path below it (404), as OpenAI names an unknown route: "Invalid URL (GET /v1/...)".
 */
import type { FastifyPluginAsync, HTTPMethods } from 'fastify';

import type { Dialect } from '../../api/dialect.js';
import { DecisionCreateSchema, DecisionSchema, OpenAiErrorSchema, openAiDecisions } from '../../api/openai/index.js';
import { dialectErrorHandler, registerDialectRoute, sendWire, type DialectRouteOptions } from './dialect-route.js';

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
  // Another method on the path, or a path below it: OpenAI's error shape, after authentication as
  // every /v1 route (its failures, and a body that does not parse, in the same shape).
  const routeError = (status: 404 | 405, methods: HTTPMethods[], url: string) =>
    app.route({
      method: methods,
      url,
      schema: { hide: true },
      errorHandler: dialectErrorHandler(openAiDecisions as Dialect),
      handler: async (request, reply) => {
        const path = request.url.split('?')[0]!;
        const shown = path.length > 200 ? `${path.slice(0, 200)}...` : path;
        const message =
          status === 405
            ? `Invalid URL (${request.method} ${shown}): ${openAiDecisions.path} takes POST only`
            : `Invalid URL (${request.method} ${shown}): no route below ${openAiDecisions.path}; send POST ${openAiDecisions.path}`;
        return sendWire(reply, {
          status,
          body: { error: { message, type: 'invalid_request_error', param: null, code: null } },
          headers: status === 405 ? { allow: 'POST' } : {},
        });
      },
    });
  routeError(405, ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], '/decisions');
  routeError(404, ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], '/decisions/*');
};
