/**
 * `decide` refusals that must come before any work, each in a real process with a time limit (the
 * failure this guards against is a run that goes on: a benchmark of minutes, or a mkdir spinning
 * forever under /proc): output places the system refuses, options that would be ignored.
 */
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { decideBin } from '../helpers/bin.js';

let scratch: string;
let bin: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'decide-refusals-'));
  bin = await decideBin();
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** A port a server of this test holds: `decide serve` cannot have it. */
async function takenPort(): Promise<{ port: number; release: () => Promise<void> }> {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as net.AddressInfo;
  return { port, release: () => new Promise((resolve) => holder.close(() => resolve())) };
}

/** `decide ...args`, killed after 60 s: a refusal takes well under that. */
function decide(args: string[], env: Record<string, string | undefined> = {}): { code: number | null; stdout: string; stderr: string; timedOut: boolean } {
  const res = spawnSync(process.execPath, [bin, ...args], { cwd: scratch, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr, timedOut: res.signal === 'SIGKILL' };
}

describe('an output folder the system refuses is an error at once, not a spin', () => {
  it('gpu-report --out under /proc: exit 2, naming the folder', () => {
    const res = decide(['gpu-report', '--provider', 'cpu', '--out', '/proc/decide-test-report']);
    expect(res.timedOut).toBe(false);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toBe('decide gpu-report: --out /proc/decide-test-report: cannot create /proc/decide-test-report: ENOENT\n');
  });

  it.each([
    ['/proc/decide-test-results', 'cannot create /proc/decide-test-results: ENOENT'],
    ['afile', 'is not a folder'],
  ])('bench --results-dir %s: exit 2 before anything runs', async (dir, message) => {
    await writeFile(path.join(scratch, 'afile'), 'hi\n');
    const res = decide(['bench', '--preset', 'tiny', '--quick', '--no-micro', '--no-latency', '--workloads', 'single', '--repetitions', '1', '--results-dir', dir]);
    expect(res.timedOut).toBe(false);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toBe(`decide bench: --results-dir ${dir}: ${message}\n`);
    expect(existsSync(path.join(scratch, 'models'))).toBe(false); // no bench model was built
  });
});

describe('decide bench: --attention and --scale', () => {
  it.each([
    [['--attention', 'bogus'], "--attention must be ops, fused or causal, got 'bogus'"],
    [['--scale', '0'], "--scale must be a number in (0, 1], got '0'"],
    [['--attention', 'fused'], '--attention applies only with --size gpu'],
    [['--attention', 'fused', '--scale', '0.5'], '--attention and --scale apply only with --size gpu'],
  ])('%j without --size gpu: a usage error (exit 2)', (args, message) => {
    const res = decide(['bench', ...args]);
    expect(res.timedOut).toBe(false);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toBe(`decide bench: ${message}\n`);
  });
});

describe('decide serve: a place it cannot listen on', () => {
  it('a port in use: exit 1 before an API key is created or a model loads', async () => {
    const taken = await takenPort();
    try {
      const dataDir = path.join(scratch, 'serve-data');
      const res = decide(['serve', '--port', String(taken.port), '--data-dir', dataDir, '--models-dir', path.join(scratch, 'serve-models')], { DECIDE_API_KEYS: undefined });
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).toBe(`decide serve: cannot listen on 127.0.0.1:${taken.port}: EADDRINUSE\n`);
      expect(res.stdout).toBe('');
      expect(existsSync(dataDir)).toBe(false);
      expect(existsSync(path.join(scratch, 'serve-models'))).toBe(false);
    } finally {
      await taken.release();
    }
  });

  it('a bad PORT variable is named as the variable', () => {
    const res = decide(['serve', '--data-dir', path.join(scratch, 'serve-data')], { PORT: 'abc' });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe("decide serve: PORT must be an integer from 0 to 65535, got 'abc'\n");
  });
});

describe('decide with no command', () => {
  it('is a usage error: the usage on stderr, exit 2', () => {
    const res = decide([]);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/^usage: decide <command> \[options\]/);
  });
});

describe('small refusals, each a usage error (exit 2) before anything is read or written', () => {
  it('batch --out the very --questions path: named as itself, not as a link', async () => {
    await writeFile(path.join(scratch, 'q.json'), '{}');
    await writeFile(path.join(scratch, 'in.jsonl'), '{"state": "x"}\n');
    const res = decide(['batch', 'in.jsonl', '--model', 'm', '--questions', 'q.json', '--out', 'q.json', '--models-dir', 'none']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^decide batch: --out .*q\.json is --questions itself; writing it would destroy the input\. Choose another --out\n$/);
  });

  it('batch --out -: refused, no file named - written', async () => {
    await writeFile(path.join(scratch, 'in.jsonl'), '{"state": "x"}\n');
    const res = decide(['batch', 'in.jsonl', '--model', 'm', '--out', '-', '--models-dir', 'none']);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('decide batch: --out - : the results go to a file');
    expect(existsSync(path.join(scratch, '-'))).toBe(false);
  });

  it('import-model --id "": refused as an id', () => {
    const res = decide(['import-model', 'hf', '--out', 'im', '--id', '']);
    expect(res.code).toBe(2);
    expect(res.stderr).toBe("decide import-model: --id must be a model id (a directory name), got ''\n");
  });
});

describe('an error no command words itself', () => {
  it('still carries the `decide <command>: ` prefix, once (exit 1)', () => {
    const res = decide(['bench', '--model-dir', '/nonexistent', '--preset', 'tiny', '--quick', '--no-micro', '--no-latency']);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('\ndecide bench: /nonexistent is not a model directory');
    expect(res.stderr).not.toContain('decide: ');
  });
});
