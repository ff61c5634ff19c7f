/**
 * The layering of src/ (README, "Where things are"): every relative import points to the same
 * layer or a lower one. A new upward arrow (say the engine importing a wire schema, or the runtime
 * importing the service) fails here with the file and the import named. Inside src/batches/ the
 * same holds floor by floor (ports, the shared parts, the SQLite and Postgres backends, the opener,
 * the services), and the two backends are reached only through the opener.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BENCH = path.join(ROOT, 'bench') + path.sep;
const TEST = path.join(ROOT, 'test') + path.sep;

/** Top-level folder (or file) of src/ -> its rank; an import may only go to an equal or lower rank. */
const RANK: Record<string, number> = {
  domain: 0,
  errors: 0,
  // Infrastructure with no knowledge of decisions: worker threads, environment paths, option refusals.
  support: 0,
  engine: 1,
  runtime: 2,
  api: 2,
  models: 3,
  service: 4,
  batches: 5,
  calibration: 6,
  server: 7,
  // The benchmarks (bench/, beside src/): they drive the server and the batch runner; the CLI runs them.
  bench: 7.5,
  cli: 8,
  // The package's entry points (index.ts and the subpath exports): re-exports only.
  entry: 9,
  'index.ts': 9,
};

/**
 * src/batches/ floor by floor: the entry with the longest matching path prefix gives a file's floor.
 * Ports (interfaces only) < the parts every backend shares (line and row formats, the runner,
 * settings, uploads, the wire mappings) < the backends < the one opener naming both < the
 * services the routes call.
 */
const BATCH_FLOOR: Record<string, number> = {
  'ports.ts': 0,
  'records.ts': 1,
  'jsonl-lines.ts': 1,
  'chunk-scoring.ts': 1,
  'runner.ts': 1,
  'settings.ts': 1,
  'uploads.ts': 1,
  'private-files.ts': 1,
  'query.ts': 1,
  'wire.ts': 1,
  'validate-upload.ts': 1,
  'sql-rows.ts': 1,
  'input-lines.ts': 1,
  'pid-lock.ts': 1,
  'file-lock.ts': 1,
  'sqlite-driver.ts': 1,
  'record-thread.ts': 1,
  'record-worker.ts': 1,
  'store-outages.ts': 1,
  'storage-failures.ts': 1,
  openai: 1,
  sqlite: 2,
  pg: 2,
  'open-stores.ts': 3,
  'batch-service.ts': 4,
  'openai/openai-batches.ts': 4,
};
const BATCHES = path.join(SRC, 'batches');
const BACKENDS = ['sqlite', 'pg'].map((name) => path.join(BATCHES, name));
const OPENER = path.join(BATCHES, 'open-stores.ts');

function batchFloor(file: string): number | undefined {
  const rel = path.relative(BATCHES, file).split(path.sep).join('/');
  const key = Object.keys(BATCH_FLOOR)
    .filter((k) => rel === k || rel.startsWith(`${k}/`))
    .sort((a, b) => b.length - a.length)[0];
  return key === undefined ? undefined : BATCH_FLOOR[key];
}

/** Every relative import of every source file of src/, resolved to a .ts path. */
function imports(): Array<{ file: string; spec: string; target: string }> {
  return sourceFiles(SRC).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => ({
      file,
      spec: m[1]!,
      target: path.resolve(path.dirname(file), m[1]!).replace(/\.js$/, '.ts'),
    })),
  );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(e.name) ? [full] : [];
  });
}

function layerOf(file: string): string {
  if (file.startsWith(BENCH)) return 'bench';
  return path.relative(SRC, file).split(path.sep)[0]!;
}

describe('src/ layering', () => {
  it('knows the layer of every top-level entry of src/', () => {
    const unknown = readdirSync(SRC).filter((name) => !(name in RANK));
    expect(unknown, 'add new top-level folders of src/ to RANK (and to the README map)').toEqual([]);
  });

  it('has no import that points up a layer, bench/ included (above the server, below the CLI), and none into test/', () => {
    const upward: string[] = [];
    for (const file of [...sourceFiles(SRC), ...sourceFiles(BENCH)]) {
      const from = layerOf(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
        const target = path.resolve(path.dirname(file), m[1]!);
        const shown = `${path.relative(ROOT, file)} imports ${m[1]}`;
        if (target.startsWith(TEST)) upward.push(`${shown} (into test/)`);
        if (!target.startsWith(SRC) && !target.startsWith(BENCH)) continue;
        const to = layerOf(target);
        if (RANK[to]! > RANK[from]!) upward.push(`${shown} (${from} -> ${to})`);
      }
    }
    expect(upward).toEqual([]);
  });
});

describe('src/batches/ floors', () => {
  it('knows the floor of every file of src/batches/', () => {
    const unknown = sourceFiles(BATCHES)
      .filter((f) => batchFloor(f) === undefined)
      .map((f) => path.relative(BATCHES, f));
    expect(unknown, 'add new files or folders of src/batches/ to BATCH_FLOOR (and to the README map)').toEqual([]);
  });

  it('has no import inside src/batches/ that points up a floor', () => {
    const upward = imports()
      .filter(({ file, target }) => file.startsWith(BATCHES) && target.startsWith(BATCHES))
      .filter(({ file, target }) => batchFloor(target)! > batchFloor(file)!)
      .map(({ file, spec, target }) => `${path.relative(SRC, file)} imports ${spec} (floor ${batchFloor(file)} -> ${batchFloor(target)})`);
    expect(upward).toEqual([]);
  });

  it('reaches the SQLite and Postgres backends only through the opener', () => {
    const backendOf = (f: string) => BACKENDS.find((dir) => f.startsWith(`${dir}${path.sep}`));
    const crossing = imports()
      .filter(({ file, target }) => backendOf(target) !== undefined && backendOf(file) !== backendOf(target) && file !== OPENER)
      .map(({ file, spec }) => `${path.relative(SRC, file)} imports ${spec}`);
    expect(crossing).toEqual([]);
    const opened = new Set(imports().filter(({ file }) => file === OPENER).map(({ target }) => backendOf(target)));
    expect([...opened].filter(Boolean).sort()).toEqual([...BACKENDS].sort());
  });
});
