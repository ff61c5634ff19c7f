/**
 * The console's wire types (console/src/types.ts, written by hand: its bundle imports nothing from
 * the server) held to the server's TypeBox schemas (src/api/schemas.ts) by the type checker:
 * test/unit/typecheck.test.ts type-checks this file. What the server sends must fit what the
 * console reads, and what the console sends must be a request the server's schema describes; a
 * field renamed or retyped on one side fails `npm test`.
 */
import type * as Console from '../../console/src/types.js';
import type * as Wire from '../../src/api/schemas.js';

/** True when every A is a B. */
type Fits<A, B> = [A] extends [B] ? true : false;

// What the server sends, read by the console.
export const decideResponse: Fits<Wire.DecideResponse, Console.DecideResponse> = true;
export const answer: Fits<Wire.Answer, Console.Answer> = true;
export const modelListing: Fits<Wire.ModelListing, Console.ModelListing> = true;
export const model: Fits<Wire.ModelEntry, Console.Model> = true;
export const batch: Fits<Wire.Batch, Console.Batch> = true;
export const batchValidation: Fits<Wire.BatchValidation, Console.BatchValidation> = true;
// Both ways: a status the console does not know would show nothing, one the server never sends is dead code.
export const batchStatus: Fits<Wire.BatchStatus, Console.BatchStatus> = true;
export const batchStatusBack: Fits<Console.BatchStatus, Wire.BatchStatus> = true;
// What the console sends.
export const decideRequest: Fits<Console.DecideRequest, Wire.DecideRequest> = true;
