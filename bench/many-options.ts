/**
 * The cost of a question with 255 options (two-token codes, src/runtime/code-scoring.ts) against
 * one with 26 (single letters) on the same state, through ModelRuntime (prompt, tokens, engine,
 * answers): decisions/s of one request holding that one question, in three cache situations:
 *   cold        the prefix cache emptied first: the state and the question are computed;
 *   warm state  the state alone cached first (another question about it): the question is computed;
 *   repeat      the same request again: a code question's prompt is then in the prefix cache.
 * Plus a 26-option question whose descriptions are padded to about the 255-option prompt's length
 * (the cost of the codes themselves, apart from the longer prompt), and the tokens computed when
 * a cold request holds a 255-option question beside a 3-option one (the state is then computed
 * twice in that call: once for the short question's group, once inside the code group's prefix).
 * Repetitions alternate the cases; the figure is the median. CPU, fp32.
 *
 * --packing on packs a group's questions into rows (the engine's CUDA default; the model is built
 * with segment ids): a code question's branch rows then take no copy of its prompt's KV.
 *
 *   npx tsx bench/many-options.ts [--preset small] [--threads 2] [--repetitions 3] [--packing on|off] [--dir models]
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

import type { NormalizedDecideRequest, NormalizedQuestion } from '../src/domain/decision.js';
import { makeModel } from '../src/models/builder/index.js';
import { ModelRuntime } from '../src/runtime/model-runtime.js';

const { values: args } = parseArgs({
  options: {
    preset: { type: 'string', default: 'small' },
    threads: { type: 'string', default: '2' },
    repetitions: { type: 'string', default: '3' },
    packing: { type: 'string' },
    dir: { type: 'string', default: path.resolve('models') },
  },
});
const preset = args.preset!;
const repetitions = Number(args.repetitions);

const dir = path.join(args.dir!, `many-options-bench-${preset}`);
if (!existsSync(path.join(dir, 'onnx', 'model.onnx'))) {
  process.stderr.write(`building ${dir} ...\n`);
  await makeModel({ preset, seed: 1, outDir: dir });
}
const packing = args.packing === undefined ? {} : { packSuffixes: args.packing === 'on' };
const runtime = await ModelRuntime.load('bench', dir, { engine: { threads: Number(args.threads), ...packing } });

const STATE =
  'Customer message: Hello, I tried to pay for my groceries with my debit card this morning and the payment was declined ' +
  'twice, although my balance is fine and I used the same card yesterday. Is my card blocked? I am travelling next week.';

function choice(id: string, n: number, words = 1): NormalizedQuestion {
  const pad = words > 1 ? ` ${Array.from({ length: words - 1 }, (_, i) => ['card', 'payment', 'transfer', 'account', 'refund'][i % 5]).join(' ')}` : '';
  return {
    id,
    type: 'choice',
    instructions: 'Which banking intent does the customer message express?',
    options: Array.from({ length: n }, (_, i) => ({ key: `intent_${i}`, description: `intent number ${i}${pad}`, criteriaIndex: i })),
  };
}
const other: NormalizedQuestion = { id: 'other', type: 'noul', instructions: 'Is the customer travelling?', options: [{ key: 'no', criteriaIndex: 0 }, { key: 'yes', criteriaIndex: 1 }] };
const req = (...questions: NormalizedQuestion[]): NormalizedDecideRequest => ({ model: 'bench', stateText: STATE, questions });

async function timed(request: NormalizedDecideRequest): Promise<number> {
  const start = process.hrtime.bigint();
  await runtime.score([await runtime.prepare(request)]);
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Seconds for one decision of `request` in the cache situation `mode`. */
async function once(request: NormalizedDecideRequest, mode: 'cold' | 'warm state' | 'repeat'): Promise<number> {
  runtime.engine.clearPrefixCache();
  if (mode === 'warm state') await timed(req(other));
  if (mode === 'repeat') await timed(request);
  return timed(request);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// Pad the 26 options' descriptions until their prompt is about as long as the 255-option one's.
const tokens = async (q: NormalizedQuestion) => (await runtime.prepare(req(q))).inputTokens;
const big = choice('q', 255);
const bigTokens = await tokens(big);
let words = 1;
while ((await tokens(choice('q', 26, words + 1))) <= bigTokens) words += 1;
const cases: Array<[string, NormalizedQuestion]> = [
  ['26 options', choice('q', 26)],
  ['255 options', big],
  [`26 options, padded descriptions`, choice('q', 26, words)],
];
const modes = ['cold', 'warm state', 'repeat'] as const;

process.stdout.write(`many-options bench: preset ${preset}, ${args.threads} threads, ${repetitions} repetitions, packing ${runtime.engine.info.packsSuffixes ? 'on' : 'off'}\n`);
const results = new Map<string, number[]>();
for (let r = 0; r < repetitions; r++) {
  const order = r % 2 === 0 ? cases : [...cases].reverse();
  for (const [name, q] of order) {
    for (const mode of modes) {
      const key = `${name}|${mode}`;
      results.set(key, [...(results.get(key) ?? []), await once(req(q), mode)]);
    }
  }
}
const rows = [['question', 'prompt tokens', ...modes.map((m) => `${m} dec/s`), ...modes.map((m) => `${m} time vs 26`)]];
for (const [name, q] of cases) {
  const t = modes.map((m) => median(results.get(`${name}|${m}`)!));
  const base = modes.map((m) => median(results.get(`26 options|${m}`)!));
  rows.push([name, String(await tokens(q)), ...t.map((s) => (1 / s).toFixed(2)), ...t.map((s, i) => `${(s / base[i]!).toFixed(2)}x`)]);
}
const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
for (const row of rows) process.stdout.write(`${row.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}\n`);

// The state computed twice in one cold call that mixes a code question with a short one.
runtime.engine.clearPrefixCache();
const before = runtime.engine.counters().prefixTokensComputed;
const mixed = await runtime.prepare(req(choice('few', 3), big));
await runtime.score([mixed]);
const computed = runtime.engine.counters().prefixTokensComputed - before;
const state = mixed.group.prefix.length;
const codePrefix = mixed.codeGroups[0]!.prefix.length;
process.stdout.write(
  `cold call, 255- and 3-option questions on one state of ${state} prefix tokens: ${computed} prefix tokens computed ` +
    `(the code group's ${codePrefix} + the state's ${state} again: ${computed - codePrefix} extra, ${((100 * (computed - codePrefix)) / codePrefix).toFixed(1)}%)\n`,
);
runtime.close();
