/**
 * Where a command's output file may go: a regular file in an existing folder (outputPlaceProblem),
 * and not one of its inputs (outputClash). Paths are not compared as strings: a symbolic link, a hard link, `..` or a bind mount can name the input under another
 * path, and opening such an --out for writing would empty the input. Two names are the same file
 * when stat (which follows links) gives the same device and inode.
 */
import { accessSync, constants, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { statIfExists } from '../support/stat-if-exists.js';

export interface NamedInput {
  /** How the message names it: 'the input file', '--questions'. */
  label: string;
  path: string;
}

/**
 * The reason `output` may not be written, or undefined when it is no input. An output that does not
 * exist yet (or a dangling link) clashes with nothing. `outputLabel` names the output, `choose` the
 * option to change (the output itself by default; a file named after --out names --out).
 * @example
 * const clash = outputClash(outPath, [{ label: 'the input file', path: inputPath }]);
 * if (clash) return commandError('batch', clash);
 */
export function outputClash(output: string, inputs: readonly NamedInput[], outputLabel = '--out', choose = outputLabel): string | undefined {
  const out = statIfExists(output);
  if (out === undefined) return undefined;
  for (const input of inputs) {
    const info = statIfExists(input.path);
    if (info !== undefined && info.dev === out.dev && info.ino === out.ino) {
      if (path.resolve(output) === path.resolve(input.path)) {
        return `${outputLabel} ${output} is ${input.label} itself; writing it would destroy the input. Choose another ${choose}`;
      }
      return `${outputLabel} ${output} is ${input.label} (${input.path}) under another name (a link); writing it would destroy the input. Choose another ${choose}`;
    }
  }
  return undefined;
}

/**
 * Why `output` cannot be written as a file, or undefined: its folder must exist and take new files,
 * and it must be a regular file this process may write or not exist yet (not a folder, and not a
 * device such as /dev/null: the command writes a state file beside it and syncs and renames what it
 * writes). Checked before any model loads, so a refusal leaves nothing behind.
 * @example
 * const problem = outputPlaceProblem(outPath, '--out');
 */
export function outputPlaceProblem(output: string, outputLabel = '--out'): string | undefined {
  const folder = statIfExists(path.dirname(output));
  if (folder === undefined) return `${outputLabel} ${output}: its folder ${path.dirname(output)} does not exist`;
  if (!folder.isDirectory()) return `${outputLabel} ${output}: ${path.dirname(output)} is not a folder`;
  const out = statIfExists(output);
  if (out !== undefined && !out.isFile()) return `${outputLabel} ${output}: ${out.isDirectory() ? 'is a folder' : 'is not a regular file'}; name the file to write`;
  // Written in place (an existing file) and beside it (the state and lock files): both must be
  // writable, found now rather than after the model has loaded.
  for (const [place, what] of [[path.dirname(output), `its folder ${path.dirname(output)}`], ...(out ? [[output, 'the file'] as const] : [])] as const) {
    try {
      accessSync(place, constants.W_OK);
    } catch (err) {
      return `${outputLabel} ${output}: ${what} cannot be written (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); choose another ${outputLabel}`;
    }
  }
  return undefined;
}

/**
 * The path of the file `output` names, whatever name it is given by: its folder through realpath,
 * then the file's own symbolic link (followed to where it points, even when that file does not exist
 * yet). Files kept beside an output (`decide batch`'s lock and state file) are named after this, so
 * every name of one file finds them. The folder must exist (outputPlaceProblem).
 * @example
 * const lockPath = `${realOutputPath(outPath)}.lock`;
 */
export function realOutputPath(output: string): string {
  let current = path.join(realpathSync(path.dirname(output)), path.basename(output));
  // A chain of links to a file not written yet; 40 links, as the kernel allows, and then a loop.
  for (let hops = 0; hops < 40; hops++) {
    try {
      return realpathSync(current);
    } catch {
      // Not there yet, or a link to a file not there yet: follow the link by hand.
    }
    let target: string;
    try {
      target = readlinkSync(current);
    } catch {
      return current;
    }
    const next = path.resolve(path.dirname(current), target);
    try {
      current = path.join(realpathSync(path.dirname(next)), path.basename(next));
    } catch {
      return current;
    }
  }
  return current;
}
