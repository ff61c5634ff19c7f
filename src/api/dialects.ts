/**
 * The registry of wire dialects by endpoint path: what the HTTP server registers (one route
 * function for all of them) and what a batch line's `url` names. In the order the docs list them.
 * @example
 * const dialect = dialectFor(line.url); // systemOne for '/v1/systemone'
 */
import { decideDialect } from './decide/index.js';
import type { Dialect } from './dialect.js';
import { openAiDecisions } from './openai/index.js';
import { systemOne } from './systemone/index.js';

// `any` for the call type: each dialect's respond() takes its own call, which is what its own
// parse() returned; a caller passes one to the other and never builds a call itself.
export const DIALECTS: ReadonlyArray<Dialect<any, unknown>> = Object.freeze([openAiDecisions, systemOne, decideDialect]);

/** The endpoint paths of every dialect (a batch's `endpoint`), in the registry's order. */
export const DIALECT_PATHS: readonly string[] = Object.freeze(DIALECTS.map((d) => d.path));

/** The dialect served at `path`, or undefined. */
export function dialectFor(path: string): Dialect<any, unknown> | undefined {
  return DIALECTS.find((d) => d.path === path);
}
