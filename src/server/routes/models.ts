/**
 * GET /v1/models: the installed model ids, their aliases, which are loaded and how each is
 * calibrated; in the same body and headers, System One's form of the list (`models`,
 * x-typesafe-request-id), so that its clients can list models too. GET /v1/models/{id}: one of them (an alias answers with the version it resolves to).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';

import { ApiError } from '../../api/errors.js';
import { ref } from '../../api/schemas.js';
import { TYPESAFE_REQUEST_ID_HEADER } from '../../api/systemone/index.js';
import type { DecisionService } from '../../service/decision-service.js';
import { pathForMessage, sendError } from '../errors.js';
import { typesafeRequestId } from '../request-id.js';

export const modelRoutes: FastifyPluginAsync<{ service: DecisionService }> = async (app, { service }) => {
  app.get(
    '/models',
    {
      schema: {
        summary: 'List the installed models',
        operationId: 'listModels',
        tags: ['models'],
        response: { 200: ref('ModelListing'), 401: ref('Error', 'invalid_key'), 429: ref('Error', 'rate_limited'), 500: ref('Error', 'server_error') },
      },
      // System One names every answer of its paths, errors included (the body stays ours).
      errorHandler: (err, request, reply) => sendError(err, request, reply.header(TYPESAFE_REQUEST_ID_HEADER, typesafeRequestId(request.id))),
    },
    async (request, reply) => {
      reply.header(TYPESAFE_REQUEST_ID_HEADER, typesafeRequestId(request.id));
      return service.listModels();
    },
  );
  app.get<{ Params: { id: string } }>(
    '/models/:id',
    {
      schema: {
        summary: 'One installed model (an alias answers with the version it resolves to)',
        operationId: 'getModel',
        tags: ['models'],
        params: Type.Object({ id: Type.String({ description: 'Model id or alias.' }) }),
        response: {
          200: ref('Model'),
          401: ref('Error', 'invalid_key'),
          404: ref('Error', 'not_found: no such model'),
          429: ref('Error', 'rate_limited'),
          500: ref('Error', 'server_error'),
        },
      },
    },
    async (request) => {
      // `/v1/models/` (a trailing slash) names no model: said as the unknown route it is.
      if (request.params.id === '') throw new ApiError('not_found', `no route GET ${pathForMessage(request)}: GET /v1/models lists the models, GET /v1/models/{id} names one`);
      return service.describeModel(request.params.id);
    },
  );
};
