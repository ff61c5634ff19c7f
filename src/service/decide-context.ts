/**
 * How one decide call runs (DecisionService.decide/decideNormalized's second argument), and its
 * check: a library caller's JavaScript can pass anything, and a wrong value must be refused naming
 * it, not surface as a 500 "retry" (a signal that is no AbortSignal) or come back as the answer's id.
 */
import { ApiError } from '../api/errors.js';
import { jsonType } from '../api/json-value.js';
import type { NormalizedDecideRequest } from '../domain/decision.js';
import { PRIORITIES, type Priority } from '../runtime/scheduler.js';

export interface DecideContext {
  /** The decision id to answer with (a route passes its request id); a new `dec_` id when absent. */
  requestId?: string;
  /** 'live' (default) goes before batch work. */
  priority?: Priority;
  /**
   * Abandons the call: what is not yet scored is never computed (a large request's remaining
   * engine calls are dropped) and the call rejects with the signal's reason.
   */
  signal?: AbortSignal;
  /**
   * Who may share the state's cached prefix with this call (an API key, a tenant): calls of one
   * scope reuse each other's cached states, calls of different scopes never do, so no caller learns
   * another's state from `usage.cached_tokens` or from timing. The server passes the API key's id.
   * Absent or '': the one scope shared by every call that names none.
   */
  cacheScope?: string;
}

const FIELDS = ['requestId', 'priority', 'signal', 'cacheScope'];

const refuse = (message: string) => new ApiError('invalid_question', message);

/** The context as given, or throws 400 invalid_question naming what is wrong with it. */
export function checkDecideContext(context: unknown): DecideContext {
  if (context === undefined) return {};
  if (typeof context !== 'object' || context === null || Array.isArray(context)) {
    throw refuse(`context: must be an object ({ requestId?, priority?, signal?, cacheScope? }), got ${jsonType(context)}`);
  }
  const c = context as Record<string, unknown>;
  for (const key of Object.keys(c)) {
    if (!FIELDS.includes(key)) throw refuse(`context.${key}: unknown field (allowed: ${FIELDS.join(', ')})`);
  }
  if (c.requestId !== undefined && (typeof c.requestId !== 'string' || c.requestId === '')) {
    throw refuse(`context.requestId: must be a non-empty string, got ${jsonType(c.requestId)}`);
  }
  if (c.priority !== undefined && !(PRIORITIES as readonly unknown[]).includes(c.priority)) {
    throw refuse(`context.priority: must be one of ${PRIORITIES.join(', ')}`);
  }
  if (c.signal !== undefined && !(c.signal instanceof AbortSignal)) throw refuse(`context.signal: must be an AbortSignal, got ${jsonType(c.signal)}`);
  if (c.cacheScope !== undefined && typeof c.cacheScope !== 'string') throw refuse(`context.cacheScope: must be a string, got ${jsonType(c.cacheScope)}`);
  return c as DecideContext;
}

/** Throws 400 invalid_question unless `request` has the shape validateDecideRequest() gives. */
export function checkNormalizedRequest(request: unknown): asserts request is NormalizedDecideRequest {
  const r = request as Partial<NormalizedDecideRequest> | null;
  if (typeof r !== 'object' || r === null || typeof r.model !== 'string' || typeof r.stateText !== 'string' || !Array.isArray(r.questions)) {
    throw refuse('decideNormalized(request): the request must be what validateDecideRequest() returns; pass a raw body to decide()');
  }
}
