/**
 * Whether a command's output file would overwrite one of its inputs. Paths are not compared as
 * strings: a symbolic link, a hard link, `..` or a bind mount can name the input under another
 * path, and opening such an --out for writing would empty the input. Two names are the same file
 * when stat (which follows links) gives the same device and inode.
 */
import { statSync } from 'node:fs';

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
  const out = statSync(output, { throwIfNoEntry: false });
  if (out === undefined) return undefined;
  for (const input of inputs) {
    const info = statSync(input.path, { throwIfNoEntry: false });
    if (info !== undefined && info.dev === out.dev && info.ino === out.ino) {
      return `${outputLabel} ${output} is ${input.label} (${input.path}) under another name (a link); writing it would destroy the input. Choose another ${choose}`;
    }
  }
  return undefined;
}
