/**
 * The embedded default model. A fresh machine has no weights (and no way to download any), so the
 * service creates `svc-alpha-2026-10` with the model builder the first time it starts: a real
 * Qwen3-style architecture with the real Qwen3 tokenizer and DETERMINISTIC RANDOM weights. Its
 * probabilities are well-formed and reproducible but carry no knowledge until a real model is
 * installed under the same models directory (README: "Installing a real model").
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { MODEL_FILES, readDecisionFile } from '../engine/model-dir.js';
import { runWorker } from '../support/worker-thread.js';
import { makeModel } from './builder/index.js';
import { makeDirectories } from './make-directories.js';

/** The alias the service loads at start (the newest installed svc-alpha version). */
export const DEFAULT_MODEL_ALIAS = 'svc-alpha';
const DEFAULT_MODEL_ID = `${DEFAULT_MODEL_ALIAS}-2026-10`;
const DEFAULT_MODEL_PRESET = 'tiny';
const DEFAULT_MODEL_SEED = 202610;

/** Whether the default model is already under modelsDir (so starting writes nothing there). */
export function hasDefaultModel(modelsDir: string): boolean {
  return existsSync(path.join(modelsDir, DEFAULT_MODEL_ID, MODEL_FILES.config));
}

/**
 * Creates the default model under modelsDir unless it is there; returns its directory.
 * `offThread`: the building (seconds of JavaScript) runs in a worker thread, so that a server
 * already listening keeps answering meanwhile (DecisionService.open's preloadInBackground).
 */
export async function ensureDefaultModel(modelsDir: string, log?: (line: string) => void, { offThread = false } = {}): Promise<string> {
  const dir = path.join(modelsDir, DEFAULT_MODEL_ID);
  if (hasDefaultModel(modelsDir)) return dir;
  makeDirectories(modelsDir);
  log?.(`creating the embedded default model ${DEFAULT_MODEL_ID} (random weights) in ${dir}`);
  if (!offThread) {
    await createDefaultModel(dir);
    return dir;
  }
  const made = await runWorker<{ ok: true } | { ok: false; reason: string }>(import.meta.url, 'default-model-worker', { dir });
  if (!made.ok) throw new Error(made.reason);
  return dir;
}

/** Builds the default model into `dir` (default-model-worker.ts runs this in a worker thread). */
export async function createDefaultModel(dir: string): Promise<void> {
  try {
    // The packing graph, as every model the CLI writes: it serves packed questions on CUDA and
    // forked rows on the CPU (docs/models.md).
    await makeModel({ preset: DEFAULT_MODEL_PRESET, outDir: dir, seed: DEFAULT_MODEL_SEED, features: { segmentIds: true } });
  } catch (err) {
    // Another process may have built it at the same moment; that copy is as good as ours.
    if (!existsSync(path.join(dir, MODEL_FILES.config))) throw err;
    return;
  }
  const decision = readDecisionFile(dir) ?? {};
  decision.model = { id: DEFAULT_MODEL_ID, weights: 'random', note: 'embedded default; install a real model for meaningful answers' };
  writeFileSync(path.join(dir, MODEL_FILES.decision), `${JSON.stringify(decision, null, 2)}\n`);
}
