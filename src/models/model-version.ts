/**
 * A new model version that shares its base's weights: `decide calibrate` writes one per fit, so a
 * pinned id never changes its answers. Every file of the base directory is hard-linked into the new
 * one (a symbolic link where a hard link is refused, e.g. across file systems); nothing is copied,
 * and deleting the base later leaves the new version whole. Only decision.json is the new version's
 * own. The cached LM-head rewrite (onnx/*.decide-gather.onnx) is linked with the graph it was made
 * from, and so is its stamp (the hash of that graph), which keeps the cache current in the new version.
 *
 * The directory is assembled under a hidden staging name (the registry ignores it) and renamed into
 * place in one step, so a failure part-way leaves nothing a registry could list.
 */
import { existsSync } from 'node:fs';
import { link, lstat, mkdir, readdir, readlink, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { MODEL_FILES, readDecisionFile, type DecisionFile } from '../engine/model-dir.js';
import { makeStagingDir } from './output-dir.js';
import { newModelIdProblem, parseDatedId } from './registry.js';

export interface NewVersionOptions {
  modelsDir: string;
  /** The directory of the version the new one is derived from. */
  baseDir: string;
  newId: string;
  /** Builds the new decision.json from the base's (parsed; {} when it has none). */
  decision(base: Record<string, unknown>): Record<string, unknown>;
}

export class ModelVersionError extends Error {}

/** `<alias>-YYYY-MM-DD` (UTC) for a base id; a base without a date uses its whole id as the alias. */
export function defaultVersionId(baseId: string, now: Date): string {
  const alias = parseDatedId(baseId)?.alias ?? baseId;
  return `${alias}-${now.toISOString().slice(0, 10)}`;
}

/** Throws unless `id` is a valid, unused model id under `modelsDir`. */
export function checkNewModelId(modelsDir: string, id: string): void {
  const problem = newModelIdProblem(modelsDir, id);
  if (problem) throw new ModelVersionError(problem);
  if (existsSync(path.join(modelsDir, id))) {
    throw new ModelVersionError(`model '${id}' already exists in ${modelsDir}; a pinned id never changes, so give the new version another id (--as)`);
  }
}

async function linkTree(from: string, to: string, top: boolean): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const name = entry.name;
    // Another process's temporary files, and the base's own decision.json, are not shared.
    if (name.includes('.tmp-') || (top && name === MODEL_FILES.decision)) continue;
    const source = path.join(from, name);
    const target = path.join(to, name);
    const stat = await lstat(source);
    if (stat.isDirectory()) {
      await linkTree(source, target, false);
    } else if (stat.isSymbolicLink()) {
      // A relative link would point elsewhere from the new directory: link to what it resolves to.
      await symlink(await realpath(source).catch(async () => path.resolve(from, await readlink(source))), target);
    } else if (stat.isFile()) {
      try {
        await link(source, target);
      } catch {
        await symlink(await realpath(source), target);
      }
    }
  }
}

/**
 * Creates `<modelsDir>/<newId>` sharing the base's files, with its own decision.json.
 * @example
 * await writeModelVersion({ modelsDir: 'models', baseDir: 'models/svc-alpha-2026-10', newId: 'svc-alpha-2026-11-22',
 *   decision: (base) => ({ ...base, calibration: { temperature: { choice: 1.4 } } }) });
 */
export async function writeModelVersion(options: NewVersionOptions): Promise<string> {
  const { modelsDir, baseDir, newId } = options;
  checkNewModelId(modelsDir, newId);
  let base: DecisionFile;
  try {
    base = readDecisionFile(baseDir) ?? {};
  } catch (err) {
    throw new ModelVersionError((err as Error).message); // it names the file and why
  }
  const final = path.join(modelsDir, newId);
  // Named as make-model's and import-model's staging is: a run killed mid-write leaves one that the
  // next write of this id removes.
  const staging = await makeStagingDir(final);
  try {
    await linkTree(baseDir, staging, true);
    await writeFile(path.join(staging, MODEL_FILES.decision), `${JSON.stringify(options.decision(base), null, 2)}\n`);
    // rename() onto an existing empty directory would succeed: check again right before it.
    if (existsSync(final)) throw new ModelVersionError(`model '${newId}' appeared in ${modelsDir} while this one was written`);
    await rename(staging, final);
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
  return final;
}
