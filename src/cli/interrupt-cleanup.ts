/**
 * Ctrl-C, SIGTERM, SIGHUP or SIGUSR2 (signal-exit.ts) during `decide make-model` / `decide
 * import-model`: the hidden staging folder beside --out (`.<name>.tmp-<pid>-…`, as big as the
 * model) and an int8 check's fp32 twin are this process's own and half written, so they are removed
 * before it exits with the usual code (128 + the signal's number: 130, 143, 129, 140). Only a kill that cannot be caught leaves them; then the next write to
 * the same name (output-dir.ts) or the next int8 check (int8-check.ts) removes them.
 */
import { existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { exitNow } from '../engine/native.js';
import { TWIN_PREFIX } from './int8-check.js';
import { onGracefulStop, SIGNAL_EXIT_CODES, type StopSignal } from './signal-exit.js';

/** The paths of the entries of `dir` whose names start with `prefix`. */
function listStartingWith(dir: string, prefix: string): string[] {
  try {
    return readdirSync(dir).filter((name) => name.startsWith(prefix)).map((name) => path.join(dir, name));
  } catch {
    return [];
  }
}

/** Removes the entries of `dir` whose names start with `prefix`. */
function removeStartingWith(dir: string, prefix: string): void {
  for (const entry of listStartingWith(dir, prefix)) rmSync(entry, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Until the returned function is called, the stop signals remove this process's staging folders
 * for `outDir` and its int8 twins, then exit.
 * @example
 * const done = removeStagingOnSignal(outDir);
 * try { await makeModel({ ... }); } finally { done(); }
 */
export function removeStagingOnSignal(outDir: string, command: string): () => void {
  const out = path.resolve(outDir);
  const onSignal = (signal: StopSignal) => {
    process.stderr.write(`\ndecide ${command}: ${signal}: removing the unfinished model, nothing was written to ${outDir}\n`);
    // Staging names carry the pid right after `.tmp-`. An `old-` one is the model that --force
    // is replacing, moved aside for a moment: it goes back unless the new one is already in place.
    const parent = path.dirname(out);
    removeStartingWith(parent, `.${path.basename(out)}.tmp-${process.pid}-`);
    const aside = listStartingWith(parent, `.${path.basename(out)}.tmp-old-${process.pid}-`)[0];
    if (aside !== undefined && !existsSync(out)) renameSync(aside, out);
    else removeStartingWith(parent, `.${path.basename(out)}.tmp-old-${process.pid}-`);
    removeStartingWith(os.tmpdir(), `${TWIN_PREFIX}${process.pid}-`);
    exitNow(SIGNAL_EXIT_CODES[signal]);
  };
  return onGracefulStop(onSignal);
}
