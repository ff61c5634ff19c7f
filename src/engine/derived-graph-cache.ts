/**
 * The cache of graphs the engine derives from a model's stored graph, with no action from the user,
 * and keeps beside it: the LM-head rewrite (scoring-graph.ts), the u8 x s8 int8 rewrite on VNNI/AMX
 * CPUs (int8-graph.ts) and the fused graph on CUDA hosts (src/models/fused-graph.ts). One set of
 * rules for the three:
 *
 * - A derivation is named after the stored graph with its tag (DERIVED_TAGS: `model.onnx` gives
 *   `model.decide-gather.onnx`) and has a stamp beside it: one line of JSON saying what it was made
 *   from (its version, and the stored graph's hash or the size and mtime of its files). It is used
 *   only when its stamp matches.
 * - It is written under a name unique to the load (loadTag: `.tmp-<pid>-<random>` after the name;
 *   the fused folder `-wip-<tag>`, since the importer refuses '.tmp-' in a folder's name) and renamed
 *   into place: engines of one process, or of several, may be making the same one. A stale
 *   derivation is replaced in one rename, never deleted first: another process may be loading it.
 * - The stamp is written last: a derivation without one (a crash in between) is made again.
 *
 * The model-directory code knows every derived file by isDerivedFile: --force replaces them
 * (src/models/output-dir.ts), and a model's fingerprint leaves them out (model-fingerprint.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The tag of each derivation: its files are named `<stored graph without .onnx>.decide-<tag>…` (derivedPath). */
export const DERIVED_TAGS = {
  /** The LM-head rewrite: `.decide-gather.onnx` and its stamp `.decide-gather.json` (lm-head-rewrite.ts). */
  lmHead: 'gather',
  /** The u8 x s8 int8 rewrite: `.decide-u8s8.onnx`, `.onnx_data` and `.json` (int8-rewrite.ts). */
  u8s8: 'u8s8',
  /**
   * The fused graph, a model directory of its own: the folder `.decide-fused/` and its stamp
   * `.decide-fused.json`, `-no-if` after the tag for the form CUDA graphs run, `-own-kernels` after
   * either for the form with the engine's own operators (src/models/fused-graph.ts).
   */
  fused: 'fused',
} as const;

/**
 * A derived file's path: `<stored graph without .onnx>.decide-<tag><rest>`, beside the stored graph.
 * @example derivedPath('m/onnx/model.onnx', DERIVED_TAGS.lmHead, '.json') // 'm/onnx/model.decide-gather.json'
 */
export function derivedPath(storedGraph: string, tag: string, rest = ''): string {
  return `${storedGraph.replace(/\.onnx$/, '')}.decide-${tag}${rest}`;
}

/** A name with `.decide-<tag>` followed by `.`, `/`, `-` or its end, in any folder. */
const DERIVED_FILE = new RegExp(`(?:^|/)[^/]*\\.decide-(?:${Object.values(DERIVED_TAGS).join('|')})(?:[./-]|$)`);

/**
 * Whether `file` (a bare name, or a path relative to a model directory, '/'-separated) is one the
 * engine derived and caches beside the graph, or a temporary of a load killed while making one
 * (`.tmp-`, `-wip-`, `-stale-`, `-checkpoint-` after the name).
 */
export function isDerivedFile(file: string): boolean {
  return DERIVED_FILE.test(file);
}

/** SHA-256 of a file, read in chunks (the JS thread stays free between them). */
export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Size and modification time of a file a derivation was made from, as its stamp records them. */
export interface FileStamp {
  file: string;
  size: number;
  mtimeMs: number;
}

/** The FileStamp of each of `files` (relative to `dir`); throws when one cannot be read. */
export function fileStamps(dir: string, files: readonly string[]): FileStamp[] {
  return files.map((file) => {
    const s = statSync(path.resolve(dir, file));
    return { file, size: s.size, mtimeMs: s.mtimeMs };
  });
}

/**
 * A stamp file's content when it parses and `valid` accepts it, else undefined (missing, torn, of
 * another form). `valid` may throw (reading a field of null, say): that reads as not valid.
 */
export function readStamp<T>(file: string, valid: (parsed: unknown) => parsed is T): T | undefined {
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return valid(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** A tag unique to this load, for temporary names: `<pid>-<8 hex digits>`. */
export function loadTag(): string {
  return `${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** The temporary name of `file` for the load `tag`. */
export function tempSibling(file: string, tag: string = loadTag()): string {
  return `${file}.tmp-${tag}`;
}

/** Removes a file, if there; never throws (a read-only directory: a temp file is never used). */
export function removeQuietly(file: string): void {
  try {
    rmSync(file, { force: true });
  } catch {
    // already gone, or a read-only directory: a temp file is never used
  }
}

/**
 * Writes `stamp` to `stampFile` (one line of JSON) through a temporary file and a rename, so that
 * a reader sees the old stamp or the new one, never part of one. Call it after the derivation is
 * in place. Throws when it cannot be written, with the temporary file removed.
 */
export function writeStamp(stampFile: string, stamp: unknown, tag: string = loadTag()): void {
  const temp = tempSibling(stampFile, tag);
  try {
    writeFileSync(temp, `${JSON.stringify(stamp)}\n`);
    renameSync(temp, stampFile);
  } catch (err) {
    removeQuietly(temp);
    throw err;
  }
}
