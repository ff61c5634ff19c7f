/**
 * The LM-head rewrite off the JavaScript thread: reading, decoding, rewriting and writing a graph
 * of hundreds of megabytes takes seconds (docs/benchmark.md, "Where the time goes"), and on the
 * JS thread that would freeze /readyz, /metrics and every other request of the process while a
 * model loads. scoring-graph.ts runs this file in a worker thread (src/support/worker-thread.ts).
 * Input (workerData): the stock graph's path and the temp path to write the rewrite to. Output: one
 * message, the rewrite's kind (and reason), the bytes already written to the temp path.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

import { rewriteLmHead } from './lm-head-rewrite.js';

const { stockGraph, temp } = workerData as { stockGraph: string; temp: string };
const rewrite = rewriteLmHead(readFileSync(stockGraph));
if (rewrite.kind === 'rewritten') writeFileSync(temp, rewrite.bytes);
parentPort!.postMessage(rewrite.kind === 'rewritten' ? { kind: 'rewritten' } : rewrite);
