/**
 * The fused decoder graph derived from a standard-op model (the engine's GraphDeriver for
 * `fusedAttention`, src/engine/attention-graph.ts): what a CUDA engine runs by default. It is
 * derived once and cached beside the model (`onnx/model.decide-fused/`, a model directory of its
 * own, and its stamp `onnx/model.decide-fused.json`): the stored graph's weights are read back as
 * a checkpoint and imported with `attention: 'fused'` (in a worker thread; with causal states where
 * the model has segment ids and no sliding window, unless the form asks for no control flow: then
 * into `onnx/model.decide-fused-no-if/`; with the engine's own operators where the form asks for
 * them, into the same name with `-own-kernels` after it), then checked once against the stored
 * graph on a small input, on the engine's provider (lm-head-verify.ts). A model that is fused
 * already, int8, not written by this project, or whose derivation or check fails (a read-only
 * folder, say) runs as stored, and the choice says why. Names, stamps and temporary files follow
 * src/engine/derived-graph-cache.ts.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';

import { storedChoice, storedGraphRecord, type AttentionChoice, type DerivedGraphForm, type GraphDeriver } from '../engine/attention-graph.js';
import { DERIVED_TAGS, derivedPath, fileStamps, loadTag, readStamp, writeStamp, type FileStamp } from '../engine/derived-graph-cache.js';
import { verifyRewrite } from '../engine/lm-head-verify.js';
import { MODEL_FILES } from '../engine/model-dir.js';
import { runWorker } from '../support/worker-thread.js';
import { GRAPH_VERSION } from './builder/make-model.js';
import { IMPORTER_VERSION } from './import/import-model.js';

/**
 * Bump when the derivation's output changes: a cached derivation with another version is made again
 * (2: no packed projections; 3: causal states where the model has segment ids and no sliding window).
 */
export const FUSED_DERIVATION_VERSION = 3;

interface Stamp {
  version: number;
  /** Whether the derivation may write causal states (DerivedGraphForm.controlFlow). */
  controlFlow: boolean;
  /** Whether it writes the engine's own operators (DerivedGraphForm.ownKernels). */
  ownKernels: boolean;
  graphVersion: number;
  importerVersion: number;
  /** Size and modification time of each file the stored graph is made of. */
  source: FileStamp[];
}

/**
 * The derived model's folder and stamp, beside the stored graph: `.decide-fused` for the default
 * form (causal states where the model allows them), `.decide-fused-no-if` for the form without
 * control flow that CUDA graphs need, each with `-own-kernels` after it for the form with the
 * engine's own operators. Each form has its own stamp, so that engines of both forms
 * on one model keep both derivations instead of remaking each other's.
 */
export function fusedPaths(storedGraph: string, form: DerivedGraphForm = { controlFlow: true }): { dir: string; graph: string; stamp: string } {
  const dir = derivedPath(storedGraph, DERIVED_TAGS.fused, `${form.controlFlow ? '' : '-no-if'}${form.ownKernels ? '-own-kernels' : ''}`);
  return { dir, graph: path.join(dir, MODEL_FILES.graph), stamp: `${dir}.json` };
}

function sourceStamp(storedGraph: string): Stamp['source'] {
  const dir = path.dirname(storedGraph);
  const base = path.basename(storedGraph);
  return fileStamps(dir, [base, `${base}_data`, `${base}.data`].filter((f) => existsSync(path.join(dir, f))));
}

function currentStamp(storedGraph: string, form: DerivedGraphForm): Stamp {
  return { version: FUSED_DERIVATION_VERSION, controlFlow: form.controlFlow, ownKernels: form.ownKernels === true, graphVersion: GRAPH_VERSION, importerVersion: IMPORTER_VERSION, source: sourceStamp(storedGraph) };
}

function stampMatches(file: string, want: Stamp): boolean {
  return readStamp(file, (stamp): stamp is Stamp => JSON.stringify(stamp) === JSON.stringify(want)) !== undefined;
}

const message = (err: unknown) => (err as Error)?.message ?? String(err);

/**
 * A cached derived fused graph, else a new one (checked against the stored graph with
 * `verifyWith`, on the engine's provider), else the stored graph with the reason.
 */
export const deriveFusedGraph: GraphDeriver = async (modelDir, storedGraph, verifyWith, form = { controlFlow: true }) => {
  const facts = storedGraphRecord(modelDir);
  const stored = (reason?: string) => ({ graphFile: storedGraph, attention: storedChoice(facts, reason) });
  if (facts === undefined) return stored('the model was not written by make-model or import-model (no builder or import record in decision.json)');
  if (facts.attention === 'fused') {
    return stored(form.ownKernels && !facts.ownKernels ? 'the model is fused already; the engine\'s own kernels go into a graph derived from a standard-op model (or make or import the model with --own-kernels on)' : undefined);
  }
  if (facts.dtype !== 'fp32' && facts.dtype !== 'fp16') return stored(`a ${facts.dtype} model keeps its graph (only fp32 and fp16 weights are read back)`);

  const { dir, graph, stamp } = fusedPaths(storedGraph, form);
  const want = currentStamp(storedGraph, form);
  const derived: AttentionChoice = { graph: 'fused', source: 'derived', ...(form.ownKernels ? { ownKernels: true as const } : {}) };
  if (existsSync(graph) && stampMatches(stamp, want)) return { graphFile: graph, attention: derived };

  // Unique per load: engines of one process, or of several, may be deriving the same graph. The
  // importer takes its output folder's name as a model id, which may not contain '.tmp-'.
  const tag = loadTag();
  const temp = `${dir}-wip-${tag}`;
  const remove = (p: string) => rmSync(p, { recursive: true, force: true });
  try {
    const result = await runWorker<{ ok: boolean; reason?: string }>(import.meta.url, 'fused-graph-worker', {
      modelDir,
      storedGraph,
      checkpointDir: `${dir}-checkpoint-${tag}`,
      outDir: temp,
      causalStates: form.controlFlow,
      ownKernels: form.ownKernels === true,
    });
    if (!result.ok) throw new Error(result.reason);
    await verifyRewrite(storedGraph, path.join(temp, MODEL_FILES.graph), verifyWith);
  } catch (err) {
    remove(temp);
    return stored(`the fused graph could not be derived: ${message(err)}`);
  }
  try {
    // A stale derivation is replaced in one rename of the folder aside, then ours in.
    if (existsSync(dir)) renameSync(dir, `${dir}-stale-${tag}`);
    renameSync(temp, dir);
    remove(`${dir}-stale-${tag}`);
    writeStamp(stamp, want, tag);
  } catch (err) {
    remove(temp);
    return stored(`the fused graph could not be saved beside the model: ${message(err)}`);
  }
  return { graphFile: graph, attention: derived };
};
