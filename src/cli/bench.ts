/**
 * `decide bench [--quick] [--workloads tickets,document,single] [--repetitions N] [--preset small]
 *  [--dtype fp32|fp16|int8] [--profile] [--no-micro] [--no-latency] [--seed N] [--model-dir DIR] [--reference-dir DIR]
 *  [--results-dir DIR] [--ort-profile FILE] [engine options: --threads N, --provider cpu|cuda, --pack-suffixes on|off, ...]`
 * The benchmark itself lives in bench/ (compiled to dist/bench/), loaded only when this runs.
 */


import type { WorkloadName } from '../../bench/workloads.js';
import type { ModelDtype } from '../models/builder/index.js';
import { withEnvironment } from '../engine/engine-options.js';
import { exitNow } from '../engine/native.js';
import { directoryProblem } from '../models/make-directories.js';
import { parseDecimal } from '../support/decimal.js';
import { commandError, intArg, parseCommand } from './args.js';
import { presetProblem } from './graph-options.js';
import { ENGINE_FLAGS, ENGINE_FLAGS_HELP, engineOptionsFromFlags } from './engine-flags.js';
import { renamedFlag } from './renamed-flags.js';
import { onGracefulStop, SIGNAL_EXIT_CODES, type StopSignal } from './signal-exit.js';
import { statIfExists } from '../support/stat-if-exists.js';

const WORKLOADS: readonly WorkloadName[] = ['tickets', 'document', 'single'];

/** Why the report cannot be written into `dir`, or undefined: a folder, or one that can be created. */
function resultsDirProblem(dir: string): string | undefined {
  const info = statIfExists(dir);
  if (info !== undefined) return info.isDirectory() ? undefined : 'is not a folder';
  return directoryProblem(dir);
}

/** The package an import could not find ('benchmark', 'onnxruntime-node'), or undefined for any other error. */
function missingPackage(err: unknown): string | undefined {
  if ((err as { code?: string })?.code !== 'ERR_MODULE_NOT_FOUND') return undefined;
  return /Cannot find package '([^']+)'/.exec(String((err as Error).message))?.[1];
}
const DEFAULT_PRESET = 'small';
/** Most timed repetitions a run takes: more is a typo (each repetition times every workload again). */
const MAX_REPETITIONS = 1000;

const HELP = `usage: decide bench [options]

Runs, in one process on one generated model (built when missing into the package's own folder,
<package>/models/bench-<preset>[-fp16|-int8], whatever the current directory):
the engine (prefix reuse, batched suffix pass), the fresh-scoring baseline (onnxruntime-node JS API,
every question as one full sequence, same graph file), the ideal speedup, and the measured fp32
MatMul peak of this machine; prints a table per workload and writes bench/results/<timestamp>.json.

options:
  --size gpu            instead of the benchmark above: the engine at GPU-loading sizes, the PyTorch
                        peer's workloads (64 x 390-token tickets with 8 x 18-token questions, 16 x
                        1,600-token documents with 13 x 22, 128 x 300-token singles with 1 x 20),
                        packed, forked and fresh rows, with the host-side counters of each call;
                        default preset qwen3-0.6b, fp16 and the fused decoder graph with causal
                        states on cuda (--attention ops|fused|causal picks the graph, causal:
                        fused with causal states, the default on cuda, fused with --cuda-graphs
                        on, as ONNX Runtime captures no If; --scale F shrinks the states; both
                        are refused without --size gpu)
  --quick               fewer states and repetitions (under 2 minutes on 2 cores)
  --workloads LIST      comma-separated subset of ${WORKLOADS.join(', ')} (default: all)
  --repetitions N       timed repetitions after the untimed check pass (default 3, quick 2; at most
                        ${MAX_REPETITIONS})
  --preset NAME         model builder preset: tiny, small (default), qwen3-0.6b
  --dtype D             fp32 (default) or fp16 weights and activations, or int8 weights (fp32
                        activations): then the fp32 twin's engine is timed in the same repetitions,
                        and the report gives int8 / fp32 decisions/s and their agreement
  --profile             also time the engine's prefix and suffix passes apart
  --no-micro            skip the TypeScript micro-benchmarks
  --no-latency          skip the latency of POST /v1/decide over HTTP
  --seed N              seed of the generated states (default 1; 0 to 2147483647)
  --model-dir DIR       use this model directory instead of <package>/models/bench-<preset>[-fp16|-int8]
  --reference-dir DIR   the fp32 twin of --model-dir that an fp16 or cuda run is checked against
                        (default <package>/models/bench-<preset>, built when missing)
  --results-dir DIR     where the JSON report goes (default bench/results); checked before the run
  --ort-profile FILE    instead of the benchmark: ONNX Runtime's profile of one warm engine call
                        (the first call of the first --workloads entry, default document; with
                        --size gpu its GPU-size call on the GPU-size run's model and defaults,
                        states scaled by --scale) written to FILE as
                        chrome-trace JSON; \`decide gpu-report\` sums it by op type
  --packing on|off      the old name of --pack-suffixes (still taken, with a notice)

\`--threads\` also sets the baseline's and the peak probe's threads. The bench model takes segment
ids, so \`--pack-suffixes\` picks the engine's question layout on it.

${ENGINE_FLAGS_HELP}
Before anything is timed, the answers are checked: fp32 on the CPU, the engine against the
baseline (logits and probabilities within 1e-4); an fp16 or cuda run, the engine and the baseline
against the fp32 CPU engine on the fp32 twin, in probabilities (1e-2 for fp16, 1e-3 for fp32 on
cuda). A run that disagrees prints no timings and exits 1. Ctrl-C, SIGTERM, SIGHUP (a closed
terminal) or SIGUSR2 removes the run's scratch folders (in the system's temp folder) and exits
128 + the signal's number (130, 143, 129 or 140), writing no report.
`;

const OPTIONS = {
  quick: { type: 'boolean', default: false },
  workloads: { type: 'string' },
  repetitions: { type: 'string' },
  preset: { type: 'string' },
  ...ENGINE_FLAGS,
  profile: { type: 'boolean', default: false },
  'no-micro': { type: 'boolean', default: false },
  'no-latency': { type: 'boolean', default: false },
  seed: { type: 'string' },
  'model-dir': { type: 'string' },
  'reference-dir': { type: 'string' },
  dtype: { type: 'string' },
  packing: { type: 'string' },
  'results-dir': { type: 'string' },
  attention: { type: 'string' },
  'ort-profile': { type: 'string' },
  size: { type: 'string' },
  scale: { type: 'string' },
} as const;

/** An integer flag by the rules every command shares (intArg), undefined when not given. */
function optionalInt(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = intArg(value, name, min, max);
  if (typeof n === 'string') throw new UsageError(n);
  return n;
}

/** A flag's value the command refuses before any work: exit 2, one line (commandError). */
class UsageError extends Error {}

export async function run(argv: string[]): Promise<number> {
  // Ctrl-C, SIGTERM, SIGHUP or SIGUSR2 (also `decide gpu-report` passing its own on to the bench
  // it runs as a step): the run's scratch folders in the temp folder go before it exits; only a
  // finished run writes its report.
  const scratch = import('../../bench/scratch.js');
  const stop = (signal: StopSignal) => {
    process.stderr.write(`\ndecide bench: ${signal}: stopped, no report written\n`);
    void scratch.then(({ removeOwnScratch }) => removeOwnScratch()).finally(() => exitNow(SIGNAL_EXIT_CODES[signal]));
  };
  const offSignals = onGracefulStop(stop);
  try {
    return await runCommand(argv);
  } catch (err) {
    if (err instanceof UsageError) return commandError('bench', err.message);
    throw err;
  } finally {
    offSignals();
  }
}

async function runCommand(argv: string[]): Promise<number> {
  const parsed = parseCommand('bench', argv, HELP, OPTIONS);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  if (values.dtype !== undefined && values.dtype !== 'fp32' && values.dtype !== 'fp16' && values.dtype !== 'int8') throw new UsageError(`--dtype must be fp32, fp16 or int8, got '${values.dtype}'`);
  const flags = engineOptionsFromFlags(renamedFlag('bench', values, 'packing', 'pack-suffixes'));
  if (typeof flags === 'string') return commandError('bench', flags);
  // The variables too: the baseline and the peak probe run on the engine's provider and threads.
  const { provider = 'cpu', threads, packSuffixes: packing, ...engine } = withEnvironment(flags);
  let workloads: WorkloadName[] | undefined;
  if (values.workloads !== undefined) {
    const list = values.workloads.split(',').map((s) => s.trim()).filter(Boolean);
    const unknown = list.filter((w) => !(WORKLOADS as readonly string[]).includes(w));
    if (list.length === 0 || unknown.length > 0) {
      throw new UsageError(`--workloads: unknown '${unknown.join(',') || values.workloads}' (use ${WORKLOADS.join(', ')})`);
    }
    workloads = [...new Set(list)] as WorkloadName[];
  }
  const presetWrong = values.preset === undefined ? undefined : presetProblem(values.preset);
  if (presetWrong) throw new UsageError(presetWrong);
  const seed = optionalInt(values.seed, '--seed', 0, 2 ** 31 - 1);
  const repetitions = optionalInt(values.repetitions, '--repetitions', 1, MAX_REPETITIONS);

  if (values.size !== undefined && values.size !== 'gpu') throw new UsageError(`--size must be gpu, got '${values.size}'`);
  const scale = values.scale === undefined ? 1 : parseDecimal(values.scale);
  if (scale === undefined || !(scale > 0 && scale <= 1)) throw new UsageError(`--scale must be a number in (0, 1], got '${values.scale}'`);
  if (values.attention !== undefined && values.attention !== 'ops' && values.attention !== 'fused' && values.attention !== 'causal') {
    throw new UsageError(`--attention must be ops, fused or causal, got '${values.attention}'`);
  }
  if (values.attention === 'causal' && engine.cudaGraphs === true) {
    throw new UsageError('--attention causal does not run with CUDA graphs: its layers sit in an If, which ONNX Runtime does not capture (--attention fused is the graph without causal states)');
  }
  // Only the GPU-size run builds its graph by --attention and shrinks its states by --scale: the
  // benchmark would run without them, its numbers taken for theirs.
  const gpuOnly = (['attention', 'scale'] as const).filter((name) => values[name] !== undefined);
  if (values.size !== 'gpu' && gpuOnly.length > 0) {
    throw new UsageError(`${gpuOnly.map((name) => `--${name}`).join(' and ')} ${gpuOnly.length > 1 ? 'apply' : 'applies'} only with --size gpu`);
  }
  // Checked before the run: a benchmark takes minutes, and its report would have nowhere to go.
  const resultsDir = values['results-dir'];
  const resultsProblem = resultsDir === undefined ? undefined : resultsDirProblem(resultsDir);
  if (resultsProblem) throw new UsageError(`--results-dir ${resultsDir}: ${resultsProblem}`);
  if (values['ort-profile'] !== undefined) {
    // It profiles the benchmark's model as built; a graph asked for by --attention would not be it.
    if (values.attention !== undefined) throw new UsageError('--attention applies to the GPU-size benchmark, not to --ort-profile');
    const { profileEngineCall } = await import('../../bench/ort-profile.js');
    const { packageRoot } = await import('../../bench/provenance.js');
    const log = (line: string) => process.stderr.write(`${line}\n`);
    // With --size gpu, the GPU-size run's model (its defaults: qwen3-0.6b, fp16 and fused with causal states on cuda).
    const model =
      values.size === 'gpu'
        ? await (await import('../../bench/gpu-scale.js')).gpuScaleModel({ provider, preset: values.preset, dtype: values.dtype as ModelDtype | undefined, modelDir: values['model-dir'], engine }, log)
        : { preset: values.preset ?? DEFAULT_PRESET, dtype: (values.dtype ?? 'fp32') as ModelDtype, modelDir: values['model-dir'] };
    const { file, decisions } = await profileEngineCall({
      root: packageRoot(),
      outFile: values['ort-profile'],
      preset: model.preset,
      dtype: model.dtype,
      provider,
      threads,
      packing,
      engine,
      workload: workloads?.[0] ?? 'document',
      ...(values.size === 'gpu' ? { gpuScale: scale } : {}),
      modelDir: model.modelDir,
      seed: seed ?? 1,
      log,
    });
    process.stdout.write(`wrote ${file} (ONNX Runtime profile of one engine call, ${decisions} decisions)\n`);
    return 0;
  }
  if (values.size === 'gpu') {
    const { runGpuScale } = await import('../../bench/gpu-scale.js');
    await runGpuScale({
      provider,
      attention: values.attention as 'ops' | 'fused' | 'causal' | undefined,
      preset: values.preset,
      dtype: values.dtype as ModelDtype | undefined,
      modelDir: values['model-dir'],
      workloads,
      repetitions,
      threads,
      engine,
      scale,
      ...(values['results-dir'] === undefined ? {} : { resultsDir: values['results-dir'] }),
    });
    return 0;
  }

  let bench: typeof import('../../bench/run.js');
  try {
    bench = await import('../../bench/run.js');
  } catch (err) {
    // The baseline runs through onnxruntime-node, a devDependency: an installed package lacks it.
    const missing = missingPackage(err);
    if (missing) return commandError('bench', `the benchmark needs ${missing} (a devDependency); run it from a clone of the repository after npm ci`, 1);
    throw err;
  }
  const { runBench, BenchRefusedError } = bench;
  try {
    await runBench({
      quick: values.quick,
      workloads,
      repetitions,
      threads,
      preset: values.preset ?? DEFAULT_PRESET,
      provider,
      profile: values.profile,
      micro: !values['no-micro'],
      latency: !values['no-latency'],
      seed,
      modelDir: values['model-dir'],
      referenceModelDir: values['reference-dir'],
      dtype: (values.dtype ?? 'fp32') as ModelDtype,
      packing,
      engine,
      ...(values['results-dir'] === undefined ? {} : { resultsDir: values['results-dir'] }),
    });
  } catch (err) {
    if (err instanceof BenchRefusedError) {
      return commandError('bench', err.message, 1);
    }
    // The micro-benchmarks' benchmark.js, loaded when they run (--no-micro skips them).
    const missing = missingPackage(err);
    if (missing) return commandError('bench', `the micro-benchmarks need ${missing} (a devDependency): run from a clone after npm ci, or pass --no-micro`, 1);
    throw err;
  }
  return 0;
}
