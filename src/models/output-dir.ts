/**
 * Where `decide import-model` and `decide make-model` may write a model directory, and how it is put
 * in place. One set of rules for both, because both replace directories:
 *
 * - An existing --out is replaced only when it is one of our model directories: its decision.json
 *   carries the `import` record of import-model or the `builder` record of make-model. Anything else
 *   (a project folder, a checkpoint, a model installed by hand) is never deleted, --force or not.
 * - Nor is anything a person put inside one of ours (notes, a checkpoint): --force replaces it only
 *   when every file in it is one decide wrote (listed in its `.decide-files` manifest, or for a
 *   directory written before the manifest, one of the names our writers use) or one the engine
 *   derives from the graph and caches beside it with no action from the user (isDerivedFile,
 *   src/engine/derived-graph-cache.ts: the LM-head rewrite, the u8s8 int8 rewrite, the fused graph,
 *   and the temporaries of a load killed while making one); else it refuses and names the others.
 * - A dated id (`svc-alpha-2026-10`) is a pinned version that clients rely on: it is never replaced,
 *   --force or not. Remove it yourself first if you really mean to change what it answers.
 * - The commands never write a model inside another model directory (insideModelProblem: the
 *   registry lists only the models directory's own subfolders, so it would be served by nothing,
 *   and a pinned version would gain a folder). The engine alone does, for the graph it derives and
 *   keeps beside a model's own (src/models/fused-graph.ts), so checkModelOutput leaves it to them.
 * - The input checkpoint is never the output, nor inside it, nor around it. Directories are compared
 *   by device and inode, so a symbolic link, a `..` or a bind mount does not hide it.
 * - The new directory is staged under a hidden name beside --out (the registry ignores it) and
 *   renamed onto a --out that does not exist (or is an empty directory). rename(2) lets exactly one
 *   writer win: a second writer that finds --out taken at that moment fails, it never replaces the
 *   first one's model unless it was told to (--force) and the model there is ours.
 * - Missing parent directories are created one level at a time, so a path the kernel refuses (under
 *   /proc, say) is an error at once instead of Node's recursive mkdir retrying forever.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { isPlainObject } from '../api/json-value.js';
import { isDerivedFile } from '../engine/derived-graph-cache.js';
import { GRAPH_CANDIDATES, IMPORTED_SIDE_FILES, MODEL_FILES, readDecisionFile } from '../engine/model-dir.js';
import { EngineError } from '../errors/engine-error.js';
import { errnoText } from './errno-text.js';
import { DirectoryError, makeDirectories } from './make-directories.js';
import { parseDatedId } from './registry.js';

/** How a caller names the output folder and the switch that replaces it, for the refusals to say. */
export interface OutputTerms {
  out: string;
  force: string;
  /** How a models directory is given with the new model's name instead, where the caller can. */
  byId?: string;
}
/** makeModel's and importModel's options: a library caller's terms, and the messages' own. */
export const LIBRARY_TERMS: OutputTerms = { out: 'outDir', force: 'force: true' };
/** `decide make-model`: its flags (the new model's folder is always --out itself). */
export const MAKE_MODEL_TERMS: OutputTerms = { out: '--out', force: '--force' };
/** `decide import-model`: its flags (--out DIR --id NAME writes DIR/NAME). */
export const IMPORT_MODEL_TERMS: OutputTerms = { ...MAKE_MODEL_TERMS, byId: 'give the models directory with --id NAME' };

/**
 * Why a model may not be written where asked: an EngineError ERR_INPUT, its message in the library's
 * terms (outDir, force: true); a command shows inTermsOf(MAKE_MODEL_TERMS or IMPORT_MODEL_TERMS), naming its flags.
 */
export class ModelOutputError extends EngineError {
  private readonly wording: (terms: OutputTerms) => string;
  constructor(message: string | ((terms: OutputTerms) => string)) {
    const wording = typeof message === 'string' ? () => message : message;
    super('ERR_INPUT', wording(LIBRARY_TERMS));
    this.name = 'ModelOutputError';
    this.wording = wording;
  }
  inTermsOf(terms: OutputTerms): string {
    return this.wording(terms);
  }
}

export interface ModelOutputOptions {
  /** Replace an existing model directory that we wrote (never a pinned dated id, never anything else). */
  force: boolean;
  /** Directories the new model is made from: --out may not be one of them, inside one, or hold one. */
  inputs?: string[];
}

export interface ModelOutputPlan {
  outDir: string;
  /** True when --out holds one of our models that the new one replaces. */
  replaces: boolean;
}

/** The list of files decide wrote into a model directory (relative paths, '/'-separated, as JSON). */
export const FILES_MANIFEST = '.decide-files';
/** For a directory written before the manifest: the names import-model and make-model write. */
const LEGACY_FILES = new Set<string>([
  MODEL_FILES.config,
  MODEL_FILES.decision,
  ...IMPORTED_SIDE_FILES,
  MODEL_FILES.graph,
  `${MODEL_FILES.graph}_data`,
]);
/** At most this many foreign files are named in a refusal. */
const NAMED_FOREIGN_FILES = 10;

/** Every file (and link) under `dir`, relative, '/'-separated; links are not followed. */
async function filesUnder(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...(await filesUnder(dir, rel)));
    else out.push(rel);
  }
  return out.sort();
}

/**
 * The files in our model directory `dir` that decide did not write: what replacing it would delete
 * of someone else's. Empty when the whole directory is ours.
 */
export async function foreignFiles(dir: string): Promise<string[]> {
  let ours: Set<string> = LEGACY_FILES;
  try {
    const listed = JSON.parse(await readFile(path.join(dir, FILES_MANIFEST), 'utf8')) as unknown;
    if (Array.isArray(listed)) ours = new Set(listed.filter((f): f is string => typeof f === 'string'));
  } catch {
    // No manifest (written by an older version) or unreadable: the names our writers use.
  }
  return (await filesUnder(dir)).filter((f) => f !== FILES_MANIFEST && !ours.has(f) && !isDerivedFile(f));
}

/** What our commands write into decision.json; its presence marks a directory as ours to replace. */
export function writtenByUs(dir: string): boolean {
  try {
    const decision = readDecisionFile(dir);
    return isPlainObject(decision?.import) || isPlainObject(decision?.builder);
  } catch {
    return false;
  }
}

/**
 * Checks that a model may be written at `outDir` (resolved) before any work is done. Throws
 * ModelOutputError saying why not and what to do instead.
 */
export async function checkModelOutput(outDir: string, opts: ModelOutputOptions): Promise<ModelOutputPlan> {
  const out = path.resolve(outDir);
  for (const input of opts.inputs ?? []) await assertApart(out, path.resolve(input));
  const info = await lstat(out).catch(() => undefined);
  if (info === undefined) {
    await assertCreatable(out);
    return { outDir: out, replaces: false };
  }
  if (info.isSymbolicLink()) throw new ModelOutputError((t) => `${out} is a symbolic link; give the directory itself as ${t.out}`);
  if (!info.isDirectory()) throw new ModelOutputError(`${out} exists and is not a directory`);
  const entries = await readdir(out);
  if (entries.length === 0) return { outDir: out, replaces: false };
  if (!entries.includes(MODEL_FILES.config)) {
    // Most likely the models directory itself, given as --out without --id.
    throw new ModelOutputError(
      (t) =>
        `${out} already exists and is not a model directory (no config.json); ${t.out} names the new model's own directory ` +
        `(e.g. ${path.join(out, 'NAME-YYYY-MM')})${t.byId ? `, or ${t.byId}` : ''}`,
    );
  }
  if (!writtenByUs(out)) {
    throw new ModelOutputError(
      (t) =>
        `${out} already exists and was not written by decide import-model or make-model (its decision.json has no import or builder record); ` +
        `it is never replaced, ${t.force} or not: choose another ${t.out}, or remove it yourself`,
    );
  }
  if (parseDatedId(path.basename(out)) !== undefined) {
    throw new ModelOutputError(
      (t) =>
        `${out} already exists and is a pinned version (a dated id): a pinned id never changes, ${t.force} or not. ` +
        'Write the new model under a new dated id (e.g. a day-dated NAME-YYYY-MM-DD), or remove the old version yourself first',
    );
  }
  if (!opts.force) throw new ModelOutputError((t) => `${out} already exists; choose another ${t.out} (a new dated id) or pass ${t.force} to replace it`);
  await assertOnlyOurFiles(out);
  return { outDir: out, replaces: true };
}

/**
 * Why a command may not write a model at `out` (resolved) because it lies inside a model directory,
 * or undefined: its parent when the registry would list it as a model (config.json beside a decoder
 * graph), or any folder above it that is one of ours. Only ours is looked for higher up: a project
 * folder that happens to hold a config.json and a model.onnx may well keep its models directory inside it.
 */
export function insideModelProblem(out: string, terms: OutputTerms): string | undefined {
  const parent = path.dirname(out);
  const listed = existsSync(path.join(parent, MODEL_FILES.config)) && GRAPH_CANDIDATES.some((g) => existsSync(path.join(parent, g)));
  for (let dir = parent; ; dir = path.dirname(dir)) {
    if ((dir === parent && listed) || writtenByUs(dir)) {
      return (
        `--out ${out} lies inside the model directory ${dir}: a model there is served by no models directory, and it would change ` +
        `that model's own folder; write it beside it instead (in the models directory ${path.dirname(dir)}: ${terms.byId ? `${terms.byId}, or ` : ''}${terms.out} ${path.join(path.dirname(dir), 'NAME')})`
      );
    }
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** Refuses to replace a directory of ours that holds files decide did not write, naming them. */
async function assertOnlyOurFiles(dir: string): Promise<void> {
  const foreign = await foreignFiles(dir);
  if (foreign.length === 0) return;
  const named = foreign.slice(0, NAMED_FOREIGN_FILES).join(', ') + (foreign.length > NAMED_FOREIGN_FILES ? `, and ${foreign.length - NAMED_FOREIGN_FILES} more` : '');
  throw new ModelOutputError(
    (t) =>
      `${dir} holds ${foreign.length === 1 ? 'a file' : `${foreign.length} files`} that decide did not write (${named}); ` +
      `${t.force} replaces only what decide wrote and never deletes anything else: move them out of the directory, or choose another ${t.out}`,
  );
}

/** The hidden staging directory for `outDir` (created, with its parents): the model is assembled in it. */
export async function makeStagingDir(outDir: string): Promise<string> {
  const parent = path.dirname(outDir);
  makeParents(parent);
  await removeStaleStaging(parent, path.basename(outDir));
  const staging = path.join(parent, `.${path.basename(outDir)}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(staging);
  } catch (err) {
    throw new ModelOutputError(`cannot write in ${parent}: ${errnoText(err)}`);
  }
  return staging;
}

/**
 * Renames the finished staging directory to `plan.outDir`. When another writer put a model there
 * since the check, this one fails (and leaves that model alone) unless the plan replaces ours.
 */
export async function placeModelDir(staging: string, plan: ModelOutputPlan): Promise<void> {
  const { outDir } = plan;
  // What this write put there: a later --force replaces these and refuses to delete anything else.
  const written = await filesUnder(staging);
  // No more open than the files it names (a model from a private checkpoint is private throughout).
  let bits = 0o044;
  for (const f of written) bits &= (await stat(path.join(staging, f))).mode & 0o044;
  await writeFile(path.join(staging, FILES_MANIFEST), `${JSON.stringify(written)}\n`, { mode: 0o600 | bits });
  try {
    await rename(staging, outDir);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
  }
  if (!plan.replaces) {
    throw new ModelOutputError(`${outDir} was written by another process while this one was working; it is left as that process wrote it`);
  }
  // Replacing our own model (--force): check again that what is there now is ours, then swap.
  if (!writtenByUs(outDir)) throw new ModelOutputError(`${outDir} changed while this model was written and is no longer one of ours; left as it is`);
  await assertOnlyOurFiles(outDir);
  const old = path.join(path.dirname(outDir), `.${path.basename(outDir)}.tmp-old-${process.pid}-${randomBytes(4).toString('hex')}`);
  await rename(outDir, old);
  try {
    await rename(staging, outDir);
  } catch (err) {
    await rename(old, outDir).catch(() => undefined);
    throw err;
  }
  await rm(old, { recursive: true, force: true });
}

/** Refuses an --out that is the input, inside it, or holding it (compared by device and inode). */
async function assertApart(out: string, input: string): Promise<void> {
  const inputInfo = await stat(input).catch(() => undefined);
  if (inputInfo === undefined) return;
  const same = (a: { dev: number; ino: number }) => a.dev === inputInfo.dev && a.ino === inputInfo.ino;
  // --out or any directory above it is the input: --out is the input or lies inside it.
  for (let dir = out; ; dir = path.dirname(dir)) {
    const info = await stat(dir).catch(() => undefined);
    if (info !== undefined && same(info)) {
      throw new ModelOutputError((t) =>
        dir === out ? `${t.out} ${out} is the input folder itself; write the model somewhere else` : `${t.out} ${out} is inside the input folder ${input}; write the model somewhere else`,
      );
    }
    if (path.dirname(dir) === dir) break;
  }
  // The input inside --out: replacing --out would delete it.
  const outInfo = await stat(out).catch(() => undefined);
  if (outInfo === undefined) return;
  for (let dir = await realpathOr(input); ; dir = path.dirname(dir)) {
    const info = await stat(dir).catch(() => undefined);
    if (info !== undefined && info.dev === outInfo.dev && info.ino === outInfo.ino) {
      throw new ModelOutputError((t) => `${t.out} ${out} holds the input folder ${input}; write the model somewhere else`);
    }
    if (path.dirname(dir) === dir) break;
  }
}

async function realpathOr(p: string): Promise<string> {
  return realpath(p).catch(() => p);
}

/** The nearest existing ancestor of a new --out must be a directory (not a file). */
async function assertCreatable(out: string): Promise<void> {
  for (let dir = path.dirname(out); ; dir = path.dirname(dir)) {
    const info = await stat(dir).catch(() => undefined);
    if (info !== undefined) {
      if (!info.isDirectory()) throw new ModelOutputError(`cannot create ${out}: ${dir} is not a directory`);
      return;
    }
    if (path.dirname(dir) === dir) return;
  }
}

/** makeDirectories, its refusal as this module's error. */
function makeParents(dir: string): void {
  try {
    makeDirectories(dir);
  } catch (err) {
    throw err instanceof DirectoryError ? new ModelOutputError(err.message) : err;
  }
}

/**
 * Staging directories of earlier writes to the same name whose process is gone (killed mid-write).
 * They were never visible to the registry; this only reclaims their space.
 */
async function removeStaleStaging(parent: string, name: string): Promise<void> {
  await removeLeftovers(parent, `.${name}.tmp-`, /^(?:old-)?(\d+)-/);
}

/**
 * Removes the entries of `parent` named `prefix` and then a pid (`pidPattern`'s first group reads
 * it from the rest of the name) whose process is gone: what a run killed mid-write left.
 */
export async function removeLeftovers(parent: string, prefix: string, pidPattern: RegExp): Promise<void> {
  for (const entry of await readdir(parent).catch(() => [] as string[])) {
    if (!entry.startsWith(prefix)) continue;
    const pid = Number(pidPattern.exec(entry.slice(prefix.length))?.[1]);
    if (!Number.isInteger(pid) || pid === process.pid || processAlive(pid)) continue;
    await rm(path.join(parent, entry), { recursive: true, force: true });
  }
}

/** Whether a process with this pid exists (EPERM: it does, owned by another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
