/**
 * OpenAI's Files API, for batch input (registered in the /v1 scope, after authentication):
 *   POST   /v1/files               multipart: file (JSONL), purpose=batch -> FileObject
 *   GET    /v1/files               the caller's uploads (?after, ?limit 1..10000, ?order, ?purpose), has_more always
 *   GET    /v1/files/{id}          FileObject (an upload, or a batch's output/error file)
 *   GET    /v1/files/{id}/content  the bytes, streamed
 *   DELETE /v1/files/{id}          {id, object: "file", deleted: true}
 * Files belong to the API key that uploaded them; another key gets 404. Uploads are streamed to disk
 * with the batch file limits (413 over them), then kept by the file store (SQLite dir or Postgres).
 * Errors in OpenAI's shape (openai-errors.ts).
 */
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest, HTTPMethods } from 'fastify';

import { OpenAiFileObjectSchema } from '../../api/openai/file-schemas.js';
import { OpenAiErrorSchema } from '../../api/openai/schemas.js';
import type { StagedUpload } from '../../batches/batch-service.js';
import { oaError, OpenAiWireError } from '../../batches/openai/errors.js';
import { FILE_EXPIRY_SECONDS, FILE_LIST_LIMIT, type ExpiresAfterFields, type OpenAiBatchApi } from '../../batches/openai/openai-batches.js';
import { ownerOf } from '../auth.js';
import { pathForMessage } from '../errors.js';
import { FILE_SENT_AS_TEXT, formParts, partName, readingMultipart, type PartHead } from '../multipart-body.js';
import { openAiErrorHandler } from './openai-errors.js';
import { AS_BUILT, storeUnavailable } from './route-options.js';

export interface FileRouteOptions {
  openai: OpenAiBatchApi;
  maxFileBytes: number;
}

const MAX_FIELD_BYTES = 4096;
/** The form's text fields, beside the file part `file`. */
const TEXT_FIELDS = ['purpose', 'expires_after[anchor]', 'expires_after[seconds]'] as const;
type TextField = (typeof TEXT_FIELDS)[number];
const isTextField = (name: string): name is TextField => (TEXT_FIELDS as readonly string[]).includes(name);
/** The form's fields, as the 400s for a malformed form name them. */
const FILE_FORM_FIELDS = 'file and purpose';
/** A part the form does not take (OpenAI's 400, naming it in `param`): a second file or one not named `file`, or an unknown text field. */
function unknownPart({ name, file }: PartHead): OpenAiWireError {
  const field = name.slice(0, 100);
  return file
    ? oaError(400, `form field '${field}': unexpected file (send the JSONL once, as the field 'file')`, field)
    : oaError(400, `form field '${field}': unknown (allowed: file, ${TEXT_FIELDS.join(', ')})`, field);
}
const IdParams = Type.Object({ id: Type.String({ description: 'The file id.' }) });
const asBuilt = { ...AS_BUILT, errorHandler: openAiErrorHandler };
/** What every /v1/files route can answer besides its own errors (authentication and the rate limit run first). */
const common = {
  401: Type.Object(OpenAiErrorSchema.properties, { description: 'invalid_api_key: missing or unknown key' }),
  429: Type.Object(OpenAiErrorSchema.properties, { description: 'rate_limit_exceeded: see Retry-After (seconds)' }),
  500: Type.Object(OpenAiErrorSchema.properties, { description: 'server_error: retry with backoff' }),
  503: storeUnavailable(OpenAiErrorSchema),
};

export const fileRoutes: FastifyPluginAsync<FileRouteOptions> = async (app, { openai, maxFileBytes }) => {
  if (!app.hasContentTypeParser('multipart/form-data')) await app.register(multipart, { throwFileSizeLimit: false });
  const tags = ['files (OpenAI)'];

  app.post(
    '/files',
    {
      schema: {
        summary: 'Upload a JSONL file for batches (OpenAI Files API; multipart: file, purpose=batch)',
        operationId: 'createFile',
        tags,
        consumes: ['multipart/form-data'],
        body: Type.Object({
          file: Type.String({ format: 'binary' }),
          purpose: Type.Literal('batch'),
          'expires_after[anchor]': Type.Optional(Type.Literal('created_at')),
          'expires_after[seconds]': Type.Optional(
            Type.Integer({ minimum: FILE_EXPIRY_SECONDS.min, maximum: FILE_EXPIRY_SECONDS.max, description: `default ${FILE_EXPIRY_SECONDS.default} (30 days)` }),
          ),
        }),
        response: { 200: OpenAiFileObjectSchema, 400: OpenAiErrorSchema, 413: OpenAiErrorSchema, 415: Type.Object(OpenAiErrorSchema.properties, { description: 'a compressed body (Content-Encoding other than identity): send it uncompressed' }), ...common },
      },
      ...asBuilt,
    },
    async (request) => {
      const owner = ownerOf(request);
      if (!request.isMultipart()) throw oaError(400, 'request body: send multipart/form-data with the fields file and purpose');
      let filename: string | undefined;
      let upload: StagedUpload | undefined;
      const text = new Map<TextField, string>();
      try {
        const parts = formParts(
          request,
          { limits: { files: 1, fields: 4, parts: 6, fieldSize: MAX_FIELD_BYTES, fileSize: maxFileBytes + 1 }, ...({ throwFileSizeLimit: false } as object) },
          { fields: FILE_FORM_FIELDS, unknownPart },
        );
        for await (const part of parts) {
          const name = partName(part, FILE_FORM_FIELDS);
          if (part.type === 'file') {
            if (name !== 'file' || upload) {
              part.file.resume();
              throw unknownPart({ name, file: true });
            }
            filename = part.filename;
            upload = await openai.stage(readingMultipart(part.file));
          } else if (name === 'file') {
            throw oaError(400, FILE_SENT_AS_TEXT, 'file');
          } else if (isTextField(name) && typeof part.value === 'string') {
            // As in the batch form: a field given twice would lose one of its values, so it is refused.
            if (text.has(name)) throw oaError(400, `form field '${name}': given more than once; send it once`, name);
            text.set(name, part.value);
          } else {
            throw unknownPart({ name, file: false });
          }
        }
      } catch (err) {
        await openai.discard(upload);
        throw err;
      }
      const purpose = text.get('purpose');
      const expiresAfter: ExpiresAfterFields = { anchor: text.get('expires_after[anchor]'), seconds: text.get('expires_after[seconds]') };
      return openai.upload(owner, { purpose, filename, upload, expiresAfter });
    },
  );

  app.get(
    '/files',
    {
      schema: {
        summary: "List the caller's uploaded files (OpenAI cursor paging: after = the last id, has_more always)",
        operationId: 'listFiles',
        tags,
        querystring: Type.Object({
          after: Type.Optional(Type.String()),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: FILE_LIST_LIMIT.max, default: FILE_LIST_LIMIT.default })),
          order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
          purpose: Type.Optional(Type.String()),
        }),
        response: { 200: Type.Object({ object: Type.Literal('list'), data: Type.Array(OpenAiFileObjectSchema), has_more: Type.Boolean() }), 400: OpenAiErrorSchema, ...common },
      },
      ...asBuilt,
    },
    async (request) => openai.listFiles(ownerOf(request), request.query as Record<string, unknown>),
  );

  app.get(
    '/files/:id',
    { schema: { summary: 'Get a file object', operationId: 'retrieveFile', tags, params: IdParams, response: { 200: OpenAiFileObjectSchema, 404: OpenAiErrorSchema, ...common } }, ...asBuilt },
    async (request) => openai.getFile(ownerOf(request), (request.params as { id: string }).id),
  );

  app.get(
    '/files/:id/content',
    {
      schema: {
        summary: "A file's bytes (an upload as sent; a batch's output or error file as JSONL)",
        operationId: 'downloadFile',
        tags,
        params: IdParams,
        // The bytes' type on the 200 alone: the errors are JSON (`produces` would type every answer so).
        response: { 200: { description: 'The bytes.', content: { 'application/octet-stream': { schema: { type: 'string' } } } }, 404: OpenAiErrorSchema, ...common },
      },
      ...asBuilt,
    },
    async (request, reply) => {
      const stream = await openai.fileContent(ownerOf(request), (request.params as { id: string }).id);
      return reply.code(200).type('application/octet-stream').send(stream);
    },
  );

  app.delete(
    '/files/:id',
    {
      schema: {
        summary: 'Delete an uploaded file',
        operationId: 'deleteFile',
        tags,
        params: IdParams,
        response: {
          200: Type.Object({ id: Type.String(), object: Type.Literal('file'), deleted: Type.Boolean() }),
          400: Type.Object(OpenAiErrorSchema.properties, { description: "a batch's output or error file: it goes with the batch's results (retention)" }),
          404: OpenAiErrorSchema,
          ...common,
        },
      },
      ...asBuilt,
    },
    async (request) => openai.deleteFile(ownerOf(request), (request.params as { id: string }).id),
  );

  // Another method on a files path (405 with Allow) or a path below them (404): OpenAI's shape, as
  // every /v1/files answer, not the API's own 404; authentication runs first, as on the routes above.
  const strayMessage = (request: FastifyRequest) => `Invalid URL (${request.method} ${pathForMessage(request)})`;
  for (const [url, allowed] of FILE_PATHS) {
    app.route({
      method: FILE_METHODS.filter((m) => !allowed.includes(m)),
      url,
      schema: { hide: true },
      ...asBuilt,
      handler: async (request) => {
        throw new OpenAiWireError({ ...oaError(405, `${strayMessage(request)}: this path takes ${allowed.join(' or ')}`).wire, headers: { allow: allowed.join(', ') } });
      },
    });
  }
  app.route({
    method: FILE_METHODS,
    url: '/files/:id/*',
    schema: { hide: true },
    ...asBuilt,
    handler: async (request) => {
      throw oaError(404, `${strayMessage(request)}: no such route; a file is GET /v1/files/{id}, its bytes GET /v1/files/{id}/content`);
    },
  });
};

/** Every method a stray request may use, and the ones each files path serves. */
const FILE_METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const FILE_PATHS: Array<[string, HTTPMethods[]]> = [
  ['/files', ['GET', 'POST']],
  ['/files/:id', ['GET', 'DELETE']],
  ['/files/:id/content', ['GET']],
];
