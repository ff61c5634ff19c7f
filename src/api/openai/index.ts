/**
 * OpenAI's decisions dialect (`POST /v1/decisions`, `client.decisions.create` in the official
 * SDKs) as one Dialect object: parse a body into the domain request, render the scored response,
 * render any error in OpenAI's shape. Pure; the route (src/server/routes/decisions.ts) and the
 * batch runner share it, so a batch line answers with exactly the synchronous body.
 * @example
 * const parsed = openAiDecisions.parse(body);
 * if (!parsed.ok) return send(parsed.error);
 * send200(openAiDecisions.respond(parsed.call, await service.decideNormalized(parsed.call.request)));
 */
import type { Dialect } from '../dialect.js';
import { openAiError } from './errors.js';
import { respondDecisions } from './respond.js';
import type { DecisionBody } from './schemas.js';
import { parseDecisions, type DecisionsCall } from './validate.js';

export const DECISIONS_PATH = '/v1/decisions';

export const openAiDecisions: Dialect<DecisionsCall, DecisionBody> = Object.freeze({
  path: DECISIONS_PATH,
  parse: parseDecisions,
  respond: respondDecisions,
  error: openAiError,
});

export { parseDecisions, DECISIONS_LIMITS, type DecisionsCall, type DecisionsQuestion } from './validate.js';
export { respondDecisions } from './respond.js';
export { openAiError, invalidRequest } from './errors.js';
export * from './schemas.js';
