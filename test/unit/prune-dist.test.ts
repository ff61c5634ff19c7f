/**
 * npm run build:ts prunes dist/: what tsc compiled from a source that is gone (renamed or
 * deleted) is removed, so the packed package ships no stale modules; everything compiled from a
 * source that exists stays.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { expect, it } from 'vitest';

import { decideBin, ROOT } from '../helpers/bin.js';

it('removes compiled files whose source is gone, and only those', async () => {
  await decideBin();
  const stray = path.join(ROOT, 'dist', 'src', 'gone-folder-for-prune-test');
  mkdirSync(stray, { recursive: true });
  for (const name of ['old.js', 'old.d.ts', 'old.js.map']) writeFileSync(path.join(stray, name), '// compiled from a source that was deleted\n');
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT, 'scripts', 'prune-dist.mjs')]);
  expect(stdout).toMatch(/removed \d+ file/);
  expect(existsSync(stray)).toBe(false);
  for (const kept of ['dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/cli/main.js', 'dist/bench/run.js']) expect(existsSync(path.join(ROOT, kept)), kept).toBe(true);
});
