/**
 * dist/console built from the current console/ sources: `npm run build` makes it (build:console);
 * tests that serve the console rebuild it here only when a source is newer than the built page,
 * one worker at a time (the lock decideBin() uses).
 */
import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { ROOT, withLock } from './bin.js';

export const CONSOLE_DIST = path.join(ROOT, 'dist', 'console');
const SOURCES = [path.join(ROOT, 'console'), path.join(ROOT, 'scripts', 'build-console.mjs')];

function newestSource(): number {
  let newest = 0;
  const visit = (p: string) => {
    const st = statSync(p);
    if (st.isDirectory()) for (const name of readdirSync(p)) visit(path.join(p, name));
    else newest = Math.max(newest, st.mtimeMs);
  };
  SOURCES.forEach(visit);
  return newest;
}

const isStale = () => (statSync(path.join(CONSOLE_DIST, 'index.html'), { throwIfNoEntry: false })?.mtimeMs ?? -1) < newestSource();

let ready: Promise<string> | undefined;

/** The built console directory, rebuilt first when stale. */
export function consoleBuilt(): Promise<string> {
  ready ??= (async () => {
    if (!isStale()) return CONSOLE_DIST;
    await withLock(async () => {
      if (isStale()) await promisify(execFile)(process.execPath, [path.join(ROOT, 'scripts', 'build-console.mjs')], { cwd: ROOT });
    });
    return CONSOLE_DIST;
  })();
  return ready;
}
