/**
 * The worker side of BodyThread (body-thread.ts): reads one decision request body per request,
 * as the main thread would (json-body.ts, then the door's parse() from the dialect registry), and
 * answers with the call and its written key orders and number texts (which a copy does not carry:
 * key-order.ts), the door's own error, or why the body is not JSON (readJsonBody's failure).
 */
import type { DialectCall, WireError } from '../api/dialect.js';
import { DIALECTS } from '../api/dialects.js';
import type { ErrorCode } from '../api/errors.js';
import type { ValidationLimits } from '../api/validate.js';
import { writtenFormsOf, type WrittenForms } from '../domain/key-order.js';
import { serveRequests } from '../support/thread-client.js';
import type { JsonBody } from '../api/json-text.js';
import { readJsonBody } from './json-body.js';

export interface BodyRequest {
  /** The door's path: its dialect in the registry. */
  path: string;
  body: Uint8Array;
  limits?: Partial<ValidationLimits>;
  requestId: string;
}

export type BodyReply = { call: DialectCall; forms: WrittenForms } | { error: WireError; code: ErrorCode } | { unreadable: Extract<JsonBody, { ok: false }> };

serveRequests(({ path, body, limits, requestId }: BodyRequest): BodyReply => {
  const dialect = DIALECTS.find((d) => d.path === path);
  if (!dialect) throw new Error(`no dialect serves ${path}`);
  const read = readJsonBody(body);
  if (!read.ok) return { unreadable: read };
  const parsed = dialect.parse(read.value, { limits, requestId });
  return parsed.ok ? { call: parsed.call, forms: writtenFormsOf(parsed.call) } : { error: parsed.error, code: parsed.code };
});
