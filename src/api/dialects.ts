/**
 * The foreign dialects by endpoint path: what a batch line's `url` names. `/v1/decide` is ours and
 * not listed (its body is validated by validate.ts and answered as DecideResponse).
 * @example
 * const dialect = dialectFor(line.url); // systemOne for '/v1/systemone'
 */
import type { Dialect } from './dialect.js';
import { openAiDecisions } from './openai/index.js';
import { systemOne } from './systemone/index.js';

// `any` for the call type: each dialect's respond() takes its own call, which is what its own
// parse() returned; a caller passes one to the other and never builds a call itself.
export const DIALECTS: Readonly<Record<string, Dialect<any, unknown>>> = Object.freeze({
  [systemOne.path]: systemOne,
  [openAiDecisions.path]: openAiDecisions,
});

/** The dialect served at `path`, or undefined. */
export function dialectFor(path: string): Dialect<any, unknown> | undefined {
  return Object.hasOwn(DIALECTS, path) ? DIALECTS[path] : undefined;
}
