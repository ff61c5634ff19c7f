/**
 * The package inside an application's bundle: a real esbuild bundle (ES module and CommonJS output)
 * of a script that imports the built package, run with node. The package reads its addon, worker
 * scripts and assets from its own folder, so bundled it cannot start: it must say so at import,
 * and say how to keep it out of the bundle. Marked external, the same script runs.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { decideBin, ROOT } from '../helpers/bin.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'decide-bundled-'));
const app = path.join(tmp, 'app.mjs');

beforeAll(async () => {
  await decideBin(); // dist/ as src/ says
  // The package as a dependency of the application: what `npm install decision-engine` gives.
  mkdirSync(path.join(tmp, 'node_modules'));
  symlinkSync(ROOT, path.join(tmp, 'node_modules', 'decision-engine'), 'dir');
  writeFileSync(app, "import { DecisionService } from 'decision-engine';\nconsole.log('loaded', typeof DecisionService.open);\n");
}, 300_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Bundles app.mjs into out/<name> and runs it; `external`: what esbuild leaves out of the bundle. */
async function bundleAndRun(name: string, format: 'esm' | 'cjs', external: string[]) {
  const outfile = path.join(tmp, 'out', name);
  await build({
    entryPoints: [app],
    bundle: true,
    platform: 'node',
    format,
    outfile,
    logLevel: 'silent',
    // The optional Postgres store's imports, hoisted by esbuild from the package's lazy import: not installed here.
    external: ['pg', 'pg-boss', ...external],
    // An ES module bundle of CommonJS dependencies needs a require, as esbuild's docs show.
    ...(format === 'esm' ? { banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" } } : {}),
  });
  return spawnSync(process.execPath, [outfile], { cwd: tmp, encoding: 'utf8', timeout: 60_000 });
}

describe('bundled into an application', () => {
  it.each([
    ['app.mjs', 'esm', 'runs from'],
    ['app.cjs', 'cjs', 'without a file location of its own'],
  ] as const)('as %s (%s output): refused at import, saying to mark it external', async (name, format, what) => {
    const run = await bundleAndRun(name, format, []);
    expect(run.status, run.stdout).not.toBe(0);
    expect(run.stderr).toContain('decision-engine cannot run bundled');
    expect(run.stderr).toContain(what);
    expect(run.stderr).toContain('--external:decision-engine');
    expect(run.stderr).toContain("code: 'ERR_MODEL_LOAD'");
  });

  it('marked external, the same script loads the package from node_modules', async () => {
    const run = await bundleAndRun('external.mjs', 'esm', ['decision-engine']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('loaded function');
  });
});
