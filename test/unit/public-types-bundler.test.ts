/**
 * The package's published types read under TypeScript's `moduleResolution: "bundler"` (`module:
 * "preserve"`), as Vite and esbuild projects set it, with skipLibCheck off: no error in our own
 * declaration files. An inferred type printed through fastify's namespace (`Fastify.X` in
 * app.d.ts) failed there while nodenext read it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { expect, it } from 'vitest';

import { decideBin, ROOT } from '../helpers/bin.js';

it('dist/*.d.ts type-check under bundler resolution (the library and the server entry points)', async () => {
  await decideBin(); // dist/ compiled from the current sources
  const dir = mkdtempSync(path.join(os.tmpdir(), 'types-bundler-'));
  try {
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'preserve', moduleResolution: 'bundler', strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')] },
        files: ['index.ts'],
      }),
    );
    const dist = (entry: string) => JSON.stringify(path.join(ROOT, 'dist', 'src', entry));
    writeFileSync(
      path.join(dir, 'index.ts'),
      [
        `import { createServer, decisionApp } from ${dist('server/app.js')};`,
        `import { DecisionService, Engine } from ${dist('index.js')};`,
        'export const used = [createServer, decisionApp, DecisionService, Engine];',
      ].join('\n'),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const output = await promisify(execFile)(process.execPath, [tsc, '-p', dir]).then(
      ({ stdout }) => stdout,
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    // Errors inside third-party declarations are theirs; none may be in ours.
    const ours = output.split('\n').filter((line) => line.includes(`${path.sep}dist${path.sep}`) && !line.includes('node_modules'));
    expect(ours).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
