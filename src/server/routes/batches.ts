/**
 * The batch endpoints (registered in the /v1 scope, after authentication):
 *   POST /v1/batches               multipart form: model, file (JSONL), optional questions (JSON text) -> 201 Batch
 *                                  or, with a JSON body, OpenAI's {input_file_id, endpoint, completion_window,
 *                                  metadata} -> 200 OpenAI Batch (src/batches/openai/, errors in OpenAI's shape)
 *   GET  /v1/batches               the caller's batches, newest first (?limit=1..100, default 20; ?after=<batch id>)
 *   GET  /v1/batches/{id}          the Batch
 *   GET  /v1/batches/{id}/results  application/x-ndjson, streamed; 404 not_found until the batch is final
 *   POST /v1/batches/{id}/cancel   the Batch (cancelling or cancelled)
 * The upload is streamed to disk (batch-form.ts), never buffered whole. Batches belong to
 * the API key that created them (request.keyId); any other key gets 404 not_found.
 * GET, list and cancel answer each job in the dialect it was created in (BatchService.show*); their
 * errors come in both shapes at once (batch-lookup-errors.ts: the job's dialect is not known before
 * it is found).
 * Schemas are for the OpenAPI document; responses are serialized with JSON.stringify as built.
 */
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';

import { DIALECT_PATHS } from '../../api/dialects.js';
import { OpenAiErrorSchema } from '../../api/openai/schemas.js';
import { ref } from '../../api/schemas.js';
import { BATCH_LIST_LIMIT, type BatchService } from '../../batches/batch-service.js';
import { COMPLETION_WINDOWS, FILE_EXPIRY_SECONDS, METADATA_LIMITS, type OpenAiBatchApi } from '../../batches/openai/openai-batches.js';
import { ownerOf } from '../auth.js';
import { readBatchForm } from '../batch-form.js';
import { sendError } from '../errors.js';
import { sendBatchLookupError } from './batch-lookup-errors.js';
import { isJsonRequest, sendOpenAiError } from './openai-errors.js';
import { AS_BUILT, storeUnavailable } from './route-options.js';

export interface BatchRouteOptions {
  batches: BatchService;
  /** OpenAI's dialect of POST /v1/batches (a JSON body); without it only the multipart form is served. */
  openai?: OpenAiBatchApi;
}

const IdParams = Type.Object({ id: Type.String({ description: 'The batch id.' }) });
const errors = (codes: string) => ref('Error', codes);
const common = { 401: errors('invalid_key'), 429: errors('rate_limited'), 500: errors('server_error'), 503: storeUnavailable(ref('Error')) };

/** POST /v1/batches answers an error in the shape of what it was sent: ours for the form, OpenAI's for a JSON body. */
const createErrorShape = { anyOf: [ref('Error'), OpenAiErrorSchema] };
const createErrors = (codes: string) => ({ ...createErrorShape, description: `${codes} (a multipart form gets ours, a JSON body OpenAI's {error})` });
/** The errors of GET, list and cancel: ours with OpenAI's `error` beside it (batch-lookup-errors.ts). */
const lookupErrors = (codes: string) => ({ allOf: [ref('Error'), OpenAiErrorSchema], description: `${codes} (our {code, message, request_id} with OpenAI's {error} beside it)` });
const lookupCommon = { 401: lookupErrors('invalid_key'), 429: lookupErrors('rate_limited'), 500: lookupErrors('server_error'), 503: storeUnavailable(lookupErrors('server_error')) };
/** GET and cancel answer a job in the dialect it was created in (the list, each item: BatchList). */
const wireBatch = { anyOf: [ref('Batch'), ref('OpenAiBatch')], description: "The batch: ours for a job created with the form, OpenAI's Batch object for one created with OpenAI's JSON body" };

/** OpenAI's batch creation, the JSON body of POST /v1/batches (docs/compatibility.md, Batches). */
const OpenAiBatchCreate = Type.Object(
  {
    input_file_id: Type.String({ description: 'A file uploaded with purpose "batch" (POST /v1/files).' }),
    endpoint: Type.Union(DIALECT_PATHS.map((p) => Type.Literal(p))),
    completion_window: Type.Union(COMPLETION_WINDOWS.map((w) => Type.Literal(w))),
    metadata: Type.Optional(
      Type.Union([Type.Record(Type.String({ maxLength: METADATA_LIMITS.keyChars }), Type.String({ maxLength: METADATA_LIMITS.valueChars }), { maxProperties: METADATA_LIMITS.keys }), Type.Null()]),
    ),
    output_expires_after: Type.Optional(
      Type.Union([
        Type.Object(
          { anchor: Type.Literal('created_at'), seconds: Type.Integer({ minimum: FILE_EXPIRY_SECONDS.min, maximum: FILE_EXPIRY_SECONDS.max }) },
          { additionalProperties: false, description: "Checked, then ignored: a batch's result files last as long as its results." },
        ),
        Type.Null(),
      ]),
    ),
  },
  { additionalProperties: false },
);

export const batchRoutes: FastifyPluginAsync<BatchRouteOptions> = async (app, { batches, openai }) => {
  if (!app.hasContentTypeParser('multipart/form-data')) {
    // Scoped to these routes; limits are given per request below.
    await app.register(multipart, { throwFileSizeLimit: false });
  }

  app.post(
    '/batches',
    {
      schema: {
        summary: "Create a batch from a JSONL file (multipart form: model, file, optional questions), or OpenAI's way (JSON: input_file_id, endpoint, completion_window)",
        operationId: 'createBatch',
        tags: ['batches'],
        body: {
          content: {
            'multipart/form-data': {
              schema: Type.Object({
                model: Type.String({ description: 'Model id or alias, e.g. svc-alpha.' }),
                file: Type.String({ format: 'binary', description: 'JSONL: one record per line, {"custom_id", "state", "questions"} or {"custom_id", "method": "POST", "url": "/v1/decide", "body"}.' }),
                questions: Type.Optional(Type.String({ description: 'JSON text (a text field or a small file part): questions for records without their own.' })),
              }),
            },
            'application/json': { schema: OpenAiBatchCreate },
          },
        },
        response: {
          200: ref('OpenAiBatch', "OpenAI's Batch object, for a JSON body (docs/compatibility.md, Batches)"),
          201: ref('Batch'),
          400: createErrors('invalid_question: missing model or file, empty file, invalid questions field; a JSON body: an invalid field'),
          404: createErrors('not_found: unknown model; a JSON body: unknown input file'),
          413: createErrors('state_too_long: the file is over the size limit or has more records than the limit'),
          415: createErrors('invalid_question: a compressed body (Content-Encoding other than identity); send it uncompressed'),
          ...common,
          503: storeUnavailable(createErrorShape),
        },
      },
      ...AS_BUILT,
      // A JSON body is OpenAI's batch creation: its errors (body parsing included) in OpenAI's shape.
      errorHandler: (err, request, reply) => (isJsonRequest(request) ? sendOpenAiError(err, request, reply) : sendError(err, request, reply)),
    },
    async (request, reply) => {
      const owner = ownerOf(request);
      if (openai && isJsonRequest(request)) return reply.code(200).send(await openai.createBatch(owner, request.body));
      const { model, questions, upload } = await readBatchForm(request, batches);
      const batch = await batches.create({ owner, model, questions, upload });
      return reply.code(201).header('location', `${app.prefix}/batches/${batch.id}`).send(batch);
    },
  );

  app.get(
    '/batches',
    {
      schema: {
        summary: "List the caller's batches, newest first",
        operationId: 'listBatches',
        tags: ['batches'],
        querystring: Type.Object({
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: BATCH_LIST_LIMIT.max, default: BATCH_LIST_LIMIT.default })),
          after: Type.Optional(Type.String({ description: 'The last id of the previous page.' })),
        }),
        response: { 200: ref('BatchList'), 400: lookupErrors('invalid_question: bad limit or after'), ...lookupCommon },
      },
      ...AS_BUILT,
      errorHandler: sendBatchLookupError,
    },
    async (request) => {
      const query = request.query as { limit?: unknown; after?: unknown };
      return batches.showList(ownerOf(request), { limit: query.limit, after: query.after });
    },
  );

  app.get(
    '/batches/:id',
    {
      schema: {
        summary: 'Get a batch (status and progress)',
        operationId: 'getBatch',
        tags: ['batches'],
        params: IdParams,
        response: { 200: wireBatch, 404: lookupErrors('not_found'), ...lookupCommon },
      },
      ...AS_BUILT,
      errorHandler: sendBatchLookupError,
    },
    async (request) => batches.show(ownerOf(request), (request.params as { id: string }).id),
  );

  app.get(
    '/batches/:id/results',
    {
      schema: {
        summary: 'Download the result rows (JSONL, input order) of a finished batch',
        operationId: 'getBatchResults',
        tags: ['batches'],
        params: IdParams,
        response: {
          // The rows' type on the 200 alone: the errors are JSON (`produces` would type every answer so).
          200: {
            description: 'One JSON object per line: {custom_id, id, answers, usage} or {custom_id, error: {code, message}}.',
            content: { 'application/x-ndjson': { schema: { type: 'string' } } },
          },
          404: errors('not_found: unknown batch, not final yet (poll GET /v1/batches/{id}), or expired'),
          ...common,
        },
      },
      ...AS_BUILT,
    },
    async (request, reply) => {
      const { stream, bytes } = await batches.openResults(ownerOf(request), (request.params as { id: string }).id);
      return reply.code(200).type('application/x-ndjson').header('content-length', String(bytes)).send(stream);
    },
  );

  app.post(
    '/batches/:id/cancel',
    {
      schema: {
        summary: 'Cancel a batch (finished rows are kept)',
        operationId: 'cancelBatch',
        tags: ['batches'],
        params: IdParams,
        response: { 200: wireBatch, 404: lookupErrors('not_found'), ...lookupCommon },
      },
      ...AS_BUILT,
      errorHandler: sendBatchLookupError,
    },
    async (request) => batches.cancelAndShow(ownerOf(request), (request.params as { id: string }).id),
  );
};
