/**
 * How the importer opens a checkpoint's files, so that a hostile or odd folder cannot hang it, leak
 * a file from elsewhere, or widen a file's permissions:
 *
 * - Every file read must be a regular file (a FIFO would block the import forever, a device or
 *   /proc file has no end); a directory where a file belongs is named as such.
 * - Files copied into the model (tokenizer and side files) may be symbolic links only when the link
 *   stays inside the checkpoint folder, or inside the `blobs/` folder of a Hugging Face hub cache
 *   whose `snapshots/<revision>/` folder is being imported (the cache's own layout). A link that
 *   leaves the folder is refused: copying it would publish a file the checkpoint does not own.
 * - A copy keeps the source's permissions, never wider: group and other get at most what they had
 *   on the source (a 0600 file stays 0600); the owner can always read and write the copy, so a
 *   read-only source (a hub cache) does not make the model read-only.
 * - JSON side files are parsed before they are copied, and their size is bounded.
 */
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { errnoText } from '../errno-text.js';
import { ImportError } from './hf-config.js';
import { lstatIfExists, statIfExists } from '../../support/stat-if-exists.js';

/** Larger JSON side files are refused (a real tokenizer.json is ~10-30 MB). */
export const MAX_SIDE_FILE_BYTES = 256 * 2 ** 20;

/**
 * The real path of `name` in the checkpoint folder after the checks above, or undefined when it is
 * not there. `copied`: the file will be copied into the model, so links must stay inside the folder.
 */
export function checkpointFile(hfDir: string, name: string, opts: { copied: boolean }): string | undefined {
  const file = path.join(hfDir, name);
  const link = lstatIfExists(file);
  if (link === undefined) return undefined;
  let real = file;
  if (link.isSymbolicLink()) {
    try {
      real = realpathSync(file);
    } catch (err) {
      throw new ImportError(`${name}: a symbolic link that cannot be followed: ${errnoText(err)}`);
    }
    if (opts.copied && !linkAllowed(hfDir, real)) {
      throw new ImportError(
        `${name}: a symbolic link to ${real}, outside the checkpoint folder; it is not copied into a model (copy the file into the folder if it belongs there)`,
      );
    }
  }
  const info = statIfExists(real);
  if (info === undefined) throw new ImportError(`${name}: missing`);
  if (info.isDirectory()) throw new ImportError(`${name}: a directory, not a file`);
  if (!info.isFile()) throw new ImportError(`${name}: not a regular file (a FIFO, socket or device cannot be imported)`);
  return real;
}

/** Inside the checkpoint folder, or inside the hub cache's blobs/ when the folder is snapshots/<rev>. */
function linkAllowed(hfDir: string, real: string): boolean {
  let folder: string;
  try {
    folder = realpathSync(hfDir);
  } catch {
    return false;
  }
  const inside = (dir: string) => real.startsWith(dir + path.sep);
  if (inside(folder)) return true;
  const snapshots = path.dirname(folder);
  return path.basename(snapshots) === 'snapshots' && inside(path.join(path.dirname(snapshots), 'blobs'));
}

/**
 * Copies side file `name` (checked by checkpointFile) from the checkpoint to `toDir`, parsing it
 * first when it is JSON; returns false when the checkpoint has no such file.
 */
export async function copySideFile(hfDir: string, name: string, toDir: string): Promise<boolean> {
  const real = checkpointFile(hfDir, name, { copied: true });
  if (real === undefined) return false;
  const info = statSync(real);
  if (info.size > MAX_SIDE_FILE_BYTES) throw new ImportError(`${name}: ${info.size} bytes, more than a side file may have (${MAX_SIDE_FILE_BYTES})`);
  let bytes: Buffer;
  try {
    bytes = await readFile(real);
  } catch (err) {
    throw new ImportError(`${name}: cannot be read: ${errnoText(err)}`);
  }
  if (name.endsWith('.json')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw new ImportError(`${name}: not valid JSON (${(err as Error).message})`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ImportError(`${name}: must hold a JSON object`);
  }
  // The source's bits, at most 0644, owner read/write added; the umask narrows it further.
  await writeFile(path.join(toDir, name), bytes, { mode: (info.mode & 0o644) | 0o600 });
  return true;
}

/**
 * The group/other bits every file of `hfDir`'s `names` allows (a 0600 safetensors file: none), for
 * the files the importer writes from them rather than copies (config.json, the graph and weights).
 */
export function sourceModeBits(hfDir: string, names: readonly string[]): number {
  let bits = 0o044;
  for (const name of names) {
    const real = checkpointFile(hfDir, name, { copied: false });
    if (real !== undefined) bits &= statSync(real).mode & 0o044;
  }
  return bits;
}

/**
 * Narrows every file under `dir` to owner read/write plus at most `bits` for group and other: a
 * model written from a private checkpoint stays as private (the umask alone would make it 0644).
 */
export async function narrowModes(dir: string, bits: number): Promise<void> {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const mode = statSync(file).mode & 0o777;
    const narrowed = (mode & 0o600) | (mode & bits & 0o044);
    if (narrowed !== mode) await chmod(file, narrowed);
  }
}
