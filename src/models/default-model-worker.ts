/**
 * The embedded default model's building off the JavaScript thread (default-model.ts runs this file
 * in a worker thread, src/support/worker-thread.ts): making its random weights and writing its graph
 * takes seconds, and a server that already listens must keep answering its probes meanwhile.
 * Input (workerData): the model's directory. Output: one message, { ok: true } or { ok: false, reason }.
 */
import { parentPort, workerData } from 'node:worker_threads';

import { describeError } from '../api/errors.js';
import { createDefaultModel } from './default-model.js';

const { dir } = workerData as { dir: string };
try {
  await createDefaultModel(dir);
  parentPort!.postMessage({ ok: true });
} catch (err) {
  parentPort!.postMessage({ ok: false, reason: describeError(err) });
}
