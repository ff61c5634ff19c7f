/**
 * The System One dialect (`POST /v1/systemone`, TypeSafe's format as vLLM, Fireworks, Upstage and
 * LocalAI also serve it) as one Dialect object: parse a body into the domain request, render the
 * scored response, render any error. Pure; the route (src/server/routes/systemone.ts) and the batch
 * runner share it, so a batch line answers with exactly the synchronous body.
 * @example
 * const parsed = systemOne.parse(body);
 * if (!parsed.ok) return send(parsed.error);
 * try { send200(systemOne.respond(parsed.call, await service.decideNormalized(parsed.call.request))) }
 * catch (err) { send(systemOne.error(err)) }
 */
import type { Dialect } from '../dialect.js';
import { systemOneError } from './errors.js';
import { respondSystemOne } from './respond.js';
import type { SystemOneResponse } from './schemas.js';
import { parseSystemOne, type SystemOneCall } from './validate.js';

export const SYSTEMONE_PATH = '/v1/systemone';

export const systemOne: Dialect<SystemOneCall, SystemOneResponse> = Object.freeze({
  path: SYSTEMONE_PATH,
  parse: parseSystemOne,
  respond: respondSystemOne,
  error: systemOneError,
});

export { parseSystemOne, SYSTEMONE_LIMITS, type SystemOneCall } from './validate.js';
export { respondSystemOne, systemOneConfidence } from './respond.js';
export { systemOneError } from './errors.js';
export * from './schemas.js';
