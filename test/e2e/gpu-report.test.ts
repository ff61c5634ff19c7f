/**
 * `decide gpu-report --provider cpu`: the one command a GPU host runs, run here so it cannot rot.
 * It must leave one folder with report.md / report.json, a log per step, the benchmark's figures
 * (with its agreement check), test/gpu/'s outcome, an ONNX Runtime profile summed by op type, and
 * the CUDA-only steps skipped with their reason. Stopped midway (Ctrl-C, SIGTERM), it ends the
 * step running with it and leaves no process and no scratch folder behind.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { GpuReport } from '../../bench/gpu-report.js';
import { decideBin } from '../helpers/bin.js';

const run = promisify(execFile);
let out: string;
let report: GpuReport;
let stdout: string;

beforeAll(async () => {
  out = path.join(await mkdtemp(path.join(os.tmpdir(), 'decide-gpu-report-')), 'report');
  const bin = await decideBin();
  ({ stdout } = await run(process.execPath, [bin, 'gpu-report', '--provider', 'cpu', '--preset', 'tiny', '--dtypes', 'fp32', '--pack-suffixes', 'off,on', '--workloads', 'single', '--out', out], {
    env: { ...process.env, DECIDE_TORCH_PEER: '' },
  }));
  report = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8')) as GpuReport;
});

afterAll(async () => {
  await rm(path.dirname(out), { recursive: true, force: true });
});

describe('decide gpu-report --provider cpu', () => {
  it('runs every step in order and skips the CUDA-only ones with their reason', () => {
    expect(report.steps.map((s) => s.name)).toEqual(['cuda-setup-check', 'bench-gpu-size', 'gpu-tests', 'torch-peer', 'kernel-profile', 'bench-gpu-size-own-kernels', 'bench-gpu-size-cuda-graphs', 'bench-gpu-size-without-causal-states', 'bench-gpu-size-unaligned', 'attention-kernels', 'bench-fp32-packing-off', 'bench-fp32-packing-on', 'ort-profile']);
    const by = Object.fromEntries(report.steps.map((s) => [s.name, s]));
    expect(by['cuda-setup-check']).toMatchObject({ status: 'skipped', reason: expect.stringContaining('CUDA only') });
    expect(by['torch-peer']).toMatchObject({ status: 'skipped', reason: expect.stringContaining('CUDA only') });
    expect(by['kernel-profile']).toMatchObject({ status: 'skipped', reason: expect.stringContaining('CUDA only') });
    expect(by['bench-gpu-size-cuda-graphs']).toMatchObject({ status: 'skipped', reason: expect.stringContaining('CUDA only') });
    expect(by['bench-gpu-size-without-causal-states']).toMatchObject({ status: 'skipped', reason: expect.stringContaining('CUDA only') });
    expect(by['bench-gpu-size-unaligned']).toMatchObject({ status: 'skipped', reason: expect.stringContaining('CUDA only') });
    expect(by['attention-kernels']).toMatchObject({ status: 'skipped', reason: expect.stringContaining('CUDA only') });
    for (const name of ['bench-gpu-size', 'bench-fp32-packing-off', 'bench-fp32-packing-on', 'gpu-tests', 'ort-profile']) {
      expect(by[name]!.status, `${name}: ${by[name]!.reason}`).toBe('passed');
      expect(existsSync(path.join(out, by[name]!.log!))).toBe(true);
    }
    // No CUDA here: the GPU tests ran and skipped, and the report says so rather than a bare pass.
    expect(by['gpu-tests']!.reason).toMatch(/skipped/);
    expect(stdout).toContain(`wrote ${path.join(out, 'report.md')} (13 steps, 0 failed)`);
  });

  it('keeps the benchmark figures of each layout with the agreement check against the baseline', () => {
    expect(report.bench.map((b) => `${b.dtype}/${b.packing}`)).toEqual(['fp32/off', 'fp32/on']);
    for (const b of report.bench) {
      const single = b.workloads.find((w) => w.workload === 'single')!;
      expect(single.decisionsPerSecond).toBeGreaterThan(0);
      expect(single.reference).toBe('baseline');
      expect(single.maxAbsProbDiff).toBeLessThanOrEqual(single.tolerance);
      expect(b.peakGflops).toBeGreaterThan(0);
      expect(existsSync(path.join(out, b.file))).toBe(true);
    }
  });

  it('runs the GPU-size workloads (scaled down here) with the host-side counters of each call', () => {
    const g = report.gpuScale!;
    expect(g.workloads.map((w) => w.workload)).toEqual(['tickets', 'document', 'single']);
    for (const w of g.workloads) {
      expect(w.layouts.map((l) => l.layout)).toEqual(['packed', 'forked', 'fresh']);
      for (const l of w.layouts) {
        expect(l.decisionsPerSecond).toBeGreaterThan(0);
        expect(l.counters.deviceCopies).toBeGreaterThan(0);
        expect(l.counters.deviceCopies).toBeLessThanOrEqual(3 * l.counters.forwardPasses);
        expect(l.counters.runMillis).toBeGreaterThan(0);
      }
      // The same answers whichever layout scored them.
      expect(w.packedVsForked).toBeLessThan(1e-4);
    }
    expect(g.engineInfo).toMatchObject({ hasLabelHead: true, deviceCopyPath: 'host' });
    const md = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(md).toMatch(/\| tickets \(1 x 390, 8 x 18\) \| [0-9.]+ \| [0-9.]+ \|/);
  });

  it('packs the folder into one archive beside it', async () => {
    expect(report.archive).toBe('report.tar.gz');
    const { stdout: listing } = await run('tar', ['-tzf', path.join(path.dirname(out), 'report.tar.gz')]);
    expect(listing).toContain('report/report.md');
    expect(listing).toContain('report/bench-gpu-size.log');
  });

  it('sums an ONNX Runtime profile of one engine call by op type, slowest first', () => {
    const profile = report.profile!;
    expect(profile.totalNodeMicros).toBeGreaterThan(0);
    expect(profile.ops.map((o) => o.opType)).toEqual(expect.arrayContaining(['MatMul']));
    const micros = profile.ops.map((o) => o.micros);
    expect(micros).toEqual([...micros].sort((a, b) => b - a));
    expect(profile.ops.every((o) => o.provider === 'CPUExecutionProvider' && o.calls > 0)).toBe(true);
    // The file holds one warm call: its ORT runs and the node events inside them, nothing else.
    const events = JSON.parse(readFileSync(path.join(out, 'ort-profile.json'), 'utf8')) as Array<{ cat: string; name: string }>;
    expect(events.some((e) => e.cat === 'Session' && e.name === 'model_run')).toBe(true);
    expect(events.every((e) => e.cat === 'Node' || e.name === 'model_run')).toBe(true);
  });

  it('writes a readable report.md with the step table, the figures and the profile', () => {
    const md = readFileSync(path.join(out, 'report.md'), 'utf8');
    expect(md).toContain('# decide gpu-report (cpu, preset tiny)');
    expect(md).toMatch(/\| bench-fp32-packing-on \| passed \|/);
    expect(md).toMatch(/\| fp32 \| off \| single \| [0-9.]+ \|/);
    expect(md).toMatch(/\| MatMul \| CPUExecutionProvider \| \d+ \|/);
  });

  it('refuses a bad option by name with a usage error', async () => {
    const bin = await decideBin();
    const err = await run(process.execPath, [bin, 'gpu-report', '--provider', 'cpu', '--dtypes', 'int4']).catch((e: { code: number; stderr: string }) => e);
    expect(err).toMatchObject({ code: 2, stderr: expect.stringContaining("--dtypes: 'int4' is not a comma-separated list of fp16, fp32") });
    // Refused before any step runs (each failing step would cost a lent GPU's time).
    for (const [args, message] of [
      [['--preset', 'bogus'], "--preset must be one of tiny, small, qwen3-0.6b, got 'bogus'"],
      [['--workloads', 'tickets,nope'], "--workloads: 'tickets,nope' is not a comma-separated list of tickets, document, single"],
      // This run's folder holds its report: a second run there would show the first one's figures for a step that failed.
      [['--out', out], 'already holds files (an earlier report?)'],
      [['--out', path.join(out, 'report.json')], 'is a file, not a folder'],
    ] as const) {
      const refused = await run(process.execPath, [bin, 'gpu-report', '--provider', 'cpu', ...args]).catch((e: { code: number; stderr: string }) => e);
      expect(refused, args.join(' ')).toMatchObject({ code: 2, stderr: expect.stringContaining(message) });
    }
  });
});

describe('decide gpu-report stopped midway (Ctrl-C, SIGTERM, SIGHUP)', () => {
  /** The pids of the processes whose command line names `text` (Linux /proc). */
  function processesNaming(text: string): number[] {
    const pids: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) pids.push(Number(entry));
      } catch {
        // gone meanwhile
      }
    }
    return pids;
  }

  it.runIf(process.platform === 'linux').each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
    // A closed terminal: passed on to the bench step, which cleans up as for SIGTERM.
    ['SIGHUP', 129],
  ] as const)('%s during a bench step: the step ends with it, its scratch folders go, exit %i, the step recorded as interrupted', async (signal, code) => {
    // A temp folder of the test's own: the bench's scratch folders land there.
    const tmp = await mkdtemp(path.join(os.tmpdir(), 'decide-gpu-report-stop-'));
    const report = path.join(tmp, 'report');
    try {
      const bin = await decideBin();
      const child = spawn(
        process.execPath,
        [bin, 'gpu-report', '--provider', 'cpu', '--no-tests', '--preset', 'tiny', '--dtypes', 'fp32', '--pack-suffixes', 'off', '--workloads', 'document', '--out', report],
        { env: { ...process.env, DECIDE_TORCH_PEER: '', TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      // Stopped once the bench step has made its peak probe's scratch folder: something to clean up.
      const scratch = () => readdirSync(tmp).filter((name) => name.startsWith('decide-bench-'));
      for (let i = 0; i < 1200 && child.exitCode === null && !(stdout.includes('bench-fp32-packing-off: ') && scratch().length > 0); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(scratch(), stdout).not.toEqual([]);
      expect(processesNaming(path.join(report, 'bench-fp32-packing-off'))).not.toEqual([]);
      child.kill(signal);
      expect(await exited, stdout).toBe(code);
      // Nothing of the step outlives the command, and nothing it was writing is left.
      expect(processesNaming(path.join(report, 'bench-fp32-packing-off'))).toEqual([]);
      expect(scratch()).toEqual([]);
      const written = JSON.parse(readFileSync(path.join(report, 'report.json'), 'utf8')) as GpuReport;
      expect(written.interrupted).toBe(signal);
      expect(written.steps.at(-1)).toMatchObject({ name: 'bench-fp32-packing-off', status: 'interrupted', reason: `stopped by ${signal}` });
      expect(readFileSync(path.join(report, 'bench-fp32-packing-off.log'), 'utf8')).toContain(`decide bench: ${signal}: stopped, no report written`);
      expect(existsSync(`${report}.tar.gz`)).toBe(false);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }, 180_000);
});
