/**
 * `decide bench --size gpu` and `decide bench --ort-profile` run where the package is installed as
 * a dependency, without its devDependencies: nothing they import, directly or through other
 * modules, loads onnxruntime-node (only the fresh-scoring baseline of the default bench does,
 * and src/cli/bench.ts says so when it is missing). An installed package crashed there with
 * "Cannot find package 'onnxruntime-node'" when gpu-scale imported the bench runner for one helper.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { expect, it } from 'vitest';

import { ROOT } from '../helpers/bin.js';

/** Every bare package a module and the relative modules it imports (statically or dynamically) load. */
function packagesLoadedBy(entry: string): Map<string, string> {
  const packages = new Map<string, string>();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'([^']+)'|import\('([^']+)'\)/g)) {
      const spec = m[1] ?? m[2]!;
      if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')));
      else if (!spec.startsWith('node:')) packages.set(spec, path.relative(ROOT, file));
    }
  };
  visit(path.join(ROOT, entry));
  return packages;
}

it.each(['bench/gpu-scale.ts', 'bench/ort-profile.ts'])('%s loads no devDependency', (entry) => {
  const devDependencies = Object.keys((JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { devDependencies: object }).devDependencies);
  const loaded = packagesLoadedBy(entry);
  const dev = [...loaded].filter(([name]) => devDependencies.some((d) => name === d || name.startsWith(`${d}/`)));
  expect(dev, 'devDependencies reached (package, importing file)').toEqual([]);
  expect(loaded.size).toBeGreaterThan(0);
});

it('the default bench does load onnxruntime-node (its baseline): the walk sees what it should', () => {
  expect(packagesLoadedBy('bench/run.ts').has('onnxruntime-node')).toBe(true);
});
