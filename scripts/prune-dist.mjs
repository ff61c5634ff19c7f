// Removes what tsc compiled earlier from sources that are gone (dist/src, dist/bench): tsc writes
// but never deletes, so a renamed or deleted .ts would otherwise live on in dist/ and in the
// package that `npm pack` makes from it. Run after tsc (npm run build:ts).
import { readdirSync, rmSync, existsSync, rmdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUTPUTS = /\.(?:js|d\.ts|js\.map|d\.ts\.map)$/;
let removed = 0;

function prune(distDir, sourceDir) {
  if (!existsSync(distDir)) return;
  for (const entry of readdirSync(distDir, { withFileTypes: true })) {
    const out = path.join(distDir, entry.name);
    if (entry.isDirectory()) {
      prune(out, path.join(sourceDir, entry.name));
      if (readdirSync(out).length === 0) rmdirSync(out);
      continue;
    }
    if (!OUTPUTS.test(entry.name)) continue;
    const stem = entry.name.replace(OUTPUTS, '');
    if (!existsSync(path.join(sourceDir, `${stem}.ts`))) {
      rmSync(out);
      removed += 1;
    }
  }
}

prune(path.join(root, 'dist', 'src'), path.join(root, 'src'));
prune(path.join(root, 'dist', 'bench'), path.join(root, 'bench'));
if (removed > 0) console.log(`prune-dist: removed ${removed} file(s) compiled from sources that are gone`);
