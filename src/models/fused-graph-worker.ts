/**
 * The fused-graph derivation off the JavaScript thread (fused-graph.ts runs this file in a worker
 * thread, src/support/worker-thread.ts): reading a model's weights back as a checkpoint and importing them as
 * the fused graph takes seconds on a large model, and the service must keep answering meanwhile.
 * Input (workerData): the model directory, its stored graph, a scratch checkpoint folder and the
 * folder to write the derived model to. Output: one message, { ok: true } or { ok: false, reason }.
 */
import { rmSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

import { importModel } from './import/import-model.js';
import { writeCheckpointFromGraph } from './import/onnx-checkpoint.js';

const { modelDir, storedGraph, checkpointDir, outDir } = workerData as { modelDir: string; storedGraph: string; checkpointDir: string; outDir: string };
try {
  const { dtype, segmentIds } = writeCheckpointFromGraph(modelDir, storedGraph, checkpointDir);
  await importModel({ hfDir: checkpointDir, outDir, dtype, segmentIds, attention: 'fused', force: true });
  parentPort!.postMessage({ ok: true });
} catch (err) {
  parentPort!.postMessage({ ok: false, reason: (err as Error)?.message ?? String(err) });
} finally {
  rmSync(checkpointDir, { recursive: true, force: true });
}
