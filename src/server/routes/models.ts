/**
 * GET /v1/models: the installed model ids, their aliases, which are loaded and how each is
 * calibrated. GET /v1/models/{id}: one of them (an alias answers with the version it resolves to).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';

import { ErrorSchema } from '../../api/schemas.js';
import type { DecisionService } from '../../service/decision-service.js';

export const ModelSchema = Type.Object({
  id: Type.String({ description: 'Dated model id, e.g. svc-alpha-2026-10.' }),
  object: Type.Literal('model'),
  alias: Type.Optional(Type.String({ description: 'The undated alias this id belongs to.' })),
  loaded: Type.Boolean({ description: 'Whether the model is loaded in this process.' }),
  calibrated: Type.Boolean({ description: 'Whether its decision.json carries a calibration (a temperature other than 1, a label bias, or a fit).' }),
  held_out_ece: Type.Optional(
    Type.Record(Type.String(), Type.Number(), {
      description: 'Question type -> ECE (15 equal-mass bins) on the held-out rows of the `decide calibrate` fit.',
    }),
  ),
  calibrated_from: Type.Optional(Type.String({ description: 'The version the calibration was fitted on (same weights).' })),
  calibrated_at: Type.Optional(Type.String({ format: 'date-time', description: 'When the calibration was fitted.' })),
});

export const ModelListSchema = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(ModelSchema),
  aliases: Type.Record(Type.String(), Type.String(), {
    description: 'Undated alias -> the dated id it resolves to now (the newest installed).',
  }),
});

export const modelRoutes: FastifyPluginAsync<{ service: DecisionService }> = async (app, { service }) => {
  app.get(
    '/models',
    {
      schema: {
        summary: 'List the installed models',
        operationId: 'listModels',
        tags: ['models'],
        response: { 200: ModelListSchema, 401: { ...ErrorSchema, description: 'invalid_key' } },
      },
    },
    async () => service.listModels(),
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
          200: ModelSchema,
          401: { ...ErrorSchema, description: 'invalid_key' },
          404: { ...ErrorSchema, description: 'not_found: no such model' },
        },
      },
    },
    async (request) => service.describeModel(request.params.id),
  );
};
