/**
 * The engine on the standard-op graph against the same model with fused attention
 * (DecoderFeatures.attention 'fused': fused contrib ops and ONNX's Attention), same preset and seed, so
 * the same weights. Times engine.score over the same groups, prefix pass included (prefix cache
 * emptied) and suffix pass only (prefixes cached), alternating which model runs first; prints the
 * medians and the largest label-logit difference between the two. CPU only, the thread count given.
 *
 *   npx tsx bench/fused-attention.ts [--preset small] [--threads 1] [--prefix 600] [--repetitions 5]
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { Engine, type ScoreGroup } from '../src/engine/engine.js';
import { makeModel, PRESETS } from '../src/models/builder/index.js';

const { values: args } = parseArgs({
  options: {
    preset: { type: 'string', default: 'small' },
    threads: { type: 'string', default: '1' },
    prefix: { type: 'string', default: '600' },
    repetitions: { type: 'string', default: '5' },
    dir: { type: 'string', default: path.resolve('models') },
  },
});
const preset = args.preset!;
const threads = Number(args.threads);
const prefixLength = Number(args.prefix);
const repetitions = Number(args.repetitions);
const shape = PRESETS[preset];
if (shape === undefined) throw new Error(`unknown preset ${preset}`);

async function modelDir(attention: 'ops' | 'fused'): Promise<string> {
  const dir = path.join(args.dir!, `fused-bench-${preset}-${attention}`);
  if (!existsSync(path.join(dir, 'onnx', 'model.onnx'))) {
    process.stderr.write(`building ${dir} ...\n`);
    await makeModel({ preset, seed: 1, outDir: dir, features: attention === 'fused' ? { attention } : {} });
  }
  return dir;
}

let state = 12345;
const ids = (n: number) =>
  Int32Array.from({ length: n }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state % (shape.vocabSize - 64);
  });
/** Four states of `prefixLength` tokens with six 24-token questions each (two labels): the tickets shape. */
const groups: ScoreGroup[] = Array.from({ length: 4 }, () => ({
  prefix: ids(prefixLength),
  suffixes: Array.from({ length: 6 }, () => ({ tokens: ids(24), labels: ids(2) })),
}));

const engines = {
  ops: await Engine.load({ modelDir: await modelDir('ops'), threads }),
  fused: await Engine.load({ modelDir: await modelDir('fused'), threads }),
};
type Name = keyof typeof engines;
const times: Record<Name, { full: number[]; suffix: number[] }> = { ops: { full: [], suffix: [] }, fused: { full: [], suffix: [] } };
const results: Partial<Record<Name, Awaited<ReturnType<Engine['score']>>>> = {};

async function timed(name: Name): Promise<void> {
  const engine = engines[name];
  engine.clearPrefixCache();
  let t = performance.now();
  results[name] = await engine.score(groups);
  times[name].full.push(performance.now() - t);
  t = performance.now();
  await engine.score(groups);
  times[name].suffix.push(performance.now() - t);
}

await timed('ops'); // warm-up, untimed
await timed('fused');
for (const name of ['ops', 'fused'] as const) times[name] = { full: [], suffix: [] };
for (let r = 0; r < repetitions; r++) {
  const order: Name[] = r % 2 === 0 ? ['ops', 'fused'] : ['fused', 'ops'];
  for (const name of order) await timed(name);
}

let maxDiff = 0;
results.ops!.forEach((group, g) =>
  group.forEach((score, s) => score.labelLogits.forEach((v, k) => (maxDiff = Math.max(maxDiff, Math.abs(v - results.fused![g]![s]!.labelLogits[k]!))))),
);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const span = (xs: number[]) => `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;
console.log(`preset ${preset} fp32, CPU, ${threads} thread(s), 4 states x ${prefixLength} tokens, 6 x 24-token questions each, ${repetitions} repetitions`);
for (const name of ['ops', 'fused'] as const) {
  console.log(`${name.padEnd(5)} prefix+suffix ${span(times[name].full)}; suffix only ${span(times[name].suffix)}`);
}
console.log(`largest label-logit difference fused vs ops: ${maxDiff.toExponential(2)}`);
engines.ops.close();
engines.fused.close();
