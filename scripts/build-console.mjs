// Builds the web console (console/src, Preact + TSX) into dist/console: one JS bundle and one CSS
// file under assets/ with content hashes in their names (served with a year's cache by
// src/server/console.ts), and index.html pointing at them. Run by `npm run build` (build:console).
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(root, 'dist', 'console');

await rm(outDir, { recursive: true, force: true });
await mkdir(path.join(outDir, 'assets'), { recursive: true });
const result = await esbuild.build({
  absWorkingDir: root,
  entryPoints: { console: 'console/src/main.tsx' },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: 'console/tsconfig.json',
  outdir: path.join(outDir, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`build-console: expected one .js and one .css output, got ${outputs.join(', ')}`);
const template = await readFile(path.join(root, 'console', 'index.html'), 'utf8');
await writeFile(path.join(outDir, 'index.html'), template.replace('{{js}}', js).replace('{{css}}', css));
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`build-console: dist/console (${js}, ${css}; ${(bytes / 1024).toFixed(1)} KiB)`);
