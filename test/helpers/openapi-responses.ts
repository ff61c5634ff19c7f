/**
 * Checks a real answer against the response schema a served /openapi.json declares for it, with
 * a JSON Schema validator (fastify's ajv with its formats, nothing removed or coerced), as a client
 * generated from the document or a validating proxy would.
 */
import Fastify from 'fastify';

/** The OpenAPI document's parts these checks read. */
export interface OpenApiDocument {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }>; headers?: Record<string, unknown> }> }>>;
  components: { schemas: Record<string, unknown> };
}

/** The document's refs (`#/components/schemas/X`) as refs into `definitions`, which the validator knows. */
function withComponents(schema: unknown, doc: OpenApiDocument): object {
  const definitions = JSON.parse(JSON.stringify(doc.components.schemas).replaceAll('"#/components/schemas/', '"#/definitions/')) as object;
  const own = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"#/definitions/')) as object;
  return { allOf: [own], definitions };
}

/**
 * What the validator says of `body` as the answer `status` of `method path` (the document's path,
 * e.g. `/v1/batches/{id}`): undefined when it is valid. Throws when the document declares no
 * JSON schema for that answer.
 */
export async function responseSchemaErrors(doc: OpenApiDocument, method: string, path: string, status: number, body: unknown): Promise<string | undefined> {
  const schema = doc.paths[path]?.[method.toLowerCase()]?.responses[String(status)]?.content?.['application/json']?.schema;
  if (!schema) throw new Error(`/openapi.json declares no JSON answer ${status} for ${method} ${path}`);
  const checker = Fastify({ ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false } } });
  checker.post('/check', { schema: { body: withComponents(schema, doc) } }, async () => ({ ok: true }));
  try {
    const res = await checker.inject({ method: 'POST', url: '/check', payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    return res.statusCode === 200 ? undefined : (res.json() as { message: string }).message;
  } finally {
    await checker.close();
  }
}
