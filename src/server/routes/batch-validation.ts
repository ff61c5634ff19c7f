/**
 * POST /v1/batches/validate: the batch creation form (model, file, optional questions) checked
 * record by record as the runner will check it, without creating a job. 200 BatchValidation:
 * counts and the invalid records with their line numbers. The console calls it before POST
 * /v1/batches so a bad line is shown before anything runs; any client may. Envelope errors are
 * those of POST /v1/batches.
 */
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';

import { ref } from '../../api/schemas.js';
import type { BatchService } from '../../batches/batch-service.js';
import { readBatchForm } from '../batch-form.js';
import { AS_BUILT, storeUnavailable } from './route-options.js';

export const batchValidationRoutes: FastifyPluginAsync<{ batches: BatchService }> = async (app, { batches }) => {
  // Scoped to this plugin, as in routes/batches.ts; limits are given per request.
  if (!app.hasContentTypeParser('multipart/form-data')) await app.register(multipart, { throwFileSizeLimit: false });

  app.post(
    '/batches/validate',
    {
      schema: {
        summary: 'Check a batch file record by record without creating a batch (same form as createBatch)',
        operationId: 'validateBatch',
        tags: ['batches'],
        consumes: ['multipart/form-data'],
        body: Type.Object({
          model: Type.String({ description: 'Model id or alias.' }),
          file: Type.String({ format: 'binary', description: 'The JSONL file, as for createBatch.' }),
          questions: Type.Optional(Type.String({ description: 'JSON text: questions for records without their own.' })),
        }),
        response: {
          200: ref('BatchValidation'),
          400: ref('Error', 'invalid_question: missing model or file, empty file, invalid questions field'),
          401: ref('Error', 'invalid_key'),
          404: ref('Error', 'not_found: unknown model'),
          413: ref('Error', 'state_too_long: the file is over the size limit or has more records than the limit'),
          415: ref('Error', 'invalid_question: a compressed body (Content-Encoding other than identity); send it uncompressed'),
          429: ref('Error', 'rate_limited'),
          500: ref('Error', 'server_error'),
          // The upload is staged on the data dir's disk before it is read.
          503: storeUnavailable(ref('Error')),
        },
      },
      // The multipart body is read by readBatchForm, not by the schema; the answer is sent as built.
      ...AS_BUILT,
    },
    async (request) => batches.validate(await readBatchForm(request, batches)),
  );
};
