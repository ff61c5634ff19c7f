/**
 * Probes, unauthenticated. /healthz: 200 whenever the process answers HTTP (liveness).
 * /readyz: 200 when a model is loaded and the server is not shutting down, else 503 with the
 * error shape (readiness: a load balancer stops sending work).
 * Both answer at once during a long engine call or a model load: nothing here waits for either
 * (DecisionService.metrics() reads counters without the engine's compute lock; docs/api.md).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';

import { ApiError, errorBody } from '../../api/errors.js';
import { ErrorSchema } from '../../api/schemas.js';
import type { DecisionService } from '../../service/decision-service.js';

export interface HealthRouteOptions {
  service: DecisionService;
  /** True once shutdown has begun. */
  isDraining: () => boolean;
}

export const healthRoutes: FastifyPluginAsync<HealthRouteOptions> = async (app, { service, isDraining }) => {
  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: {
        summary: 'Liveness',
        tags: ['health'],
        security: [],
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: { public: true },
      schema: {
        summary: 'Readiness: 200 when a model is loaded, else 503',
        tags: ['health'],
        security: [],
        response: {
          200: Type.Object({ status: Type.Literal('ready'), models: Type.Array(Type.String()) }),
          503: ErrorSchema,
        },
      },
    },
    async (request, reply) => {
      const notReady = isDraining() ? 'the server is shutting down' : !service.isReady() ? 'no model is loaded' : undefined;
      if (notReady) {
        // The error shape; the code list has no better fit than server_error.
        return reply.code(503).send(errorBody(new ApiError('server_error', notReady), request.id));
      }
      const models = (await service.metrics()).models.map((m) => m.id);
      return { status: 'ready' as const, models };
    },
  );
};

