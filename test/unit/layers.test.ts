/**
 * The layering of src/ (README, "Where things are"): every relative import points to the same
 * layer or a lower one. A new upward arrow (say the engine importing a wire schema, or the runtime
 * importing the service) fails here with the file and the import named.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Top-level folder (or file) of src/ -> its rank; an import may only go to an equal or lower rank. */
const RANK: Record<string, number> = {
  domain: 0,
  errors: 0,
  engine: 1,
  runtime: 2,
  api: 2,
  models: 3,
  service: 4,
  batches: 5,
  calibration: 6,
  server: 7,
  cli: 8,
  // The package's entry points (index.ts and the subpath exports): re-exports only.
  entry: 9,
  'index.ts': 9,
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(e.name) ? [full] : [];
  });
}

function layerOf(file: string): string {
  return path.relative(SRC, file).split(path.sep)[0]!;
}

describe('src/ layering', () => {
  it('knows the layer of every top-level entry of src/', () => {
    const unknown = readdirSync(SRC).filter((name) => !(name in RANK));
    expect(unknown, 'add new top-level folders of src/ to RANK (and to the README map)').toEqual([]);
  });

  it('has no import that points up a layer', () => {
    const upward: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const from = layerOf(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
        const target = path.resolve(path.dirname(file), m[1]!);
        if (!target.startsWith(SRC)) continue;
        const to = layerOf(target);
        if (RANK[to]! > RANK[from]!) upward.push(`${path.relative(SRC, file)} imports ${m[1]} (${from} -> ${to})`);
      }
    }
    expect(upward).toEqual([]);
  });
});
