/**
 * Request ids: every request gets a fresh one (never one the client sends), in the form its door's
 * clients expect (newRequestId: decide `dec_<ULID>`, System One `req_<32 hex>`, else
 * `req_<ULID>`). Every response carries it in `x-request-id`.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

import type { FastifyInstance } from 'fastify';

import { newRequestId } from '../api/request-ids.js';
import { originForm } from './request-target.js';

export const REQUEST_ID_HEADER = 'x-request-id';

/** createServer's fastify `genReqId`: the API is at the root of the server. */
export function genReqId(req: IncomingMessage): string {
  return newRequestId(req.method ?? 'GET', pathOf(req));
}

/**
 * The generator for the API mounted under `prefix` (decisionApp in a host's fastify app, given to
 * its scope's setGenReqId): the door is the path below the prefix, so `<prefix>/v1/decide` gets a
 * `dec_` id as `/v1/decide` does on createServer's server.
 */
export function genReqIdUnder(prefix: string): (req: IncomingMessage) => string {
  if (prefix === '') return genReqId;
  return (req) => {
    const path = pathOf(req);
    return newRequestId(req.method ?? 'GET', path.startsWith(`${prefix}/`) ? path.slice(prefix.length) : path);
  };
}

/**
 * Request ids for the API in a scope of a host's fastify app: the scope's own generator, whatever
 * the host's genReqId. A host that reads ids from a request header (fastify's requestIdHeader)
 * would let a client choose a decision's id: such an id is replaced, in the request and its log
 * lines from the scope's first hook on (fastify's own 'incoming request' line is written before any
 * hook, with the host's id). Call first in the scope, before its other hooks and plugins.
 */
export function useOwnRequestIds(app: FastifyInstance): void {
  const generate = genReqIdUnder(app.prefix);
  const issued = new WeakMap<IncomingMessage, string>();
  app.setGenReqId((req) => {
    const id = generate(req);
    issued.set(req, id);
    return id;
  });
  const logLabel = app.initialConfig.requestIdLogLabel ?? 'reqId';
  app.addHook('onRequest', async (request, reply) => {
    if (issued.get(request.raw) === request.id) return;
    const id = generate(request.raw);
    request.id = id;
    // A child of the scope's logger (through the host's child-logger factory), not of the request's:
    // that one is bound to the replaced id, and binding the label again would write the key twice
    // on every line. The reply's logger too: fastify writes 'request completed' with it.
    const log = app.childLoggerFactory.call(app, app.log, { [logLabel]: id }, { level: request.log.level }, request.raw);
    request.log = log;
    reply.log = log;
  });
}

/** The request's path: without the query, and of an absolute-form target (`POST http://host/v1/decide`), which fastify routes by its path, the path alone. */
function pathOf(req: IncomingMessage): string {
  const url = originForm(req.url ?? '');
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
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
