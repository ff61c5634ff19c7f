// OpenAI's FileObject as a TypeBox schema: what the Files API answers for an upload and for a
// batch's output and error files (POST /v1/files, GET /v1/files/{id}, each item of GET /v1/files,
// and the `file` of a delete), for the OpenAPI document and the type src/batches/openai/wire.ts
// builds. Sources: the `openai` SDK's resources/files.ts; docs/compatibility.md ("Files").
import { Type, type Static } from '@sinclair/typebox';

export const OpenAiFileObjectSchema = Type.Object(
  {
    id: Type.String({ description: 'file- followed by a ULID for an upload; file-output-/file-errors- followed by the batch\'s ULID for its results.' }),
    object: Type.Literal('file'),
    bytes: Type.Integer(),
    created_at: Type.Integer({ description: 'Unix seconds.' }),
    filename: Type.String(),
    purpose: Type.String({ description: 'batch for an upload, batch_output for a batch\'s files.' }),
    status: Type.Literal('processed', { description: 'An upload is checked as it is received, so it is always processed.' }),
    expires_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds; an upload is deleted then (expires_after, 30 days by default).' }),
    status_details: Type.Null({ description: 'Deprecated by OpenAI; always null.' }),
  },
  { description: "OpenAI's FileObject" },
);
export type OpenAiFileObject = Static<typeof OpenAiFileObjectSchema>;
