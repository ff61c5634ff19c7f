/**
 * No import cycles in src/ and bench/, type-only and dynamic imports included: two files that need
 * each other's types or helpers give the shared piece one home of its own (for example
 * server/public-routes.ts, calibration/report-types.ts, bench/stat.ts). A new cycle fails here with
 * its files named in order.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'results' ? [] : sourceFiles(full);
    return /\.ts$/.test(e.name) ? [full] : [];
  });
}

/** Relative imports of a file (static, `import type`, `export ... from`, `import()`), as resolved .ts paths. */
function importsOf(file: string, known: Set<string>): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
    const target = path.resolve(path.dirname(file), m[1]!).replace(/\.js$/, '.ts');
    if (known.has(target)) out.push(target);
  }
  return out;
}

/** Every cycle's files, found by depth-first search (each cycle reported once, from where it is first entered). */
function cycles(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

it('src/ and bench/ have no import cycles', () => {
  const files = [...sourceFiles(path.join(ROOT, 'src')), ...sourceFiles(path.join(ROOT, 'bench'))];
  const known = new Set(files);
  const graph = new Map(files.map((f) => [f, importsOf(f, known)]));
  expect([...graph.values()].flat().length).toBeGreaterThan(100);
  const named = cycles(graph).map((cycle) => cycle.map((f) => path.relative(ROOT, f)).join(' -> '));
  expect(named).toEqual([]);
});
