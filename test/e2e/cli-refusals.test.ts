/**
 * `decide` refusals that must come before any work, each in a real process with a time limit (the
 * failure this guards against is a run that goes on: a benchmark of minutes, or a mkdir spinning
 * forever under /proc): output places the system refuses, options that would be ignored.
 */
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { existsSync, readdirSync } from 'node:fs';
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

describe('decide bench --size gpu: --attention causal with CUDA graphs', () => {
  it('is a usage error (exit 2) before any model is built: ONNX Runtime captures no If', () => {
    const res = decide(['bench', '--size', 'gpu', '--provider', 'cuda', '--attention', 'causal', '--cuda-graphs', 'on']);
    expect(res.timedOut).toBe(false);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toBe('decide bench: --attention causal does not run with CUDA graphs: its layers sit in an If, which ONNX Runtime does not capture (--attention fused is the graph without causal states)\n');
  });
});

describe('decide bench and gpu-report read numbers by the rules every command shares', () => {
  // Each row also carries a later refusal (--size cpu, --preset huge): a number taken by mistake
  // ends the run there, before any work, with that message instead.
  it.each([
    [['bench', '--seed', '0x10', '--size', 'cpu'], "--seed must be an integer from 0 to 2147483647, got '0x10'"],
    [['bench', '--seed=', '--size', 'cpu'], "--seed must be an integer from 0 to 2147483647, got ''"],
    [['bench', '--seed', '1e3', '--size', 'cpu'], "--seed must be an integer from 0 to 2147483647, got '1e3'"],
    [['bench', '--repetitions', '0x10', '--size', 'cpu'], "--repetitions must be an integer from 1 to 1000, got '0x10'"],
    [['bench', '--repetitions', '2.0', '--size', 'cpu'], "--repetitions must be an integer from 1 to 1000, got '2.0'"],
    [['bench', '--scale', '0x1'], "--scale must be a number in (0, 1], got '0x1'"],
    [['bench', '--scale', '1e-1'], "--scale must be a number in (0, 1], got '1e-1'"],
    [['gpu-report', '--provider', 'cpu', '--budget', '0x10', '--preset', 'huge'], "--budget must be an integer from 10 to 86400, got '0x10'"],
    [['gpu-report', '--provider', 'cpu', '--budget=', '--preset', 'huge'], "--budget must be an integer from 10 to 86400, got ''"],
    [['gpu-report', '--provider', 'cpu', '--budget', '1e3', '--preset', 'huge'], "--budget must be an integer from 10 to 86400, got '1e3'"],
  ])('%j: a usage error (exit 2) naming the number', (args, message) => {
    const res = decide(args);
    expect(res.timedOut).toBe(false);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toBe(`decide ${args[0]}: ${message}\n`);
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

  it.each(['', '  '])('an empty PORT (%j) is unset: the default port 8080', (value) => {
    // A host that does not resolve ends the run at the trial bind, after the port is read and before anything binds.
    const res = decide(['serve', '--host', 'decide-test.invalid', '--data-dir', path.join(scratch, 'serve-data')], { PORT: value, DECIDE_API_KEYS: undefined });
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toMatch(/^decide serve: cannot listen on decide-test\.invalid:8080: \w+\n$/);
    expect(existsSync(path.join(scratch, 'serve-data'))).toBe(false);
  });

  it('a bad PORT variable is named as the variable', () => {
    const res = decide(['serve', '--data-dir', path.join(scratch, 'serve-data')], { PORT: 'abc' });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe("decide serve: PORT must be an integer from 0 to 65535, got 'abc'\n");
  });
});

describe('decide serve: settings and folders refused before a key is made or anything loads', () => {
  const NO_KEYS = { DECIDE_API_KEYS: undefined, DECIDE_API_KEYS_FILE: undefined };
  it.each([
    ['an empty --host (it would bind every interface)', ['--host', ''], {}, /^decide serve: --host must name an address, got an empty value/],
    ['an empty --data-dir', ['--data-dir', ''], {}, /^decide serve: --data-dir must name a folder, got an empty value\n$/],
    ['an empty --models-dir', ['--models-dir', ''], {}, /^decide serve: --models-dir must name a folder, got an empty value\n$/],
    ['DECIDE_BATCH_CONCURRENCY=0', [], { DECIDE_BATCH_CONCURRENCY: '0' }, /^decide serve: DECIDE_BATCH_CONCURRENCY: must be an integer >= 1, got '0'\n$/],
    ['DECIDE_BATCH_MAX_RECORDS=abc', [], { DECIDE_BATCH_MAX_RECORDS: 'abc' }, /^decide serve: DECIDE_BATCH_MAX_RECORDS: /],
    ['a retention past 100 years', [], { DECIDE_BATCH_RETENTION_SECONDS: '1e20' }, /^decide serve: DECIDE_BATCH_RETENTION_SECONDS: must be a number from 0 to 3153600000, got '1e20'\n$/],
    ['a sweep longer than a timer can wait', [], { DECIDE_BATCH_SWEEP_SECONDS: '2592000' }, /^decide serve: DECIDE_BATCH_SWEEP_SECONDS: must be a number from 0.01 to 2147483.647, got '2592000'\n$/],
    ['a lease under the minimum', [], { DECIDE_DATABASE_URL: 'postgres://127.0.0.1:1/x', DECIDE_BATCH_LEASE_SECONDS: '5' }, /^decide serve: DECIDE_BATCH_LEASE_SECONDS: must be an integer >= 10, got '5'\n$/],
    // Decimal digits only, as every flag and DECIDE_* variable: no hex, no exponent.
    ['a hex record limit', [], { DECIDE_BATCH_MAX_RECORDS: '0x10' }, /^decide serve: DECIDE_BATCH_MAX_RECORDS: must be an integer >= 1, got '0x10'\n$/],
    ['an exponent chunk size', [], { DECIDE_BATCH_CHUNK_BYTES: '1e3' }, /^decide serve: DECIDE_BATCH_CHUNK_BYTES: must be an integer >= 1, got '1e3'\n$/],
    ['a hex burst', [], { DECIDE_RATE_LIMIT_BURST: '0x2' }, /^decide serve: DECIDE_RATE_LIMIT_BURST: must be a number of at least 1, got '0x2'\n$/],
    ['a burst under 1', [], { DECIDE_RATE_LIMIT_BURST: '0.5' }, /^decide serve: DECIDE_RATE_LIMIT_BURST: must be a number of at least 1, got '0.5'\n$/],
    ['an invalid-key burst under 1', [], { DECIDE_INVALID_KEY_BURST: '0.2' }, /^decide serve: DECIDE_INVALID_KEY_BURST: must be a number of at least 1, got '0.2'\n$/],
    ['a rate whose Retry-After would be absurd', [], { DECIDE_RATE_LIMIT_RPS: '1e-300' }, /^decide serve: DECIDE_RATE_LIMIT_RPS: must be a number of at least 0.00001, got '1e-300'\n$/],
    ['--models-dir that is a file', ['--models-dir', 'afile'], {}, /^decide serve: --models-dir: .*afile is not a folder\n$/],
    ['--models-dir under /proc', ['--models-dir', '/proc/decide-test-models'], {}, /^decide serve: --models-dir: cannot create \/proc\/decide-test-models: ENOENT\n$/],
    // A folder that exists but takes no entry (root passes permission checks; /proc refuses even root), where the default model would be created.
    ['--models-dir that takes no write, without the default model', ['--models-dir', '/proc'], {}, /^decide serve: --models-dir: cannot write in \/proc: ENOENT\n$/],
    ['DECIDE_DATA_DIR under /proc', [], { DECIDE_DATA_DIR: '/proc/decide-test-data' }, /^decide serve: DECIDE_DATA_DIR: cannot create \/proc\/decide-test-data: ENOENT\n$/],
    ['--ort-profile-prefix in a folder that does not exist', ['--ort-profile-prefix', 'no-such-folder/p'], {}, /^decide serve: --ort-profile-prefix must be a path prefix in a folder that exists, got 'no-such-folder\/p'\n$/],
    ['DECIDE_ORT_PROFILE_PREFIX in a folder that does not exist', [], { DECIDE_ORT_PROFILE_PREFIX: 'no-such-folder/p' }, /^decide serve: DECIDE_ORT_PROFILE_PREFIX must be a path prefix in a folder that exists, got 'no-such-folder\/p'\n$/],
  ] as const)('%s: exit 2 naming it, nothing written', async (_, args, env, message) => {
    await writeFile(path.join(scratch, 'afile'), 'hi\n');
    const dataDir = path.join(scratch, 'refused-data');
    const modelsDir = path.join(scratch, 'refused-models');
    // Each folder flag the row does not give names a scratch folder (the data dir: unless the row's variable names it).
    const given: readonly string[] = args;
    const all = ['serve', '--port', '0', ...given];
    if (!given.includes('--models-dir')) all.push('--models-dir', modelsDir);
    if (!given.includes('--data-dir') && !('DECIDE_DATA_DIR' in env)) all.push('--data-dir', dataDir);
    const res = decide(all, { ...NO_KEYS, ...env });
    expect(res.timedOut).toBe(false);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toMatch(message);
    expect(res.stdout).toBe('');
    expect(existsSync(dataDir)).toBe(false);
    expect(existsSync(modelsDir)).toBe(false);
    expect(readdirSync(scratch).filter((name) => name === 'api-key' || name === 'data' || name === 'models')).toEqual([]);
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

  it('a value flag given twice is refused (exit 2) naming it, never the last one kept', () => {
    for (const args of [
      ['make-model', '--preset', 'tiny', '--preset', 'small', '--out', 'twice'],
      ['batch', 'in.jsonl', '--model', 'a', '--out', 'one.jsonl', '--out', 'two.jsonl'],
      ['serve', '--port', '0', '--port=0'],
    ]) {
      const res = decide(args);
      const flag = args.find((a, i) => a.startsWith('--') && args.slice(i + 1).some((b) => b.split('=')[0] === a.split('=')[0]))!.split('=')[0];
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr.split('\n')[0], args.join(' ')).toBe(`decide ${args[0]}: ${flag} is given more than once; give it once`);
    }
    expect(existsSync(path.join(scratch, 'twice'))).toBe(false);
  });

  it('make-model and import-model without what they need: a first line naming it, then the usage (exit 2)', () => {
    for (const [args, first] of [
      [['make-model'], 'decide make-model: give --preset and --out'],
      [['make-model', '--preset', 'tiny'], 'decide make-model: give --out'],
      [['make-model', '--out', 'mm'], 'decide make-model: give --preset'],
      [['make-model', '--preset', 'tiny', '--out='], 'decide make-model: give --out (a folder, got an empty value)'],
      [['import-model', 'hf'], 'decide import-model: give --out'],
      [['import-model', '--out', 'im'], 'decide import-model: give HF_DIR (the checkpoint folder)'],
      [['import-model', 'a', 'b', '--out', 'im'], 'decide import-model: give one HF_DIR, got 2'],
    ] as const) {
      const res = decide([...args]);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr.split('\n')[0], args.join(' ')).toBe(first);
      expect(res.stderr, args.join(' ')).toContain(`usage: decide ${args[0]}`);
    }
  });

  it('import-model --id that is no model id: the same usage error (exit 2) whatever the character', () => {
    for (const id of ['', 'bad id!', '../escape', '.hidden', 'x'.repeat(129)]) {
      const res = decide(['import-model', 'hf', '--out', 'im', '--id', id]);
      expect(res.code, id).toBe(2);
      expect(res.stderr, id).toBe(
        `decide import-model: --id: '${id}' is not a valid model id (letters, digits, '.', '_', '-', starting with a letter or digit; at most 128 characters)\n`,
      );
    }
    const undated = decide(['import-model', 'hf', '--out', 'im', '--id', 'svc-2026-13']);
    expect(undated.code).toBe(2);
    expect(undated.stderr).toContain("--id: 'svc-2026-13' ends in a date that does not exist");
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
