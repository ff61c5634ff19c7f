/**
 * `--ort-log-level` the way a user meets it, through `decide bench` in a child process: at 0 ONNX
 * Runtime's kernels log too (its process-wide default logger, "onnxruntime:decide": where its CUDA
 * Attention names the kernel it picked, which `decide gpu-report` counts), not only the session; at
 * the default (3, errors) neither says anything.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { runDecide } from '../helpers/bin.js';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'ort-log-level-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const bench = (extra: string[]) =>
  runDecide(['bench', '--provider', 'cpu', '--preset', 'tiny', '--quick', '--no-micro', '--no-latency', '--workloads', 'single', '--results-dir', path.join(scratch, extra.join('') || 'default'), ...extra]);

describe('decide bench --ort-log-level', () => {
  it('0: the session and the process-wide logger both write verbose lines', async () => {
    const run = await bench(['--ort-log-level', '0']);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const output = run.stdout + run.stderr;
    expect(output).toMatch(/\[V:onnxruntime:, /); // the session's logger
    expect(output).toMatch(/\[[VI]:onnxruntime:decide, /); // the environment's, where kernels log
  }, 120_000);

  it('the default: no ONNX Runtime line at all', async () => {
    const run = await bench([]);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(run.stdout + run.stderr).not.toMatch(/\[[VIW]:onnxruntime:/);
  }, 120_000);
});
