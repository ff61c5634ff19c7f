/**
 * The worker side of BodyThread (body-thread.ts): reads one decision request body per message,
 * `{id, path, body, limits, requestId}`, as the main thread would (json-body.ts, then the door's
 * parse() from the dialect registry), and answers `{id, call, forms}` (the call's written key
 * orders and number texts, which a copy does not carry: key-order.ts), `{id, error}` (the door's
 * own error), `{id, unreadable}` (not JSON: readJsonBody's failure) or `{id, failure}` (a defect here).
 */
import { parentPort } from 'node:worker_threads';

import type { ValidationLimits } from '../api/validate.js';
import { DIALECTS } from '../api/dialects.js';
import { writtenFormsOf } from '../domain/key-order.js';
import { readJsonBody } from './json-body.js';

export interface BodyMessage {
  id: number;
  /** The door's path: its dialect in the registry. */
  path: string;
  body: Uint8Array;
  limits?: Partial<ValidationLimits>;
  requestId: string;
}

const port = parentPort!;

port.on('message', ({ id, path, body, limits, requestId }: BodyMessage) => {
  try {
    const dialect = DIALECTS.find((d) => d.path === path);
    if (!dialect) throw new Error(`no dialect serves ${path}`);
    const read = readJsonBody(body);
    if (!read.ok) return port.postMessage({ id, unreadable: read });
    const parsed = dialect.parse(read.value, { limits, requestId });
    if (!parsed.ok) return port.postMessage({ id, error: parsed.error });
    port.postMessage({ id, call: parsed.call, forms: writtenFormsOf(parsed.call) });
  } catch (err) {
    port.postMessage({ id, failure: (err as Error)?.message ?? String(err) });
  }
});
