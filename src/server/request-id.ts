/**
 * Request ids: every request gets a fresh one (never one the client sends), in the form its door's
 * clients expect (newRequestId: decide `dec_<ULID>`, System One `req_<32 hex>`, else
 * `req_<ULID>`). Every response carries it in `x-request-id`.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

import { newRequestId } from '../api/request-ids.js';

export const REQUEST_ID_HEADER = 'x-request-id';

export function genReqId(req: IncomingMessage): string {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  return newRequestId(req.method ?? 'GET', q === -1 ? url : url.slice(0, q));
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A `req_<ULID>` id in TypeSafe's form, `req_<32 hex>`: the same 128 bits written in hex, for the
 * x-typesafe-request-id header of a response System One's clients also read (GET /v1/models).
 */
export function typesafeRequestId(id: string): string {
  const ulidText = id.startsWith('req_') ? id.slice(4) : '';
  if (!/^[0-9A-HJKMNP-TV-Z]{26}$/.test(ulidText)) return `req_${randomBytes(16).toString('hex')}`;
  let value = 0n;
  for (const c of ulidText) value = value * 32n + BigInt(CROCKFORD.indexOf(c));
  return `req_${value.toString(16).padStart(32, '0')}`;
}
