/**
 * The bench's own generated model: built into its directory unless it already holds this preset.
 * Apart from run.ts, whose fresh-scoring baseline loads onnxruntime-node (a devDependency), so
 * that `decide bench --size gpu` and `--ort-profile` run where the package is installed as a
 * dependency.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { DEFAULT_INT8_SCHEME, GRAPH_VERSION, int8Record, makeModel, PRESETS, type ModelDtype } from '../src/models/builder/index.js';

const MODEL_SEED = 1;

/** The decoder graph a bench model is built with: standard ops, fused, or fused with causal states (DecoderFeatures.causalStates). */
export type BenchGraph = 'ops' | 'fused' | 'causal';

/**
 * Builds the bench's own model directory unless it already holds this preset (this dtype, seed
 * MODEL_SEED, the packing graph: make-model's default, on which --packing picks the layout; with
 * `ownKernels`, the fused graph with the engine's own operators).
 */
export async function ensureModel(
  preset: string,
  dir: string,
  dtype: ModelDtype,
  log: (s: string) => void,
  attention: BenchGraph = 'ops',
  ownKernels = false,
): Promise<void> {
  if (ownKernels && attention === 'ops') throw new Error("bench: the engine's own kernels go into the fused graph only");
  const features =
    attention === 'ops'
      ? { segmentIds: true }
      : { segmentIds: true, attention: 'fused' as const, ...(attention === 'causal' ? { causalStates: true } : {}), ...(ownKernels ? { ownKernels: true } : {}) };
  if (PRESETS[preset] === undefined) throw new Error(`bench: unknown preset '${preset}' (known: ${Object.keys(PRESETS).join(', ')})`);
  try {
    const decision = JSON.parse(readFileSync(path.join(dir, 'decision.json'), 'utf8')) as { builder?: Record<string, unknown> };
    const b = decision.builder ?? {};
    const graph = path.join(dir, 'onnx', 'model.onnx');
    const sameFeatures = JSON.stringify(b.features ?? null) === JSON.stringify(features);
    const sameInt8 = JSON.stringify(b.int8 ?? null) === JSON.stringify(dtype === 'int8' ? int8Record(DEFAULT_INT8_SCHEME) : null);
    if (sameInt8 && b.preset === preset && b.seed === MODEL_SEED && b.graphVersion === GRAPH_VERSION && (b.dtype ?? 'fp32') === dtype && b.shapeOverrides === undefined && sameFeatures && existsSync(graph)) return;
  } catch {
    // missing or unreadable: build
  }
  const started = performance.now();
  const graph = attention === 'ops' ? '' : attention === 'fused' ? ', fused decoder graph' : ', fused decoder graph with causal states';
  log(`building model preset '${preset}' (${dtype}, packing graph${graph}${ownKernels ? ", the engine's own kernels" : ''}) into ${dir} ...`);
  await makeModel({ preset, outDir: dir, seed: MODEL_SEED, dtype, features, force: true });
  log(`  built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}
