/**
 * The fused-graph derivation off the JavaScript thread (fused-graph.ts runs this file in a worker
 * thread, src/support/worker-thread.ts): reading a model's weights back as a checkpoint and
 * importing them as the fused graph (with causal states where the model allows them) takes seconds
 * on a large model, and the service must keep answering meanwhile. Input (workerData): the model
 * directory, its stored graph, a scratch checkpoint folder, the folder to write the derived model
 * to, whether causal states are wanted and whether the engine's own operators are. Output: one message, { ok: true } or { ok: false, reason }.
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';

import { MODEL_FILES } from '../engine/model-dir.js';
import { causalStatesConflict } from './builder/decoder-features.js';
import { planFromConfig } from './import/hf-config.js';
import { importModel } from './import/import-model.js';
import { writeCheckpointFromGraph } from './import/onnx-checkpoint.js';

const { modelDir, storedGraph, checkpointDir, outDir, causalStates: wanted, ownKernels } = workerData as {
  modelDir: string;
  storedGraph: string;
  checkpointDir: string;
  outDir: string;
  /** Causal states where the model allows them (false: a graph without control flow, for CUDA graphs). */
  causalStates: boolean;
  /** The engine's own operators (DecoderFeatures.ownKernels). */
  ownKernels: boolean;
};
try {
  const { dtype, segmentIds } = writeCheckpointFromGraph(modelDir, storedGraph, checkpointDir);
  // Causal states wherever they are of use and the graph can have them: the split pass is a packed
  // pass (segment ids), and the builder's rules (causalStatesConflict: no sliding window) allow them.
  const { features } = planFromConfig(JSON.parse(readFileSync(path.join(checkpointDir, MODEL_FILES.config), 'utf8')));
  const causalStates = wanted && segmentIds && causalStatesConflict({ ...features, attention: 'fused', causalStates: true }) === undefined;
  await importModel({ hfDir: checkpointDir, outDir, dtype, segmentIds, attention: 'fused', causalStates, ownKernels, force: true });
  parentPort!.postMessage({ ok: true });
} catch (err) {
  parentPort!.postMessage({ ok: false, reason: (err as Error)?.message ?? String(err) });
} finally {
  rmSync(checkpointDir, { recursive: true, force: true });
}
