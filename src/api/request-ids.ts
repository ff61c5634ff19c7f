/**
 * Request ids in the form each door's clients expect, for a fresh request to `path`: our
 * `/v1/decide` `dec_<ULID>` (also the decision's `id`, so a stored decision points at its log
 * lines), TypeSafe System One's `req_<32 hex>` (its SDK reads that form from
 * x-typesafe-request-id), every other `req_<ULID>`. The server names each HTTP request with it,
 * and a batch names each line's request as the synchronous endpoint would.
 */
import { randomBytes } from 'node:crypto';

import { ulid } from 'ulid';

import { DECIDE_PATH } from './decide/index.js';
import { SYSTEMONE_PATH } from './systemone/index.js';

/** A decision's id, `dec_<ULID>`: a /v1/decide request's, and each batch record's answer's. */
export function newDecisionId(): string {
  return `dec_${ulid()}`;
}

export function newRequestId(method: string, path: string): string {
  if (method === 'POST' && path === DECIDE_PATH) return newDecisionId();
  if (path === SYSTEMONE_PATH || path.startsWith(`${SYSTEMONE_PATH}/`)) return `req_${randomBytes(16).toString('hex')}`;
  return `req_${ulid()}`;
}
