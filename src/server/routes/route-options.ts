/**
 * Route options every route of the API shares. A route's schema documents it (/openapi.json) and
 * validates nothing: each body has one validator of its own (a dialect's parse(), the batch form
 * reader), the one source of its rules and of its messages, in its own error shape. Fastify's
 * schema validation would answer first, in fastify's words.
 */

/** The schema is for the OpenAPI document only. */
export const DOCUMENTS_ONLY = { validatorCompiler: () => () => true } as const;

/** DOCUMENTS_ONLY, and the response sent as the handler built it (JSON.stringify, not the schema's serializer). */
export const AS_BUILT = { ...DOCUMENTS_ONLY, serializerCompiler: () => (data: unknown) => JSON.stringify(data) } as const;

/**
 * The 503 every batch and file route answers while the batch store cannot serve (its Postgres
 * database down or unreachable, or the data dir's disk refusing writes: src/batches/store-outages.ts),
 * with Retry-After; `shape` is the route's error schema (ours, OpenAI's, or either).
 */
export function storeUnavailable(shape: object): object {
  return {
    ...shape,
    description:
      "server_error: the batch store cannot serve: its Postgres database is down or unreachable, or the data dir's disk refuses writes (full, read-only or failing; nothing was stored). Retry after Retry-After.",
    headers: { 'retry-after': { type: 'integer', description: 'Seconds to wait before retrying.' } },
  };
}
