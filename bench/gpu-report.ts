/**
 * `decide gpu-report`: everything a GPU host must check, in one command that writes one folder.
 * Time on a lent GPU is short (a call runs at most 10 minutes), so the steps run in order of what
 * matters most, each as a child process with its own log and time limit, and report.md/report.json
 * are rewritten after every step: a run cut off midway still leaves what it measured.
 *
 * Steps: the CUDA setup check; the engine at GPU-loading sizes (`decide bench --size gpu`, with
 * the host-side counters of each call), and again with CUDA graphs (`--cuda-graphs on`) and on the
 * fused graph without causal states (`--attention fused`); the benchmark per dtype and packing layout (each run checks
 * its answers against the fp32 CPU engine before timing, so "agreement" is part of every bench
 * step); `test/gpu/` (vitest); Nsight Compute's device time per kernel of the GPU-size tickets
 * call (bench/kernel-profile.ts), when `ncu` is there; an ONNX Runtime profile of one engine call,
 * slowest ops first; the PyTorch peer (bench/torch_peer.py: the same workloads as the GPU-size step) when python3 with
 * torch is there, printed beside the engine's figures. The folder is then packed into one archive
 * beside it (a GPU host may hand back only a few files). With `--provider cpu` the same steps run
 * on this machine, the GPU-size step on a tiny model at a small scale (CUDA-only steps say why
 * they were skipped), which is how the command is tested and kept from rotting.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { makeDirectories } from '../src/models/make-directories.js';
import { summarizeAttentionLog, type AttentionKernelCounts } from './attention-kernels.js';
import type { GpuScaleReport } from './gpu-scale.js';
import { summarizeKernels, type KernelProfile } from './kernel-profile.js';
import type { BenchReport } from './report.js';
import { removeLeftoverScratch } from './scratch.js';

export type StepStatus = 'passed' | 'failed' | 'skipped' | 'timed out' | 'interrupted';

export interface StepResult {
  name: string;
  /** What ran, as a shell would show it; absent for a step skipped before running. */
  command?: string;
  status: StepStatus;
  exitCode?: number | null;
  seconds: number;
  /** Log file, relative to the report folder. */
  log?: string;
  /** Why a step was skipped or what failed, in one line. */
  reason?: string;
}

export interface BenchFigures {
  dtype: string;
  packing: string;
  file: string;
  workloads: Array<{ workload: string; decisionsPerSecond: number; fractionOfIdeal: number; mfu: number; maxAbsProbDiff: number; tolerance: number; reference: string }>;
  peakGflops: number;
}

export interface GpuReportOptions {
  provider: 'cpu' | 'cuda';
  outDir: string;
  /** Builder preset of the benchmark model. */
  preset: string;
  dtypes: Array<'fp16' | 'fp32'>;
  packings: Array<'on' | 'off'>;
  quick: boolean;
  workloads?: string;
  /** Run `test/gpu/` with vitest (needs the repository's devDependencies). */
  tests: boolean;
  /** The PyTorch peer script; undefined: look in the usual places. */
  torchPeer?: string;
  /** The whole run's budget: later steps get what is left (a GPU call is cut at 600 s). */
  budgetSeconds: number;
  /** The repository root (bin/decide.js, test/gpu/). */
  root: string;
  /** Progress lines go here. */
  log: (line: string) => void;
  /**
   * Aborted by Ctrl-C, SIGTERM, SIGHUP or SIGUSR2 of the command, the signal's name as its reason:
   * the step running gets the same signal (its whole process group), is recorded as interrupted,
   * and no step follows.
   */
  stop?: AbortSignal;
}

/** How long a step has to clean up and exit after the command's signal, before its process group is killed. */
const STOP_GRACE_MS = 10_000;

interface PlannedStep {
  name: string;
  argv: string[];
  /** Skip it with this reason instead of running it. */
  skip?: string;
  /** After it ran: extra figures to keep (bench JSON). */
  collect?: () => void;
}

export interface GpuReport {
  schema: 'decide-gpu-report/1';
  startedAt: string;
  provider: string;
  preset: string;
  host: { hostname: string; cpus: number; memoryBytes: number; gpus: string | null; node: string };
  git: string | null;
  steps: StepResult[];
  bench: BenchFigures[];
  /** The engine at GPU-loading sizes (bench/gpu-scale.ts), with each call's counters. */
  gpuScale: GpuScaleReport | null;
  /** The same GPU-size step with the engine's own kernels (`--own-kernels on`), CUDA only. */
  gpuScaleOwnKernels: GpuScaleReport | null;
  /** The same GPU-size step with CUDA graphs on (`--cuda-graphs on`), CUDA only. */
  gpuScaleCudaGraphs: GpuScaleReport | null;
  /** The same GPU-size step on the fused graph without causal states (`--attention fused`), CUDA only. */
  gpuScaleWithoutCausal: GpuScaleReport | null;
  /** The same GPU-size step without the pass length alignment (`--pass-length-multiple 1`), CUDA only. */
  gpuScaleUnaligned: GpuScaleReport | null;
  /** Which attention kernel ONNX Runtime picked per attention run, from its verbose log (bench/attention-kernels.ts), CUDA only. */
  attentionKernels: AttentionKernelCounts | null;
  /** The PyTorch peer's JSON lines, one per workload. */
  peer: PeerLine[];
  /** Device time per kernel family of the GPU-size tickets call (Nsight Compute), CUDA only. */
  kernels: KernelProfile | null;
  profile: ProfileSummary | null;
  /** The report folder packed into one file (tar.gz), relative to the folder's parent. */
  archive: string | null;
  /** The signal that stopped the run midway (Ctrl-C: SIGINT), if one did; then there is no archive. */
  interrupted?: NodeJS.Signals;
}

export interface PeerLine {
  workload: string;
  decisions: number;
  fresh?: { decisionsPerSecond: number; tokensPerSecond: number };
  reuse?: { decisionsPerSecond?: number; maxLogitDiff?: number; error?: string };
  packed?: { decisionsPerSecond?: number; maxLogitDiff?: number; error?: string };
}

export interface ProfileSummary {
  file: string;
  totalNodeMicros: number;
  ops: Array<{ opType: string; provider: string; calls: number; micros: number; share: number }>;
}

/** Nsight Compute's command line: on PATH, else where the CUDA toolkit puts it. */
function findNcu(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), '/usr/local/cuda/bin'];
  return dirs.map((dir) => path.join(dir, 'ncu')).find((file) => existsSync(file));
}

/** The PyTorch peer: the one given, else DECIDE_TORCH_PEER, else the package's own (an empty DECIDE_TORCH_PEER: none). */
function findTorchPeer(root: string, given?: string): string | undefined {
  if (given) return existsSync(given) ? given : undefined;
  if (process.env.DECIDE_TORCH_PEER !== undefined) return process.env.DECIDE_TORCH_PEER && existsSync(process.env.DECIDE_TORCH_PEER) ? process.env.DECIDE_TORCH_PEER : undefined;
  const own = path.join(root, 'bench', 'torch_peer.py');
  return existsSync(own) ? own : undefined;
}

/** The peer's JSON lines from its log (other output, such as warnings, is skipped). */
export function readPeerLines(logFile: string): PeerLine[] {
  const lines: PeerLine[] = [];
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as PeerLine & { peer?: string };
      if (parsed.peer === 'torch' && typeof parsed.workload === 'string') lines.push(parsed);
    } catch {
      // not one of its lines
    }
  }
  return lines;
}

function shellQuote(argv: string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/**
 * Runs argv with stdout and stderr into logFile, in a process group of its own (so that the group,
 * the step and whatever it started, can be ended together); kills the group at the limit, and
 * passes `stop`'s signal on to it (SIGKILL after STOP_GRACE_MS).
 */
function runLogged(argv: string[], cwd: string, logFile: string, limitSeconds: number, stop?: AbortSignal): Promise<{ exitCode: number | null; timedOut: boolean }> {
  return new Promise((resolve) => {
    const out = createWriteStream(logFile);
    out.write(`$ ${shellQuote(argv)}\n`);
    const child = spawn(argv[0]!, argv.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    let timedOut = false;
    const killGroup = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup('SIGKILL');
    }, Math.max(1, limitSeconds) * 1000);
    let grace: NodeJS.Timeout | undefined;
    const onStop = () => {
      killGroup(stop!.reason as NodeJS.Signals);
      grace = setTimeout(() => killGroup('SIGKILL'), STOP_GRACE_MS);
    };
    if (stop?.aborted) onStop();
    else stop?.addEventListener('abort', onStop, { once: true });
    const finish = (exitCode: number | null) => {
      clearTimeout(timer);
      clearTimeout(grace);
      stop?.removeEventListener('abort', onStop);
      out.end(`\n[exit ${exitCode}${timedOut ? `, killed after ${limitSeconds} s` : ''}]\n`, () => resolve({ exitCode, timedOut }));
    };
    child.on('error', (err) => {
      out.write(`${err.message}\n`);
      finish(null);
    });
    child.on('close', (code) => finish(code));
  });
}

function probe(argv: string[]): Promise<{ ok: boolean; text: string }> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (text += d));
    child.on('error', () => resolve({ ok: false, text: `${argv[0]} not found` }));
    child.on('close', (code) => resolve({ ok: code === 0, text: text.trim() }));
  });
}

/** Reads the bench JSON a step wrote into its folder. */
export function benchFigures(dir: string, dtype: string, packing: string): BenchFigures | null {
  if (!existsSync(dir)) return null;
  const file = readdirSync(dir).filter((f) => f.endsWith('.json')).sort().pop();
  if (!file) return null;
  const report = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as BenchReport;
  return {
    dtype,
    packing,
    file: path.join(path.basename(dir), file),
    peakGflops: report.peak.usedGflops,
    workloads: report.workloads.map((w) => ({
      workload: w.workload,
      decisionsPerSecond: w.decisionsPerSecond,
      fractionOfIdeal: w.fractionOfIdeal,
      mfu: w.mfu,
      maxAbsProbDiff: w.check.maxAbsProbDiff,
      tolerance: w.check.tolerance,
      reference: w.check.reference,
    })),
  };
}

/**
 * Sums ORT profiler "Node" events by op type (and provider), slowest first. The profile is the
 * chrome-trace JSON ONNX Runtime writes: an array of events with cat "Node", dur in microseconds
 * and args.op_name / args.provider.
 */
export function summarizeOrtProfile(file: string, top = 20): ProfileSummary {
  const events = JSON.parse(readFileSync(file, 'utf8')) as Array<{ cat?: string; name?: string; dur?: number; args?: { op_name?: string; provider?: string } }>;
  const byOp = new Map<string, { opType: string; provider: string; calls: number; micros: number }>();
  let total = 0;
  for (const e of events) {
    // Each node run appears as one "<node>_kernel_time" event (fence events are separate and short).
    if (e.cat !== 'Node' || typeof e.dur !== 'number' || !e.name?.endsWith('_kernel_time')) continue;
    const opType = e.args?.op_name ?? 'unknown';
    const provider = e.args?.provider ?? 'unknown';
    const key = `${opType}\u0000${provider}`;
    const entry = byOp.get(key) ?? { opType, provider, calls: 0, micros: 0 };
    entry.calls += 1;
    entry.micros += e.dur;
    byOp.set(key, entry);
    total += e.dur;
  }
  const ops = [...byOp.values()]
    .sort((a, b) => b.micros - a.micros)
    .slice(0, top)
    .map((o) => ({ ...o, share: total > 0 ? o.micros / total : 0 }));
  return { file, totalNodeMicros: total, ops };
}

/**
 * A call's kernel time (half the profiled run's: the warm-up and the profiled call have the same
 * shapes) beside the GPU-size step's packed tickets call, timed without the profiler.
 */
export function kernelShareLine(kernels: KernelProfile, gpuScale: GpuScaleReport | null): string {
  const perCall = kernels.totalMicros / 2 / 1000;
  const timed = gpuScale?.workloads.find((w) => w.workload === 'tickets')?.layouts.find((l) => l.layout === 'packed');
  if (!timed) return `Kernel time per call: ${perCall.toFixed(1)} ms (no timed tickets call to compare with).`;
  const wall = timed.seconds * 1000;
  return `Kernel time per call: ${perCall.toFixed(1)} ms; the GPU-size step's packed tickets call took ${wall.toFixed(1)} ms, so kernels fill ${pct(perCall / wall)} of it.`;
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

export function formatGpuReport(r: GpuReport): string {
  const lines: string[] = [];
  lines.push(`# decide gpu-report (${r.provider}, preset ${r.preset})`, '');
  lines.push(`started ${r.startedAt}; commit ${r.git ?? 'unknown'}; host ${r.host.hostname}, ${r.host.cpus} cores, ${(r.host.memoryBytes / 2 ** 30).toFixed(0)} GiB, node ${r.host.node}`);
  lines.push(`GPUs: ${r.host.gpus ?? 'none found (nvidia-smi absent or failing)'}`, '');
  lines.push('| step | status | seconds | log | note |', '|---|---|---|---|---|');
  for (const s of r.steps) {
    lines.push(`| ${s.name} | ${s.status} | ${s.seconds.toFixed(1)} | ${s.log ?? ''} | ${(s.reason ?? '').replace(/\|/g, '/')} |`);
  }
  if (r.bench.length > 0) {
    lines.push('', '## Benchmark (engine; each run checked against the fp32 CPU engine before timing)', '');
    lines.push('| dtype | packing | workload | decisions/s | of ideal | MFU | max abs prob diff (tolerance) | peak GFLOP/s | file |', '|---|---|---|---|---|---|---|---|---|');
    for (const b of r.bench) {
      for (const w of b.workloads) {
        lines.push(
          `| ${b.dtype} | ${b.packing} | ${w.workload} | ${w.decisionsPerSecond.toFixed(1)} | ${w.fractionOfIdeal.toFixed(2)} | ${pct(w.mfu)} | ${w.maxAbsProbDiff.toExponential(1)} (${w.tolerance}) vs ${w.reference} | ${b.peakGflops.toFixed(0)} | ${b.file} |`,
        );
      }
    }
  }
  if (r.gpuScale) {
    const g = r.gpuScale;
    lines.push('', `## GPU-size workloads: the engine (${g.provider}, ${g.dtype}) beside the PyTorch peer, decisions/s`, '');
    lines.push(
      '| workload | engine packed | engine forked | engine fresh rows (tokens/s) | torch fresh (tokens/s) | torch HF reuse | torch packed | engine passes | device copies | to device | to host | run ms | host ms |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    const dps = (x: number | undefined) => (x === undefined ? '–' : x.toFixed(1));
    for (const w of g.workloads) {
      const layout = (name: string) => w.layouts.find((l) => l.layout === name);
      const packed = layout('packed');
      const fresh = layout('fresh');
      const peer = r.peer.find((p) => p.workload === w.workload);
      const c = packed?.counters;
      lines.push(
        `| ${w.workload} (${w.states} x ${w.stateTokens}, ${w.questions} x ${w.questionTokens}) | ${dps(packed?.decisionsPerSecond)} | ${dps(layout('forked')?.decisionsPerSecond)} | ` +
          `${dps(fresh?.decisionsPerSecond)} (${fresh ? `${(fresh.tokensPerSecond / 1000).toFixed(1)}k` : '–'}) | ` +
          `${dps(peer?.fresh?.decisionsPerSecond)} (${peer?.fresh ? `${(peer.fresh.tokensPerSecond / 1000).toFixed(1)}k` : '–'}) | ${dps(peer?.reuse?.decisionsPerSecond)} | ${dps(peer?.packed?.decisionsPerSecond)} | ` +
          `${c?.forwardPasses ?? '–'} | ${c?.deviceCopies ?? '–'} | ${c ? `${(c.hostToDeviceBytes / 2 ** 20).toFixed(2)} MiB` : '–'} | ${c ? `${(c.deviceToHostBytes / 2 ** 10).toFixed(1)} KiB` : '–'} | ${c?.runMillis.toFixed(0) ?? '–'} | ${c?.hostMillis.toFixed(0) ?? '–'} |`,
      );
    }
    lines.push(
      '',
      `Counters are those of the packed call. Engine: graph ${JSON.stringify(g.engineInfo.attention)}, pass shapes ${String(g.engineInfo.passShapes)}, ` +
        `LM head ${JSON.stringify(g.engineInfo.lmHead)}, scoring head ${String(g.engineInfo.hasLabelHead)}, KV copies ${String(g.engineInfo.deviceCopyPath)}.`,
    );
  }
  const variants: [string, GpuScaleReport | null][] = [
    ["with the engine's own kernels (`--own-kernels on`)", r.gpuScaleOwnKernels],
    ['with CUDA graphs (`--cuda-graphs on`)', r.gpuScaleCudaGraphs],
    ['on the fused graph without causal states (`--attention fused`)', r.gpuScaleWithoutCausal],
    ['without the pass length alignment (`--pass-length-multiple 1`)', r.gpuScaleUnaligned],
  ];
  for (const [title, variant] of variants) {
    if (!variant) continue;
    lines.push('', `## GPU-size workloads ${title}, decisions/s`, '');
    lines.push('| workload | packed | forked | fresh rows (tokens/s) | run ms | host ms |', '|---|---|---|---|---|---|');
    for (const w of variant.workloads) {
      const layout = (name: string) => w.layouts.find((l) => l.layout === name);
      const fresh = layout('fresh');
      const c = layout('packed')?.counters;
      const dps = (x: number | undefined) => (x === undefined ? '–' : x.toFixed(1));
      lines.push(
        `| ${w.workload} | ${dps(layout('packed')?.decisionsPerSecond)} | ${dps(layout('forked')?.decisionsPerSecond)} | ${dps(fresh?.decisionsPerSecond)} (${fresh ? `${(fresh.tokensPerSecond / 1000).toFixed(1)}k` : '–'}) | ${c?.runMillis.toFixed(0) ?? '–'} | ${c?.hostMillis.toFixed(0) ?? '–'} |`,
      );
    }
  }
  if (r.attentionKernels) {
    lines.push('', '## Attention kernels ONNX Runtime picked (its verbose log, GPU-size workloads at a quarter scale)', '');
    lines.push('| kernel | attention runs |', '|---|---|');
    const kernels = Object.entries(r.attentionKernels);
    for (const [kernel, runs] of kernels) lines.push(`| ${kernel} | ${runs} |`);
    if (kernels.length === 0) lines.push('| (no dispatch line: the graph ran no ONNX Attention, or the provider logs none) | 0 |');
  }
  if (r.kernels) {
    lines.push('', '## Device time by kernel of the GPU-size tickets call (Nsight Compute; the warm-up call and the profiled one)', '');
    lines.push('| kernels | launches | ms | share |', '|---|---|---|---|');
    for (const f of r.kernels.families) lines.push(`| ${f.family} | ${f.calls} | ${(f.micros / 1000).toFixed(2)} | ${pct(f.share)} |`);
    lines.push('', kernelShareLine(r.kernels, r.gpuScale));
    lines.push('', '| slowest kernels | launches | ms | share |', '|---|---|---|---|');
    for (const k of r.kernels.top) lines.push(`| ${k.name.slice(0, 120).replace(/\|/g, '/')} | ${k.calls} | ${(k.micros / 1000).toFixed(2)} | ${pct(k.share)} |`);
  }
  if (r.profile) {
    lines.push('', `## ONNX Runtime profile of one engine call (${r.profile.file}), slowest op types`, '');
    // Without its CUDA profiler (the npm provider), ONNX Runtime times a CUDA node's launch, not its kernel.
    if (r.provider === 'cuda') lines.push('On CUDA these are host times (launches) unless the provider was built with its CUDA profiler: the kernel table above has device times.', '');
    lines.push('| op type | provider | calls | ms | share |', '|---|---|---|---|---|');
    for (const o of r.profile.ops) lines.push(`| ${o.opType} | ${o.provider} | ${o.calls} | ${(o.micros / 1000).toFixed(2)} | ${pct(o.share)} |`);
  }
  lines.push('');
  return lines.join('\n');
}

/** A report with nothing measured yet: the steps fill it in. */
export function newGpuReport(about: Pick<GpuReport, 'startedAt' | 'provider' | 'preset' | 'host' | 'git'>): GpuReport {
  return {
    schema: 'decide-gpu-report/1',
    ...about,
    steps: [],
    bench: [],
    gpuScale: null,
    gpuScaleCudaGraphs: null,
    gpuScaleWithoutCausal: null,
    gpuScaleUnaligned: null,
    gpuScaleOwnKernels: null,
    attentionKernels: null,
    peer: [],
    kernels: null,
    profile: null,
    archive: null,
  };
}

export async function runGpuReport(options: GpuReportOptions): Promise<GpuReport> {
  const { root, outDir, provider, log } = options;
  makeDirectories(outDir);
  const started = Date.now();
  const deadline = started + options.budgetSeconds * 1000;
  const decide = [process.execPath, path.join(root, 'bin', 'decide.js')];
  const gpus = await probe(['nvidia-smi', '-L']);
  const git = await probe(['git', '-C', root, 'rev-parse', '--short=12', 'HEAD']);
  const report = newGpuReport({
    startedAt: new Date(started).toISOString(),
    provider,
    preset: options.preset,
    host: { hostname: os.hostname(), cpus: os.cpus().length, memoryBytes: os.totalmem(), gpus: gpus.ok ? gpus.text : null, node: process.version },
    git: git.ok ? git.text : null,
  });
  const save = async () => {
    await writeFile(path.join(outDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
    await writeFile(path.join(outDir, 'report.md'), formatGpuReport(report));
  };

  const cudaOnly = provider === 'cuda' ? undefined : 'CUDA only (--provider cpu)';
  const steps: PlannedStep[] = [{ name: 'cuda-setup-check', argv: [...decide, 'setup-cuda', '--check'], skip: cudaOnly }];
  const gpuScaleDir = path.join(outDir, 'bench-gpu-size');
  const latestReport = (dir: string) => {
    const file = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')).sort().pop() : undefined;
    return file ? (JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as GpuScaleReport) : null;
  };
  steps.push({
    name: 'bench-gpu-size',
    // On the CPU (how this command is tested) a tiny model at a sliver of the sizes.
    argv: [...decide, 'bench', '--size', 'gpu', '--provider', provider, '--results-dir', gpuScaleDir,
      ...(provider === 'cuda' ? ['--preset', options.preset] : ['--preset', 'tiny', '--scale', '0.02', '--repetitions', '1'])],
    collect: () => {
      report.gpuScale = latestReport(gpuScaleDir);
    },
  });
  const benchCommon = ['bench', '--provider', provider, '--preset', options.preset, '--no-micro', '--no-latency', ...(options.quick ? ['--quick'] : []), ...(options.workloads ? ['--workloads', options.workloads] : [])];
  // In order of what a short GPU call must not miss: the GPU-size figures (above), the tests, the
  // PyTorch peer beside them, the first dtype's benches (fp16 on a GPU; packed first, the CUDA
  // default; each checks its answers against the fp32 CPU engine), the profile, then the other dtypes.
  const benchSteps = (dtype: 'fp16' | 'fp32'): PlannedStep[] =>
    options.packings.map((packing) => {
      const name = `bench-${dtype}-packing-${packing}`;
      const dir = path.join(outDir, name);
      return {
        name,
        argv: [...decide, ...benchCommon, '--dtype', dtype, '--pack-suffixes', packing, '--results-dir', dir],
        collect: () => {
          const figures = benchFigures(dir, dtype, packing);
          if (figures) report.bench.push(figures);
        },
      };
    });
  const [firstDtype, ...otherDtypes] = options.dtypes;
  const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
  steps.push({
    name: 'gpu-tests',
    argv: [process.execPath, vitest, 'run', 'test/gpu/', '--reporter=verbose'],
    skip: !options.tests ? 'not asked for (--no-tests)' : !existsSync(vitest) ? 'vitest is not installed (a devDependency: run from a clone after npm ci)' : undefined,
  });
  const peer = findTorchPeer(root, options.torchPeer);
  const torch = provider === 'cuda' && peer ? await probe(['python3', '-c', 'import torch, transformers; assert torch.cuda.is_available()']) : { ok: false, text: '' };
  steps.push({
    name: 'torch-peer',
    argv: ['python3', peer ?? 'torch_peer.py'],
    collect: () => {
      report.peer = readPeerLines(path.join(outDir, 'torch-peer.log'));
    },
    skip: cudaOnly ?? (!peer ? 'torch_peer.py not found (--torch-peer PATH, DECIDE_TORCH_PEER, bench/torch_peer.py)' : !torch.ok ? `python3 with torch, transformers and CUDA not usable: ${torch.text.split('\n').pop()}` : undefined),
  });
  // Where the kernel time goes (ONNX Runtime's profile cannot say on the npm CUDA provider): Nsight
  // Compute times every kernel of the GPU-size tickets call and its warm-up (about 20 s on an H200;
  // the document call takes minutes under it), at the card's own clocks and without flushing its
  // caches between kernels, so that a call's kernel time compares with the timed call's wall time.
  const ncu = provider === 'cuda' ? findNcu() : undefined;
  const kernelLog = path.join(outDir, 'kernel-profile.log');
  steps.push({
    name: 'kernel-profile',
    argv: [ncu ?? 'ncu', '--metrics', 'gpu__time_duration.sum', '--clock-control', 'none', '--cache-control', 'none', '--print-summary', 'per-kernel', '--csv',
      ...decide, 'bench', '--size', 'gpu', '--provider', provider, '--preset', options.preset, '--workloads', 'tickets', '--ort-profile', path.join(outDir, 'kernel-profile-ort.json')],
    collect: () => {
      const profile = existsSync(kernelLog) ? summarizeKernels(readFileSync(kernelLog, 'utf8')) : null;
      report.kernels = profile && profile.families.length > 0 ? profile : null;
    },
    skip: cudaOnly ?? (ncu ? undefined : 'Nsight Compute (ncu) not found on PATH or in /usr/local/cuda/bin'),
  });
  // The same sizes with what the default leaves out, or puts in, until a card says otherwise (these
  // steps are that measurement): the engine's own kernels (HeadNormRotary, SiluMul), every pass
  // shape captured as a CUDA graph once and replayed, the fused graph without causal states
  // (docs/models.md), and what the default pass length alignment gains (passes at their exact lengths).
  const variantStep = (name: string, flags: string[], keep: (r: GpuScaleReport | null) => void): PlannedStep => {
    const dir = path.join(outDir, name);
    return {
      name,
      argv: [...decide, 'bench', '--size', 'gpu', '--provider', provider, ...flags, '--preset', options.preset, '--results-dir', dir],
      collect: () => keep(latestReport(dir)),
      skip: cudaOnly,
    };
  };
  steps.push(
    variantStep('bench-gpu-size-own-kernels', ['--own-kernels', 'on'], (r) => (report.gpuScaleOwnKernels = r)),
    variantStep('bench-gpu-size-cuda-graphs', ['--cuda-graphs', 'on'], (r) => (report.gpuScaleCudaGraphs = r)),
    variantStep('bench-gpu-size-without-causal-states', ['--attention', 'fused'], (r) => (report.gpuScaleWithoutCausal = r)),
    variantStep('bench-gpu-size-unaligned', ['--pass-length-multiple', '1'], (r) => (report.gpuScaleUnaligned = r)),
  );
  // Which attention kernel ran: ONNX Runtime's CUDA Attention names its pick in the verbose log
  // (a quarter of the GPU size and one repetition: the log grows with every run).
  const kernelsDir = path.join(outDir, 'attention-kernels');
  steps.push({
    name: 'attention-kernels',
    argv: [...decide, 'bench', '--size', 'gpu', '--provider', provider, '--preset', options.preset, '--scale', '0.25', '--repetitions', '1', '--ort-log-level', '0', '--results-dir', kernelsDir],
    collect: () => {
      const logFile = path.join(outDir, 'attention-kernels.log');
      if (existsSync(logFile)) report.attentionKernels = summarizeAttentionLog(logFile);
    },
    skip: cudaOnly,
  });
  if (firstDtype) steps.push(...benchSteps(firstDtype));
  const profileFile = path.join(outDir, 'ort-profile.json');
  steps.push({
    name: 'ort-profile',
    // On a card, the GPU-size document call (the one the GPU-size step times); here the benchmark's.
    argv: [...decide, 'bench', '--provider', provider, '--preset', options.preset, '--dtype', firstDtype ?? 'fp32', ...(provider === 'cuda' ? ['--size', 'gpu'] : []), '--ort-profile', profileFile],
    collect: () => {
      if (existsSync(profileFile)) report.profile = summarizeOrtProfile(profileFile);
    },
  });
  for (const dtype of otherDtypes) steps.push(...benchSteps(dtype));

  for (const step of steps) {
    if (options.stop?.aborted) break;
    const left = Math.floor((deadline - Date.now()) / 1000);
    if (step.skip || left < 5) {
      const reason = step.skip ?? `out of time (budget ${options.budgetSeconds} s)`;
      report.steps.push({ name: step.name, status: 'skipped', seconds: 0, reason });
      log(`${step.name}: skipped (${reason})`);
      await save();
      continue;
    }
    log(`${step.name}: ${shellQuote(step.argv)}`);
    const logName = `${step.name}.log`;
    const t0 = Date.now();
    const { exitCode, timedOut } = await runLogged(step.argv, root, path.join(outDir, logName), left, options.stop);
    const seconds = (Date.now() - t0) / 1000;
    const stoppedBy = options.stop?.aborted ? (options.stop.reason as NodeJS.Signals) : undefined;
    const status: StepStatus = stoppedBy ? 'interrupted' : timedOut ? 'timed out' : exitCode === 0 ? 'passed' : 'failed';
    let reason: string | undefined;
    if (stoppedBy) {
      reason = `stopped by ${stoppedBy}`;
      // A step killed before it could clean up (SIGKILL after the grace) leaves its scratch folders.
      await removeLeftoverScratch();
    } else if (status !== 'passed') {
      const tail = readFileSync(path.join(outDir, logName), 'utf8').trim().split('\n').filter((l) => l.trim() && !l.startsWith('[exit'));
      reason = timedOut ? `killed after ${left} s` : tail.pop()?.slice(0, 300);
    }
    if (step.name === 'gpu-tests') {
      // vitest exits 0 when every test skipped (no CUDA): say so, or the table reads as a pass.
      const text = readFileSync(path.join(outDir, logName), 'utf8').replace(/\x1b\[[0-9;]*m/g, '');
      const summary = text.match(/^\s*Tests\s+(.*)$/m)?.[1];
      if (summary) reason = `${reason ? `${reason}; ` : ''}tests: ${summary.trim()}`;
    }
    try {
      step.collect?.();
    } catch (err) {
      reason = `${reason ? `${reason}; ` : ''}could not read its output: ${(err as Error).message}`;
    }
    report.steps.push({ name: step.name, command: shellQuote(step.argv), status, exitCode, seconds, log: logName, ...(reason ? { reason } : {}) });
    log(`${step.name}: ${status} in ${seconds.toFixed(1)} s${reason ? ` (${reason})` : ''}`);
    await save();
  }
  if (options.stop?.aborted) {
    report.interrupted = options.stop.reason as NodeJS.Signals;
    await save();
    return report;
  }
  const archive = `${path.basename(outDir)}.tar.gz`;
  const packed = await probe(['tar', '-czf', path.join(path.dirname(outDir), archive), '-C', path.dirname(outDir), path.basename(outDir)]);
  report.archive = packed.ok ? archive : null;
  if (!packed.ok) log(`could not pack the folder into ${archive}: ${packed.text}`);
  await save();
  return report;
}
