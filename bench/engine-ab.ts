/**
 * Engines side by side: several model directories loaded at once and timed on the bench's
 * workloads (quick sizes), repetitions interleaved (the order reversed every other one) so that a
 * shared machine's drift hits all of them; the median seconds per repetition and each engine's
 * speed relative to the first. Used to pick the int8 kernel (docs/benchmark.md, int8 weights).
 *
 *   npx tsc -p tsconfig.json && node dist/bench/engine-ab.js --threads 2 --repetitions 3 \\
 *     fp32=models/bench-small int8=models/bench-small-int8 [--workloads tickets,document]
 */
import { parseArgs } from 'node:util';

import { Engine } from '../src/engine/engine.js';
import { ModelRuntime } from '../src/runtime/model-runtime.js';
import { TextTokenizer } from '../src/runtime/tokenizer.js';
import { runEngine } from './systems.js';
import { BENCH_MODEL_ID, buildWorkload, workloadSpecs, type WorkloadName } from './workloads.js';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      threads: { type: 'string', default: '2' },
      repetitions: { type: 'string', default: '3' },
      workloads: { type: 'string', default: 'tickets,document' },
    },
  });
  const dirs = positionals.map((p) => {
    const at = p.indexOf('=');
    if (at < 1) throw new Error(`engine-ab: '${p}' is not NAME=MODEL_DIR`);
    return { name: p.slice(0, at), dir: p.slice(at + 1) };
  });
  if (dirs.length === 0) throw new Error('engine-ab: give at least one NAME=MODEL_DIR');
  const threads = Number(values.threads);
  const repetitions = Number(values.repetitions);
  // The workloads are built once, with the first model's tokenizer (the bench models share it).
  const runtime = await ModelRuntime.load(BENCH_MODEL_ID, dirs[0]!.dir, { engine: { threads } });
  const tokenizer = await TextTokenizer.load(dirs[0]!.dir);
  const engines = new Map<string, Engine>();
  try {
    for (const d of dirs) engines.set(d.name, await Engine.load({ modelDir: d.dir, threads }));
    const specs = workloadSpecs(true);
    for (const name of values.workloads.split(',') as WorkloadName[]) {
      const w = await buildWorkload(specs[name], runtime, 1, async (t) => (await tokenizer.encode(t)).length);
      for (const e of engines.values()) await runEngine(e, w); // warm-up
      const seconds = new Map(dirs.map((d) => [d.name, [] as number[]]));
      for (let r = 0; r < repetitions; r++) {
        const order = r % 2 === 0 ? dirs : [...dirs].reverse();
        for (const d of order) seconds.get(d.name)!.push((await runEngine(engines.get(d.name)!, w)).seconds);
      }
      const first = median(seconds.get(dirs[0]!.name)!);
      const cells = dirs.map((d) => {
        const s = seconds.get(d.name)!;
        return `${d.name} ${median(s).toFixed(2)} s (${s.map((x) => x.toFixed(2)).join(', ')}) ${(first / median(s)).toFixed(2)}x`;
      });
      console.log(`${name}, ${threads} thread(s): ${cells.join(' | ')}`);
    }
  } finally {
    for (const e of engines.values()) e.close();
    runtime.close();
  }
}

await main();
