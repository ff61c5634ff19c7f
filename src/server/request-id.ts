/**
 * Request ids. Every request gets a fresh ULID-based id (never one the client sends): decide
 * requests `dec_<ULID>`, which is also the response's `id`, so a stored decision points at its log
 * lines; every other request `req_<ULID>`. Every response carries it in `x-request-id`.
 */
import type { IncomingMessage } from 'node:http';

import { ulid } from 'ulid';

export const REQUEST_ID_HEADER = 'x-request-id';

export function genReqId(req: IncomingMessage): string {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return req.method === 'POST' && path === '/v1/decide' ? `dec_${ulid()}` : `req_${ulid()}`;
}
