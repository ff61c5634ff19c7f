/**
 * Request ids in the form each door's clients expect, for a fresh request to `path`: our
 * `/v1/decide` `dec_<ULID>` (also the decision's `id`, so a stored decision points at its log
 * lines), TypeSafe System One's `req_<32 hex>` (its SDK reads that form from
 * x-typesafe-request-id), every other `req_<ULID>`. The server names each HTTP request with it,
 * and a batch names each line's request as the synchronous endpoint would.
 */
import { randomBytes } from 'node:crypto';

import { ulid } from 'ulid';

export function newRequestId(method: string, path: string): string {
  if (method === 'POST' && path === '/v1/decide') return `dec_${ulid()}`;
  if (path === '/v1/systemone' || path.startsWith('/v1/systemone/')) return `req_${randomBytes(16).toString('hex')}`;
  return `req_${ulid()}`;
}
