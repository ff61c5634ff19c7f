/**
 * The u8 x s8 rewrite (int8-rewrite.ts) off the JavaScript thread: decoding a graph and converting
 * hundreds of megabytes of weights takes seconds, which on the JS thread would freeze /readyz,
 * /metrics and every other request while a model loads. int8-graph.ts runs this file in a worker
 * thread (src/support/worker-thread.ts). Input (workerData): the arguments of rewriteToU8S8.
 * Output: one message, its result.
 */
import { parentPort, workerData } from 'node:worker_threads';

import { rewriteToU8S8 } from './int8-rewrite.js';

const { stockGraph, tempGraph, tempData, dataFileName } = workerData as { stockGraph: string; tempGraph: string; tempData: string; dataFileName: string };
parentPort!.postMessage(rewriteToU8S8(stockGraph, tempGraph, tempData, dataFileName));
