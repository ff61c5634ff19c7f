/** GET /v1/models: the installed model ids, their aliases, and which are loaded. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';

import { ErrorSchema } from '../../api/schemas.js';
import type { DecisionService } from '../../service/decision-service.js';

export const ModelListSchema = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(
    Type.Object({
      id: Type.String({ description: 'Dated model id, e.g. svc-alpha-2026-10.' }),
      object: Type.Literal('model'),
      alias: Type.Optional(Type.String({ description: 'The undated alias this id belongs to.' })),
      loaded: Type.Boolean({ description: 'Whether the model is loaded in this process.' }),
    }),
  ),
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
};
