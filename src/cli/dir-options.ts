/**
 * The folder options (--data-dir, --models-dir): the flag, else its variable, else the default, and
 * the check that refuses an unusable folder before a command writes anything (an API key, say).
 * An empty flag is a usage error, since path.resolve('') is the current directory; an empty
 * variable is unset (envPath), as every other empty setting is.
 */
import { mkdirSync, rmdirSync } from 'node:fs';
import path from 'node:path';

import { envPath, folderOf, type FolderSetting } from '../support/env-path.js';
import { directoryProblem } from '../models/make-directories.js';
import { statIfExists } from '../support/stat-if-exists.js';

/** The resolved folder and where it came from (the flag or the variable, for messages), or the usage error's message. */
export function dirOption(flagValue: string | undefined, flag: string, setting: FolderSetting): { dir: string; from: string } | { problem: string } {
  if (flagValue !== undefined) {
    if (flagValue.trim() === '') return { problem: `${flag} must name a folder, got an empty value` };
    return { dir: path.resolve(flagValue), from: flag };
  }
  const fromEnv = envPath(process.env, setting.variable);
  return { dir: folderOf(setting, undefined), from: fromEnv === undefined ? flag : setting.variable };
}

/**
 * Why `dir` cannot serve as the folder `from` (a flag or a variable) names, or undefined. It must be a folder, or one that
 * can be created; with `write`, an existing one must also take a new entry (tried with a folder
 * made and removed at once: only the system says, root passes every permission check).
 */
export function folderProblem(dir: string, from: string, { write = false } = {}): string | undefined {
  let info;
  try {
    info = statIfExists(dir);
  } catch (err) {
    // A loop of links, a level that cannot be looked into: the flag's fault, said as such.
    return `${from}: cannot use ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
  }
  let problem: string | undefined;
  if (info === undefined) problem = directoryProblem(dir);
  else if (!info.isDirectory()) problem = `${dir} is not a folder`;
  else if (write) {
    const probe = path.join(dir, `.decide-write-check-${process.pid}`);
    try {
      mkdirSync(probe);
      rmdirSync(probe);
    } catch (err) {
      problem = `cannot write in ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
    }
  }
  return problem === undefined ? undefined : `${from}: ${problem}`;
}
