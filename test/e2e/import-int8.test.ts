/**
 * `decide import-model --dtype int8` (and make-model's) the way a user meets it: the CLI writes the int8 model, imports
 * the fp32 twin to a temporary directory and prints how far the int8 answers are from it on
 * generated prompts (the check to run on one's own checkpoint before serving); the model is then
 * served like any other by `decide serve` over real HTTP. The hf-tiny fixtures (random weights)
 * stay within the 2e-2 in probabilities.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cpuInt8Support, int8SpeedNote } from '../../src/engine/cpu-int8.js';
import { chooseInt8Path } from '../../src/engine/int8-path.js';
import { decideBody, expectValidAnswers, MIXED_QUESTIONS, tempModels, TEST_KEY, type TempDirs } from '../api/fixtures.js';
import { decideBin, runDecide } from '../helpers/bin.js';
import { QWEN3_REAL_VOCAB_CONFIG, randomCheckpoint } from '../helpers/hf-checkpoint.js';
import { writeSafetensors } from '../helpers/safetensors-file.js';
import { QWEN3_TOKENIZER_FILES } from '../helpers/tokenizer-dir.js';
import { postDecide, startServe } from './serve-process.js';
import { HF_TINY } from '../helpers/fixtures.js';

const FIXTURES = HF_TINY;


let dirs: TempDirs;


/** The agreement line import-model prints: max |prob diff| and top-option agreement. */
function agreementOf(stdout: string): { maxProbDiff: number; agree: number; rows: number } {
  const m = /int8 vs fp32 twin on (\d+) generated questions .*max \|prob diff\| ([0-9.e+-]+) .*top option agrees on (\d+)\/(\d+)/.exec(stdout);
  expect(m, stdout).not.toBeNull();
  return { rows: Number(m![1]), maxProbDiff: Number(m![2]), agree: Number(m![3]) };
}

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
});
afterAll(() => dirs?.cleanup());

describe('decide import-model --dtype int8', () => {
  it.each(['qwen3', 'qwen2', 'llama3'])('hf-tiny %s: prints the agreement with its fp32 twin, within 2e-2', async (name) => {
    const out = path.join(dirs.root, `int8-${name}`);
    const res = await runDecide(['import-model', path.join(FIXTURES, name), '--out', out, '--dtype', 'int8']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/wrote .* int8/);
    const a = agreementOf(res.stdout);
    expect(a.rows).toBe(24);
    expect(a.maxProbDiff).toBeGreaterThan(0);
    expect(a.maxProbDiff).toBeLessThanOrEqual(2e-2);
    expect(a.agree).toBeGreaterThanOrEqual(20);
    const decision = JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8'));
    expect(decision.import.dtype).toBe('int8');
    expect(decision.import.int8.scheme).toEqual({ kernel: 'rowq-u8', lmHead: 'nbits8', block: 128 });
  });

  it('make-model --dtype int8 prints the agreement with its fp32 twin (same preset and seed) too', async () => {
    const out = path.join(dirs.root, 'tiny-int8');
    const res = await runDecide(['make-model', '--preset', 'tiny', '--out', out, '--dtype', 'int8']);
    expect(res.code, res.stderr).toBe(0);
    const a = agreementOf(res.stdout);
    expect(a.rows).toBe(24);
    expect(a.maxProbDiff).toBeGreaterThan(0);
    expect(a.maxProbDiff).toBeLessThanOrEqual(2e-2);
    // The path this CPU runs, named in the agreement line and explained after it (src/engine/int8-path.ts);
    // where that is u8s8, the u8u8 path (other hosts') is measured too.
    const host = chooseInt8Path('auto', cpuInt8Support());
    expect(res.stdout).toContain(`4 options each, path ${host.path}): max |prob diff|`);
    expect(res.stdout).toContain(`int8 path on this CPU: ${host.path} (${host.reason})\n`);
    expect(res.stdout.match(/int8 vs fp32 twin on/g)).toHaveLength(host.path === 'u8s8' ? 2 : 1);
    // What int8 buys on this host's CPU, from its own flags (src/engine/cpu-int8.ts).
    const note = int8SpeedNote(cpuInt8Support());
    if (note !== undefined) expect(res.stdout).toContain(`note: ${note}\n`);
    const decision = JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8'));
    expect(decision.builder).toMatchObject({ preset: 'tiny', dtype: 'int8', int8: { scheme: { kernel: 'rowq-u8', lmHead: 'nbits8', block: 128 } } });
  });

  it('a check that cannot run fails the command and leaves nothing at --out, so the same dated id can be imported again', async () => {
    const modelsDir = path.join(dirs.root, 'check-failed');
    const out = path.join(modelsDir, 'i8-2026-11');
    // A TMPDIR that is a file: the twin's temporary directory cannot be made.
    const notADir = path.join(dirs.root, 'tmp-is-a-file');
    await writeFile(notADir, '');
    const failed = await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', out, '--dtype', 'int8'], undefined, { TMPDIR: notADir });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/cannot import .*qwen3: the int8 agreement check failed, so the model was not written: cannot make a temporary directory for the fp32 twin in .*tmp-is-a-file: ENOTDIR.* \(--no-agreement skips the check\)/);
    expect(failed.stdout).not.toMatch(/wrote /);
    expect(await readdir(modelsDir)).toEqual([]);

    const retried = await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', out, '--dtype', 'int8']);
    expect(retried.code, retried.stderr).toBe(0);
    expect(agreementOf(retried.stdout).rows).toBe(24);
    expect(await readdir(modelsDir)).toEqual(['i8-2026-11']);
  });

  it('stopped during the check: Ctrl-C removes its fp32 twin and staging folder (exit 130); a killed one leaves them, and the next import-model removes the twin', async () => {
    const tmp = path.join(dirs.root, 'own-tmp');
    await mkdir(tmp);
    // Big enough that the twin is still being written when the signal comes.
    const cfg = { ...QWEN3_REAL_VOCAB_CONFIG, vocab_size: 32000, hidden_size: 128, num_attention_heads: 2, head_dim: 64, intermediate_size: 128 };
    const hfDir = path.join(dirs.root, 'hf', 'interrupted');
    await mkdir(hfDir, { recursive: true });
    await writeFile(path.join(hfDir, 'config.json'), JSON.stringify(cfg));
    writeSafetensors(path.join(hfDir, 'model.safetensors'), randomCheckpoint(cfg, 9, 1), 'BF16');
    const modelsDir = path.join(dirs.root, 'interrupted-models');
    const twinsOf = async () => (await readdir(tmp)).filter((n) => n.startsWith('decide-int8-twin-'));

    /** Starts the import and sends `signal` once it measures int8 against its twin; resolves with how it ended. */
    const stopDuringCheck = async (signal: NodeJS.Signals) => {
      const child = spawn(process.execPath, [await decideBin(), 'import-model', hfDir, '--out', path.join(modelsDir, 'big-2026-11'), '--dtype', 'int8'], {
        env: { ...process.env, TMPDIR: tmp },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, sig) => resolve({ code, signal: sig })));
      // The twin's directory exists before this line is printed.
      await new Promise<void>((resolve) => {
        let err = '';
        child.stderr!.on('data', (d: Buffer) => {
          err += d.toString();
          if (err.includes('measuring int8 against its fp32 twin')) resolve();
        });
        child.on('exit', () => resolve());
      });
      child.kill(signal);
      return { pid: child.pid!, ...(await exited) };
    };

    // Ctrl-C: the command cleans up after itself.
    const interrupted = await stopDuringCheck('SIGINT');
    expect(interrupted.code).toBe(130);
    expect(await twinsOf()).toEqual([]);
    expect(existsSync(modelsDir) ? await readdir(modelsDir) : []).toEqual([]);

    // Killed: nothing can run, so the twin stays, and the model was not put in place (only the
    // hidden staging directory, which the next import to that name removes).
    const killed = await stopDuringCheck('SIGKILL');
    expect(killed.signal).toBe('SIGKILL');
    const twins = await twinsOf();
    expect(twins).toEqual([expect.stringMatching(new RegExp(`^decide-int8-twin-${killed.pid}-`))]);
    expect((await readdir(modelsDir)).every((n) => n.startsWith('.big-2026-11.tmp-'))).toBe(true);

    const next = await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', path.join(dirs.root, 'after-interrupt'), '--dtype', 'int8', '--no-agreement'], undefined, { TMPDIR: tmp });
    expect(next.code, next.stderr).toBe(0);
    expect(existsSync(path.join(tmp, twins[0]!))).toBe(false);
  });

  it('--no-agreement skips the check; the int8 model is served over HTTP like any other', async () => {
    const hfDir = path.join(dirs.root, 'hf', 'Qwen3-Tiny');
    await mkdir(hfDir, { recursive: true });
    await writeFile(path.join(hfDir, 'config.json'), JSON.stringify(QWEN3_REAL_VOCAB_CONFIG));
    writeSafetensors(path.join(hfDir, 'model.safetensors'), randomCheckpoint(QWEN3_REAL_VOCAB_CONFIG, 5, 1), 'BF16');
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(QWEN3_TOKENIZER_FILES, f), path.join(hfDir, f));
    const res = await runDecide(['import-model', hfDir, '--out', dirs.modelsDir, '--id', 'qwen3-int8-2026-11', '--dtype', 'int8', '--no-agreement']);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).not.toMatch(/fp32 twin/);
    const fp32 = await runDecide(['import-model', hfDir, '--out', path.join(dirs.root, 'qwen3-fp32'), '--no-agreement']);
    expect(fp32.code, fp32.stderr).toBe(0);
    // The tied head's and body's bytes shrink to about a quarter; the fp32 embedding stays.
    const size = async (dir: string) => (await stat(path.join(dir, 'onnx', 'model.onnx'))).size;
    const embedding = 151936 * 32 * 4;
    expect((await size(path.join(dirs.modelsDir, 'qwen3-int8-2026-11'))) - embedding).toBeLessThan(0.3 * ((await size(path.join(dirs.root, 'qwen3-fp32'))) - embedding));

    const server = await startServe({ args: ['--models-dir', dirs.modelsDir, '--data-dir', dirs.dataDir, '--threads', '1'], env: { DECIDE_API_KEYS: TEST_KEY } });
    try {
      const r = await postDecide(server.url, TEST_KEY, decideBody({ ticket: 'My card was charged twice.' }, MIXED_QUESTIONS, 'qwen3-int8'));
      expect(r.status).toBe(200);
      expect(r.body.model).toBe('qwen3-int8-2026-11');
      expectValidAnswers(r.body.answers, MIXED_QUESTIONS);
    } finally {
      await server.stop();
    }
  });
});
