/**
 * The package's published types read by a strict consumer that installed it: `"types": ["node"]`
 * (as this project's own tsconfig has) and skipLibCheck off, NodeNext resolution through
 * package.json's exports. No error at all, in our declarations or in a dependency's that ours pull
 * in: makeModel's declarations once reached onnx-proto's, whose ambient `Long` such a consumer
 * lacks. The documented library calls compile, decideNormalized with a validated request included.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { expect, it } from 'vitest';

import { decideBin, ROOT } from '../helpers/bin.js';

it('a NodeNext consumer with "types": ["node"] and skipLibCheck off type-checks every entry point', async () => {
  await decideBin(); // dist/ compiled from the current sources
  const dir = mkdtempSync(path.join(os.tmpdir(), 'types-consumer-'));
  try {
    mkdirSync(path.join(dir, 'node_modules'));
    symlinkSync(ROOT, path.join(dir, 'node_modules', 'decision-engine'), 'dir');
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', types: ['node'], typeRoots: [path.join(ROOT, 'node_modules', '@types')] },
        files: ['index.ts'],
      }),
    );
    writeFileSync(
      path.join(dir, 'index.ts'),
      [
        "import { DecisionService, Engine } from 'decision-engine';",
        "import { Engine as EngineOnly } from 'decision-engine/engine';",
        "import { makeModel, PRESETS, validateDecideRequest, type NormalizedDecideRequest } from 'decision-engine/service';",
        "import { createServer, decisionApp } from 'decision-engine/server';",
        // The types public methods return, named by a dependent (from the root and from /service).
        "import type { ServiceMetrics, ModelEntry, RecordOutcome, MadeModel, MakeModelOptions } from 'decision-engine';",
        "import type { ServiceMetrics as Metrics, ModelEntry as Entry, RecordOutcome as Outcome } from 'decision-engine/service';",
        'export const used = [Engine, EngineOnly, makeModel, PRESETS, createServer, decisionApp];',
        'export async function report(svc: DecisionService, records: Parameters<DecisionService["decideRecords"]>[1]) {',
        '  const metrics: ServiceMetrics = await svc.metrics();',
        '  const entry: ModelEntry = svc.describeModel("svc-alpha");',
        '  const outcomes: RecordOutcome[] = await svc.decideRecords("svc-alpha", records);',
        '  const same: [Metrics, Entry, Outcome[]] = [metrics, entry, outcomes];',
        '  return same;',
        '}',
        'export const build = (options: MakeModelOptions): Promise<MadeModel> => makeModel(options);',
        'export async function ask(svc: DecisionService, body: unknown, signal: AbortSignal) {',
        '  const request: NormalizedDecideRequest = validateDecideRequest(body);',
        '  return (await svc.decideNormalized(request, { signal })).answers;',
        '}',
      ].join('\n'),
    );
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const output = await promisify(execFile)(process.execPath, [tsc, '-p', dir]).then(
      ({ stdout }) => stdout,
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    expect(output.split('\n').filter((line) => line.includes('error TS'))).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 300_000);
