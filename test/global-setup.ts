/**
 * Runs once before any test worker starts:
 * - compiles the TypeScript (tests that spawn `node bin/decide.js` run dist/, which must match src/);
 * - builds the tiny test model (generated, never committed).
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { tinyModelDir } from './helpers/tiny-model.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export default async function setup(): Promise<void> {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.json')], { cwd: root, stdio: 'inherit' });
  await tinyModelDir();
}
