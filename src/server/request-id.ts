/**
 * Request ids. Every request gets a fresh ULID-based id (never one the client sends): decide
 * requests `dec_<ULID>`, which is also the response's `id`, so a stored decision points at its log
 * lines; /v1/systemone requests (and paths below it) `req_<32 hex>` (the form TypeSafe's SDK expects); every other
 * request `req_<ULID>`. Every response carries it in `x-request-id`.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

import { ulid } from 'ulid';

export const REQUEST_ID_HEADER = 'x-request-id';

export function genReqId(req: IncomingMessage): string {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (req.method === 'POST' && path === '/v1/decide') return `dec_${ulid()}`;
  // TypeSafe's SDK reads x-typesafe-request-id and expects its own form: req_ + 32 lowercase hex.
  if (path === '/v1/systemone' || path.startsWith('/v1/systemone/')) return `req_${randomBytes(16).toString('hex')}`;
  return `req_${ulid()}`;
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
