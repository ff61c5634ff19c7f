/**
 * `decide import-model` the way a user meets it: the CLI on a Hugging Face folder (with the real
 * Qwen3 tokenizer files and chat template), then `decide serve` answering /v1/decide with the
 * imported model over real HTTP; a folder without tokenizer files imports with a warning and is
 * refused by the service with an error that says so; a bad checkpoint exits 1 with the reason and
 * leaves nothing in the models directory.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, copyFile, cp, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { describeError } from '../../src/api/errors.js';
import { ModelRegistry } from '../../src/models/registry.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { decideBody, expectValidAnswers, MIXED_QUESTIONS, tempModels, TEST_KEY, type TempDirs } from '../api/fixtures.js';
import { decideBin, ROOT, runDecide } from '../helpers/bin.js';
import { unprivilegedRun } from '../helpers/unprivileged.js';
import { QWEN3_REAL_VOCAB_CONFIG, randomCheckpoint } from '../helpers/hf-checkpoint.js';
import { writeSafetensors } from '../helpers/safetensors-file.js';
import { QWEN3_TOKENIZER_FILES } from '../helpers/tokenizer-dir.js';
import { postDecide, startServe } from './serve-process.js';
import { HF_TINY } from '../helpers/fixtures.js';

const FIXTURES = HF_TINY;


let dirs: TempDirs;
let hfDir: string;


beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
  hfDir = path.join(dirs.root, 'hf', 'Qwen3-Tiny');
  await mkdir(hfDir, { recursive: true });
  await writeFile(path.join(hfDir, 'config.json'), JSON.stringify(QWEN3_REAL_VOCAB_CONFIG));
  writeSafetensors(path.join(hfDir, 'model.safetensors'), randomCheckpoint(QWEN3_REAL_VOCAB_CONFIG, 5, 1), 'BF16');
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(path.join(QWEN3_TOKENIZER_FILES, f), path.join(hfDir, f));
});

afterAll(() => dirs?.cleanup());

describe('decide import-model', () => {
  it('imports a folder with tokenizer files, and decide serve answers with it over HTTP', async () => {
    const res = await runDecide(['import-model', hfDir, '--out', dirs.modelsDir, '--id', 'qwen3-tiny-2026-11']);
    expect(res.code).toBe(0);
    // Not a terminal: plain progress lines as the weights pass each 10% (a tensor may pass several
    // at once), ending at 100%; nothing else.
    const lines = res.stderr.trim().split('\n');
    const percents = lines.map((l) => Number(/^decide import-model: weights (\d+)% of [\d.]+M weight values written/.exec(l)?.[1]));
    expect(percents.every((p) => p % 10 === 0), lines.join('\n')).toBe(true);
    expect(percents.at(-1)).toBe(100);
    expect([...percents].sort((a, b) => a - b)).toEqual(percents);
    expect(res.stdout).toMatch(/wrote .*qwen3-tiny-2026-11 \(qwen3, .*M parameters, fp32, ops graph, 66 nodes per layer\) in/);
    const out = path.join(dirs.modelsDir, 'qwen3-tiny-2026-11');
    expect((await readdir(out)).sort()).toEqual(['.decide-files', 'config.json', 'decision.json', 'onnx', 'tokenizer.json', 'tokenizer_config.json']);
    const decision = JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8'));
    expect(decision.import).toMatchObject({ family: 'qwen3', sourceDtypes: ['BF16'], dtype: 'fp32', tokenizer: true, tiedEmbeddings: true });
    // Packed by default: the engine scores a state's questions in one row.
    expect(decision.import.features).toEqual({ segmentIds: true });
    expect(decision.calibration.temperature).toEqual({ noul: 1, choice: 1, score: 1 });

    const server = await startServe({ args: ['--models-dir', dirs.modelsDir, '--data-dir', dirs.dataDir, '--threads', '1'], env: { DECIDE_API_KEYS: TEST_KEY } });
    try {
      const r = await postDecide(server.url, TEST_KEY, decideBody({ ticket: 'My card was charged twice.' }, MIXED_QUESTIONS, 'qwen3-tiny'));
      expect(r.status).toBe(200);
      expect(r.body.model).toBe('qwen3-tiny-2026-11');
      expectValidAnswers(r.body.answers, MIXED_QUESTIONS);
      expect(r.body.usage.input_tokens).toBeGreaterThan(50);
    } finally {
      await server.stop();
    }
  });

  it('without tokenizer files: imports with a warning; the service refuses it saying the tokenizer is missing', async () => {
    const res = await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', path.join(dirs.modelsDir, 'no-tokenizer-2026-11')]);
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(/warning: no tokenizer\.json .* imported without a tokenizer/);
    expect(res.stdout).toMatch(/NO tokenizer/);

    const svc = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, preload: [] });
    try {
      // Broken from the start, with the reason, before anyone tried to use it; the alias's metadata
      // answers with that version (GET /v1/models/{alias} never fails on a broken model).
      const listed = svc.listModels().data.find((m) => m.id === 'no-tokenizer-2026-11');
      expect(listed).toMatchObject({ status: 'broken', error: expect.stringMatching(/the model has no tokenizer: .*tokenizer\.json is missing/) });
      expect(svc.describeModel('no-tokenizer')).toMatchObject({ id: 'no-tokenizer-2026-11', status: 'broken' });
      expect(svc.listModels().aliases['no-tokenizer']).toBeUndefined();
      const err = await svc
        .decide({ model: 'no-tokenizer', state: 'hello', questions: { q: { type: 'noul', instructions: 'Is it?' } } })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(describeError(err)).toMatch(/no tokenizer: .*tokenizer\.json is missing/);
    } finally {
      await svc.close();
    }
  });

  it('with tokenizer.json but no tokenizer_config.json: refused under its dated id as under its alias, saying which file is missing', async () => {
    const partial = path.join(dirs.root, 'hf', 'no-config');
    await mkdir(partial, { recursive: true });
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) await copyFile(path.join(hfDir, f), path.join(partial, f));
    const res = await runDecide(['import-model', partial, '--out', path.join(dirs.modelsDir, 'no-config-2026-11')]);
    expect(res.code).toBe(0);
    expect(res.stderr).toMatch(/warning: no tokenizer_config\.json .* refuses to serve it/);

    const svc = await DecisionService.open({ modelsDir: dirs.modelsDir, ensureDefaultModel: false, preload: [] });
    try {
      expect(svc.listModels().data.find((m) => m.id === 'no-config-2026-11')).toMatchObject({ status: 'broken' });
      // The tokenizer alone would load (the prompt falling back to ChatML): the pinned id must not answer.
      for (const model of ['no-config', 'no-config-2026-11']) {
        const err = await svc.decide({ model, state: 'hello', questions: { q: { type: 'noul', instructions: 'Is it?' } } }).catch((e: unknown) => e);
        expect(err, model).toMatchObject({ status: 500, code: 'server_error' });
        expect(describeError(err), model).toMatch(/no tokenizer_config\.json: .*tokenizer_config\.json is missing/);
      }
    } finally {
      await svc.close();
    }
  });

  it('--segment-ids off writes the graph without segment ids; a bad --segment-ids, --dtype or --attention value exits 2 and writes nothing', async () => {
    const out = path.join(dirs.modelsDir, 'unpacked-2026-11');
    const res = await runDecide(['import-model', hfDir, '--out', out, '--segment-ids', 'off']);
    expect(res.code).toBe(0);
    const decision = JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8'));
    expect(decision.import.features).toBeUndefined();
    // Every bad option value is a usage error: exit 2, the reason, nothing written.
    for (const [args, message] of [
      [['--segment-ids', 'maybe'], /--segment-ids must be on or off, got 'maybe'/],
      [['--packing', 'maybe'], /--packing is now --segment-ids[^]*--segment-ids must be on or off, got 'maybe'/],
      [['--dtype', 'int4'], /--dtype must be fp32, fp16 or int8, got 'int4'/],
      [['--dtype', 'bf16'], /bf16 output is not supported: .* below ~6\.1e-5 \(fp16 subnormals\) they lose precision/],
      [['--attention', 'flash'], /--attention must be ops or fused, got 'flash'/],
    ] as const) {
      const bad = await runDecide(['import-model', hfDir, '--out', path.join(dirs.modelsDir, 'maybe-2026-11'), ...args]);
      expect(bad.code, args.join(' ')).toBe(2);
      expect(bad.stderr).toMatch(message);
      expect(existsSync(path.join(dirs.modelsDir, 'maybe-2026-11'))).toBe(false);
    }
  });

  it('a checkpoint that cannot be imported exits 1 with the reason and writes nothing', async () => {
    const bad = path.join(dirs.root, 'hf', 'bad');
    await mkdir(bad, { recursive: true });
    await writeFile(path.join(bad, 'config.json'), JSON.stringify({ ...QWEN3_REAL_VOCAB_CONFIG, model_type: 'qwen3_moe', num_experts: 8 }));
    await copyFile(path.join(hfDir, 'model.safetensors'), path.join(bad, 'model.safetensors'));
    const before = (await readdir(dirs.modelsDir)).sort();
    const res = await runDecide(['import-model', bad, '--out', path.join(dirs.modelsDir, 'bad-2026-11')]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/cannot import .*: config\.json: model_type "qwen3_moe" is a mixture-of-experts model/);
    expect((await readdir(dirs.modelsDir)).sort()).toEqual(before);

    const usage = await runDecide(['import-model', bad]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/usage: decide import-model HF_DIR --out DIR/);
  });

  it('relative paths resolve against the working directory; an existing --out is never overwritten', async () => {
    // The small fixture checkpoint (no tokenizer: nothing here needs one), copied under the working directory.
    const small = path.join(dirs.root, 'hf', 'qwen3-small');
    await cp(path.join(FIXTURES, 'qwen3'), small, { recursive: true });
    const res = await runDecide(['import-model', path.join('hf', 'qwen3-small'), '--out', path.join('rel-models', 'qwen3-rel-2026-11')], dirs.root);
    expect(res.code).toBe(0);
    const out = path.join(dirs.root, 'rel-models', 'qwen3-rel-2026-11');
    expect(res.stdout).toContain(`wrote ${out} `);
    const graph = await readFile(path.join(out, 'onnx', 'model.onnx'));

    // The same --out again: refused, the model untouched.
    const again = await runDecide(['import-model', path.join(FIXTURES, 'qwen2'), '--out', out]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exists and is a pinned version .* a pinned id never changes/);
    expect((await readFile(path.join(out, 'onnx', 'model.onnx'))).equals(graph)).toBe(true);

    // The models directory itself as --out (the --id forgotten): refused with the way to say it.
    const listing = (await readdir(dirs.modelsDir)).sort();
    const whole = await runDecide(['import-model', hfDir, '--out', dirs.modelsDir, '--force']);
    expect(whole.code).toBe(1);
    expect(whole.stderr).toMatch(/is not a model directory .*--out names the new model's own directory .* or give the models directory with --id NAME/);
    expect((await readdir(dirs.modelsDir)).sort()).toEqual(listing);
  });

  /** A checkpoint big enough that writing the weights takes a while: 4M embedding parameters, stored twice (tied head). */
  let big: string | undefined;
  async function bigCheckpoint(): Promise<string> {
    if (big !== undefined) return big;
    const cfg = { ...QWEN3_REAL_VOCAB_CONFIG, vocab_size: 32000, hidden_size: 128, num_attention_heads: 2, head_dim: 64, intermediate_size: 128 };
    const dir = path.join(dirs.root, 'hf', 'big');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(cfg));
    writeSafetensors(path.join(dir, 'model.safetensors'), randomCheckpoint(cfg, 9, 1), 'BF16');
    return (big = dir);
  }

  /** Polls until the staging directory of `name` in `modelsDir` has weights in it (or the process ended); returns its name(s). */
  async function whenStaged(child: ChildProcess, modelsDir: string, name: string): Promise<string[]> {
    let staged: string[] = [];
    while (child.exitCode === null && child.signalCode === null) {
      staged = (await readdir(modelsDir)).filter((n) => n.startsWith(`.${name}.tmp-`));
      if (staged.length === 1 && (await readdir(path.join(modelsDir, staged[0]!, 'onnx')).catch(() => [])).length > 0) break;
      await new Promise((r) => setTimeout(r, 2));
    }
    return staged;
  }

  it('an import killed mid-way (SIGKILL) leaves nothing the registry sees; the next import clears its remains', async () => {
    const big = await bigCheckpoint();
    const modelsDir = path.join(dirs.root, 'killed-models');
    await mkdir(modelsDir);

    const child = spawn(process.execPath, [await decideBin(), 'import-model', big, '--out', path.join(modelsDir, 'big-2026-11')], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    // Kill it as soon as its staging directory has weights in it.
    const staged = await whenStaged(child, modelsDir, 'big-2026-11');
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(await readdir(modelsDir)).toEqual(staged); // only the hidden staging directory
    const registry = new ModelRegistry(modelsDir);
    expect(registry.list()).toEqual([]);

    const res = await runDecide(['import-model', big, '--out', path.join(modelsDir, 'big-2026-11')]);
    expect(res.code).toBe(0);
    expect(await readdir(modelsDir)).toEqual(['big-2026-11']);
    registry.rescan();
    expect(registry.list().map((m) => m.id)).toEqual(['big-2026-11']);
  });

  // A closed terminal or ssh session sends SIGHUP: Node's own action would end the import at once,
  // its staging directory (as big as the model) left behind until the next import to that name.
  it('SIGHUP mid-write removes the staging directory and exits 129, as SIGTERM does with 143', async () => {
    const modelsDir = path.join(dirs.root, 'hung-up-models');
    await mkdir(modelsDir);
    const child = spawn(process.execPath, [await decideBin(), 'import-model', await bigCheckpoint(), '--out', path.join(modelsDir, 'big-2026-11')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (code, signal) => resolve([code, signal])));
    expect(await whenStaged(child, modelsDir, 'big-2026-11')).toHaveLength(1);
    child.kill('SIGHUP');
    expect(await exited, stderr).toEqual([129, null]);
    expect(stderr).toContain(`decide import-model: SIGHUP: removing the unfinished model, nothing was written to ${path.join(modelsDir, 'big-2026-11')}`);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it('a chat template that cannot render the decision prompt is refused before anything is written', async () => {
    const dir = path.join(dirs.root, 'hf', 'bad-template');
    await mkdir(dir, { recursive: true });
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) await copyFile(path.join(hfDir, f), path.join(dir, f));
    const cfg = JSON.parse(await readFile(path.join(hfDir, 'tokenizer_config.json'), 'utf8'));
    cfg.chat_template = '{{ messages[0].content }}'; // drops the user message
    await writeFile(path.join(dir, 'tokenizer_config.json'), JSON.stringify(cfg));
    const before = (await readdir(dirs.modelsDir)).sort();
    const res = await runDecide(['import-model', dir, '--out', path.join(dirs.modelsDir, 'bad-template-2026-11')]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/the chat template cannot render the decision prompt/);
    expect((await readdir(dirs.modelsDir)).sort()).toEqual(before);
  });
});


/** Every file under `dir` with its bytes, for "left exactly as it was" checks. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out[path.relative(dir, file)] = (await readFile(file)).toString('base64');
  }
  return out;
}

describe('decide import-model --out never destroys what is not its own', () => {
  it('--out is the input, inside it, holds it, or links to it: refused even with --force, the checkpoint untouched', async () => {
    const src = path.join(dirs.root, 'safety', 'ckpt');
    await cp(path.join(FIXTURES, 'qwen3'), src, { recursive: true });
    const before = await snapshot(path.join(dirs.root, 'safety'));
    await symlink(src, path.join(dirs.root, 'safety-link'));
    for (const [out, reason] of [
      [src, /is the input folder itself/],
      [path.join(src, '..', 'ckpt'), /is the input folder itself/],
      [path.join(dirs.root, 'safety-link'), /is the input folder itself/],
      [path.join(src, 'sub-2026-11'), /is inside the input folder/],
      [path.join(dirs.root, 'safety'), /holds the input folder/],
    ] as const) {
      const res = await runDecide(['import-model', src, '--out', out, '--force']);
      expect(res.code, `${out}: ${res.stderr}`).toBe(1);
      expect(res.stderr).toMatch(reason);
      expect(await snapshot(path.join(dirs.root, 'safety'))).toEqual(before);
    }
  });

  it('a project folder or a model not written by decide, holding a config.json: never replaced, even with --force', async () => {
    const project = path.join(dirs.root, 'my-project');
    await mkdir(path.join(project, 'src'), { recursive: true });
    await writeFile(path.join(project, 'config.json'), '{"app": true}');
    await writeFile(path.join(project, 'src', 'index.js'), 'console.log(1)');
    await writeFile(path.join(project, 'notes.md'), 'keep me');
    const handInstalled = path.join(dirs.root, 'hand-installed');
    await cp(path.join(FIXTURES, 'qwen3'), handInstalled, { recursive: true });
    for (const dir of [project, handInstalled]) {
      const before = await snapshot(dir);
      const res = await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', dir, '--force']);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/was not written by decide import-model or make-model .* never replaced, --force or not/);
      expect(await snapshot(dir)).toEqual(before);
    }
  });

  it('an imported model is replaced with --force under an undated id, never under a dated (pinned) one', async () => {
    const undated = path.join(dirs.root, 'force-models', 'scratch-model');
    expect((await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', undated])).code).toBe(0);
    const replaced = await runDecide(['import-model', path.join(FIXTURES, 'qwen2'), '--out', undated, '--force']);
    expect(replaced.code).toBe(0);
    expect(JSON.parse(await readFile(path.join(undated, 'decision.json'), 'utf8')).import.family).toBe('qwen2');

    const pinned = path.join(dirs.root, 'force-models', 'pinned-2026-11');
    expect((await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', pinned])).code).toBe(0);
    const before = await snapshot(pinned);
    const refused = await runDecide(['import-model', path.join(FIXTURES, 'qwen2'), '--out', pinned, '--force']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is a pinned version .* a pinned id never changes, --force or not/);
    expect(await snapshot(pinned)).toEqual(before);
  });

  it('an undated --id equal to an alias (svc-alpha beside svc-alpha-2026-10) is refused: it would hijack the alias', async () => {
    const before = (await readdir(dirs.modelsDir)).sort();
    const res = await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', dirs.modelsDir, '--id', 'svc-alpha']);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/cannot import .*: the output directory's name is its model id: 'svc-alpha' is the alias of the dated version\(s\) svc-alpha-2026-10/);
    expect((await readdir(dirs.modelsDir)).sort()).toEqual(before);
  });

  it('--out inside another model directory (ours, or one the registry lists) is refused, the model untouched', async () => {
    const modelsDir = path.join(dirs.root, 'nest-models');
    const host = path.join(modelsDir, 'host-2026-11');
    expect((await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', host])).code).toBe(0);
    const handInstalled = path.join(modelsDir, 'by-hand');
    await mkdir(path.join(handInstalled, 'onnx'), { recursive: true });
    await writeFile(path.join(handInstalled, 'config.json'), '{}');
    await writeFile(path.join(handInstalled, 'onnx', 'model.onnx'), '');
    const before = await snapshot(modelsDir);
    for (const [args, inside] of [
      [['--out', host, '--id', 'inner-2026-11'], host],
      [['--out', path.join(host, 'inner-2026-11')], host],
      [['--out', path.join(host, 'onnx', 'deeper-2026-11')], host],
      [['--out', handInstalled, '--id', 'inner-2026-11'], handInstalled],
    ] as const) {
      const res = await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), ...args]);
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).toContain(`lies inside the model directory ${inside}: a model there is served by no models directory`);
      expect(res.stderr).toContain(`write it beside it instead (in the models directory ${modelsDir}: give the models directory with --id NAME, or --out ${path.join(modelsDir, 'NAME')})`);
      expect(await snapshot(modelsDir)).toEqual(before);
    }
  });

  it('a checkpoint folder this user may not enter: permission denied, not "does not exist"', async (ctx) => {
    // As nobody where this is root: for nobody the 0700 scratch folder is as closed as the 000 one
    // is to its owner.
    const bin = await decideBin();
    const user = unprivilegedRun(ctx, bin);
    const closed = path.join(dirs.root, 'closed');
    const ck = path.join(closed, 'ck');
    await cp(path.join(FIXTURES, 'qwen3'), ck, { recursive: true });
    await chmod(closed, 0o000);
    try {
      const res = await new Promise<{ code: number; stderr: string }>((resolve) => {
        execFile(process.execPath, [bin, 'import-model', ck, '--out', path.join(os.tmpdir(), 'never-written-2026-11')], { cwd: ROOT, ...user }, (err, _stdout, stderr) =>
          resolve({ code: err ? Number(err.code) : 0, stderr }),
        );
      });
      expect(res.code).toBe(1);
      expect(res.stderr).toContain(`cannot import ${ck}: ${ck}: permission denied: this user may not look into it or a folder above it (EACCES, stat)`);
    } finally {
      await chmod(closed, 0o755);
    }
  });

  it('--out under /proc fails at once naming the directory (no endless recursive mkdir)', async () => {
    const res = await runDecide(['import-model', path.join(FIXTURES, 'qwen3'), '--out', '/proc/decide-test-models/m-2026-11']);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/cannot create \/proc\/decide-test-models: ENOENT/);
  });

  it('two imports to the same --out at once: exactly one wins, the other fails and leaves its model alone', async () => {
    // Big enough that both are still writing weights when the other checks --out.
    const cfg = { ...QWEN3_REAL_VOCAB_CONFIG, vocab_size: 32000, hidden_size: 128, num_attention_heads: 2, head_dim: 64, intermediate_size: 128 };
    const big = path.join(dirs.root, 'hf', 'race');
    await mkdir(big, { recursive: true });
    await writeFile(path.join(big, 'config.json'), JSON.stringify(cfg));
    writeSafetensors(path.join(big, 'model.safetensors'), randomCheckpoint(cfg, 11, 1), 'BF16');
    const modelsDir = path.join(dirs.root, 'race-models');
    const out = path.join(modelsDir, 'race-2026-11');
    const [a, b] = await Promise.all([
      runDecide(['import-model', big, '--out', out, '--segment-ids', 'on']),
      runDecide(['import-model', big, '--out', out, '--segment-ids', 'off']),
    ]);
    const results = [a, b];
    expect(results.map((r) => r.code).sort()).toEqual([0, 1]);
    const loser = results.find((r) => r.code === 1)!;
    expect(loser.stderr).toMatch(/(was written by another process while this one was working|already exists)/);
    // The model there is the winner's, whole.
    const winnerPacked = results[0]!.code === 0;
    const decision = JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8'));
    expect(decision.import.features).toEqual(winnerPacked ? { segmentIds: true } : undefined);
    expect(await readdir(modelsDir)).toEqual(['race-2026-11']);
    const registry = new ModelRegistry(modelsDir);
    expect(registry.list().map((m) => m.id)).toEqual(['race-2026-11']);
  });
});
