/**
 * `decide gpu-report`: the one command a lent GPU host runs (bench/gpu-report.ts does the work, so
 * the HTTP stack is never loaded). Writes one folder: report.md, report.json and a log per step.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';

import { directoryProblem } from '../models/make-directories.js';
import { commandError, intArg, parseCommand } from './args.js';
import { presetProblem } from './graph-options.js';
import { renamedFlag } from './renamed-flags.js';
import { onGracefulStop, SIGNAL_EXIT_CODES, type StopSignal } from './signal-exit.js';
import { statIfExists } from '../support/stat-if-exists.js';

/** The --budget range, in seconds: a run needs some time for its first step; a day is more than any run takes. */
const MIN_BUDGET_SECONDS = 10;
const MAX_BUDGET_SECONDS = 86_400;
/** The default --budget: fits one 10-minute device call with time to send the folder back. */
const DEFAULT_BUDGET_SECONDS = 560;

const HELP = `usage: decide gpu-report [--out DIR] [--provider cuda|cpu] [--preset NAME] [--dtypes LIST]
                          [--pack-suffixes LIST] [--full] [--workloads LIST] [--no-tests]
                          [--torch-peer FILE] [--budget SECONDS]

Everything a GPU host must check, in one command that writes one report folder (report.md,
report.json, one log per step), rewritten after every step so a run cut off midway keeps what it
measured. Ctrl-C, SIGTERM, SIGHUP (a closed terminal) or SIGUSR2 stops the step running too
(recorded as interrupted) and exits 128 + the signal's number (130, 143, 129 or 140). Steps, in order of what a short GPU call must not miss:
  cuda-setup-check    decide setup-cuda --check (CUDA only)
  bench-gpu-size      decide bench --size gpu: the engine at GPU-loading sizes, with each call's
                      host-side counters (on the CPU: a tiny model at a small scale)
  gpu-tests           vitest run test/gpu/ (needs the repository's devDependencies)
  torch-peer          bench/torch_peer.py (PyTorch eager on the same card, the GPU-size step's
                      workloads), when python3 with torch, transformers and CUDA is there (CUDA only)
  kernel-profile      Nsight Compute's device time per kernel of the GPU-size tickets call, summed
                      by what the kernels do (attention, GEMMs, norms, ...) and set against the
                      timed call's wall time, when ncu is there (CUDA only)
  bench-gpu-size-own-kernels, bench-gpu-size-cuda-graphs, bench-gpu-size-without-causal-states,
  bench-gpu-size-unaligned
                      the GPU-size step again with --own-kernels on (the engine's own operators,
                      compiled by NVRTC), with --cuda-graphs on (on the fused graph without
                      causal states, whose If ONNX Runtime would not capture), on the fused graph
                      without causal states (--attention fused), and with --pass-length-multiple 1
                      (what is off, or on, by default until a card measures it; CUDA only)
  attention-kernels   the GPU-size step at a quarter scale with ONNX Runtime's verbose log: which
                      attention kernel ran how often (CUDA only)
  bench-<dtype>-packing-<on|off>
                      decide bench for the first dtype, --pack-suffixes on then off; every run checks its
                      answers against the fp32 CPU engine before timing (the agreement)
  ort-profile         ONNX Runtime's profile of one warm engine call, op types slowest first (on
                      CUDA the GPU-size document call; node times there are launch times unless
                      the provider was built with its CUDA profiler)
  the other dtypes' bench steps
With --provider cpu the same steps run here; the CUDA-only ones say why they were skipped.

options:
  --out DIR           the report folder (default gpu-report-<time> in the current directory)
  --provider P        cuda (default) or cpu
  --preset NAME       the bench model (default qwen3-0.6b on cuda, small on cpu)
  --dtypes LIST       comma-separated, first one first (default fp16,fp32)
  --pack-suffixes LIST  the engine's question layouts to bench, comma-separated on/off (default
                      on,off); --packing is its old name
  --full              the benchmark's full sizes (default: --quick sizes, to fit a short GPU call)
  --workloads LIST    passed to decide bench (default: all)
  --no-tests          skip test/gpu/
  --torch-peer FILE   the PyTorch peer script (default: DECIDE_TORCH_PEER when set, an empty
                      value meaning none; else the package's bench/torch_peer.py)
  --budget SECONDS    the whole run's time; steps that no longer fit are skipped (default ${DEFAULT_BUDGET_SECONDS}: a
                      lent GPU call is cut at 600 s; ${MIN_BUDGET_SECONDS} to ${MAX_BUDGET_SECONDS})
`;

const OPTIONS = {
  out: { type: 'string' },
  provider: { type: 'string', default: 'cuda' },
  preset: { type: 'string' },
  dtypes: { type: 'string', default: 'fp16,fp32' },
  'pack-suffixes': { type: 'string' },
  packing: { type: 'string' },
  full: { type: 'boolean', default: false },
  workloads: { type: 'string' },
  'no-tests': { type: 'boolean', default: false },
  'torch-peer': { type: 'string' },
  budget: { type: 'string', default: String(DEFAULT_BUDGET_SECONDS) },
} as const;

function list<T extends string>(value: string, name: string, allowed: readonly T[]): T[] | string {
  const items = value.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = items.filter((i) => !(allowed as readonly string[]).includes(i));
  if (items.length === 0 || bad.length > 0) return `--${name}: '${value}' is not a comma-separated list of ${allowed.join(', ')}`;
  return [...new Set(items)] as T[];
}

/**
 * Why `dir` cannot take a new report, or undefined: it must be a new or empty folder. A report's
 * tables are read back from its steps' files, so an earlier run's files there would stand in for
 * a step of this run that failed or ran out of time.
 */
function reportFolderProblem(dir: string): string | undefined {
  const st = statIfExists(dir);
  if (st === undefined) {
    const parent = statIfExists(path.dirname(dir));
    if (parent !== undefined && !parent.isDirectory()) return `${path.dirname(dir)} is not a folder`;
    return directoryProblem(dir);
  }
  if (!st.isDirectory()) return 'is a file, not a folder';
  if (readdirSync(dir).length > 0) return 'already holds files (an earlier report?); give a new or empty folder, so that no earlier figure stands in for this run';
  return undefined;
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand('gpu-report', argv, HELP, OPTIONS);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const provider = values.provider;
  if (provider !== 'cuda' && provider !== 'cpu') return commandError('gpu-report', `--provider must be cuda or cpu, got '${provider}'`);
  const dtypes = list(values.dtypes, 'dtypes', ['fp16', 'fp32'] as const);
  if (typeof dtypes === 'string') return commandError('gpu-report', dtypes);
  const layouts = renamedFlag('gpu-report', values, 'packing', 'pack-suffixes')['pack-suffixes'] ?? 'on,off';
  const packings = list(layouts, 'pack-suffixes', ['on', 'off'] as const);
  if (typeof packings === 'string') return commandError('gpu-report', packings);
  const budget = intArg(values.budget, '--budget', MIN_BUDGET_SECONDS, MAX_BUDGET_SECONDS);
  if (typeof budget === 'string') return commandError('gpu-report', budget);

  // Checked here, before a step starts: on a lent GPU every step that fails on a typo is device time.
  const presetWrong = values.preset === undefined ? undefined : presetProblem(values.preset);
  if (presetWrong) return commandError('gpu-report', presetWrong);
  if (values.workloads !== undefined) {
    const workloads = list(values.workloads, 'workloads', ['tickets', 'document', 'single'] as const);
    if (typeof workloads === 'string') return commandError('gpu-report', workloads);
  }
  const outDir = path.resolve(values.out ?? `gpu-report-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  const outProblem = reportFolderProblem(outDir);
  if (outProblem) return commandError('gpu-report', `--out ${outDir}: ${outProblem}`);

  const { runGpuReport } = await import('../../bench/gpu-report.js');
  const { packageRoot } = await import('../../bench/provenance.js');
  // Ctrl-C, SIGTERM, SIGHUP or SIGUSR2: the step running is a process group of its own (the
  // terminal's Ctrl-C or hang-up does not reach it), so the run passes the signal on, waits for the
  // step to end, and exits 128 + the signal's number.
  const stop = new AbortController();
  const onSignal = (signal: StopSignal) => {
    if (stop.signal.aborted) return;
    process.stdout.write(`\n${signal}: stopping the step running, then exiting\n`);
    stop.abort(signal);
  };
  const offSignals = onGracefulStop(onSignal);
  let report;
  try {
    report = await runGpuReport({
      provider,
      outDir,
      preset: values.preset ?? (provider === 'cuda' ? 'qwen3-0.6b' : 'small'),
      dtypes,
      packings,
      quick: !values.full,
      ...(values.workloads === undefined ? {} : { workloads: values.workloads }),
      tests: !values['no-tests'],
      ...(values['torch-peer'] === undefined ? {} : { torchPeer: values['torch-peer'] }),
      budgetSeconds: budget,
      root: packageRoot(),
      log: (line) => process.stdout.write(`${line}\n`),
      stop: stop.signal,
    });
  } finally {
    offSignals();
  }
  if (report.interrupted) {
    process.stdout.write(`\nwrote ${path.join(outDir, 'report.md')} (${report.steps.length} steps, interrupted by ${report.interrupted})\n`);
    return SIGNAL_EXIT_CODES[report.interrupted as StopSignal];
  }
  const failed = report.steps.filter((s) => s.status === 'failed' || s.status === 'timed out');
  process.stdout.write(`\nwrote ${path.join(outDir, 'report.md')} (${report.steps.length} steps, ${failed.length} failed)\n`);
  return failed.length === 0 ? 0 : 1;
}
