// OpenAI's Batch object as TypeBox schemas: what a job created with OpenAI's JSON body is answered
// with (POST /v1/batches, GET /v1/batches/{id}, each item of GET /v1/batches, POST
// /v1/batches/{id}/cancel), for the OpenAPI document and the type src/batches/openai/wire.ts builds.
// Sources: the `openai` SDK's resources/batches.ts and the others docs/compatibility.md ("Sources")
// lists; how our jobs map onto it: docs/compatibility.md ("Batches").
import { Type, type Static } from '@sinclair/typebox';

const OPENAI_BATCH_STATUSES = ['validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled'] as const;

export const OpenAiBatchStatusSchema = Type.Union(
  OPENAI_BATCH_STATUSES.map((s) => Type.Literal(s)),
  { description: 'OpenAI\'s statuses; "validating" and "finalizing" are never shown here (creation validates the whole file; rows are written as they are scored).' },
);
export type OpenAiBatchStatus = Static<typeof OpenAiBatchStatusSchema>;

/** Unix seconds, or null while it has not happened. */
const At = (description: string) => Type.Union([Type.Integer(), Type.Null()], { description });

export const OpenAiBatchSchema = Type.Object(
  {
    id: Type.String({ description: 'batch_ followed by a ULID (the same id as in our dialect).' }),
    object: Type.Literal('batch'),
    endpoint: Type.String({ description: 'The endpoint every line calls: /v1/decisions, /v1/systemone or /v1/decide.' }),
    model: Type.String({ description: 'The resolved (dated) model id.' }),
    errors: Type.Union([
      Type.Object({
        object: Type.Literal('list'),
        data: Type.Array(Type.Object({ code: Type.String(), message: Type.String(), param: Type.Union([Type.String(), Type.Null()]), line: Type.Union([Type.Integer(), Type.Null()]) })),
      }),
      Type.Null(),
    ]),
    input_file_id: Type.String(),
    completion_window: Type.String(),
    status: OpenAiBatchStatusSchema,
    output_file_id: Type.Union([Type.String(), Type.Null()], { description: 'The answered lines, once the batch is final and has any.' }),
    error_file_id: Type.Union([Type.String(), Type.Null()], { description: 'The failed lines, once the batch is final and has any.' }),
    created_at: Type.Integer({ description: 'Unix seconds.' }),
    in_progress_at: At('When it was validated and queued: its created_at (creation validates the whole file).'),
    expires_at: At('When the results are deleted (retention); null until the batch is final.'),
    finalizing_at: Type.Null(),
    completed_at: At('Set when the batch completed.'),
    failed_at: At('Set when the batch failed.'),
    expired_at: At('Set when the results were deleted.'),
    cancelling_at: At('When a cancel was asked for.'),
    cancelled_at: At('Set when the batch was cancelled.'),
    request_counts: Type.Object({ total: Type.Integer(), completed: Type.Integer(), failed: Type.Integer() }),
    metadata: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()]),
    usage: Type.Object({
      input_tokens: Type.Integer(),
      input_tokens_details: Type.Object({ cached_tokens: Type.Integer() }),
      output_tokens: Type.Integer(),
      output_tokens_details: Type.Object({ reasoning_tokens: Type.Literal(0) }),
      total_tokens: Type.Integer(),
    }, { description: 'The sums over the answered lines committed so far.' }),
  },
  { description: "OpenAI's Batch object: a job created with OpenAI's JSON body (docs/compatibility.md, Batches)." },
);
/** A job created with OpenAI's JSON body, as OpenAI's Batch object. */
export type OpenAiBatch = Static<typeof OpenAiBatchSchema>;
