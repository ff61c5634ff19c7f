/**
 * `decide make-model` as a user runs it: the packing graph by default (decision.json records
 * builder.features.segmentIds, and an engine asked to pack can), `--segment-ids off` for the graph
 * without it (and `--packing off`, its old name, with a notice), and a bad value refused before
 * anything is written.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { decideBin, runDecide } from '../helpers/bin.js';

let scratch: string;


beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'decide-make-model-'));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('decide make-model --segment-ids', () => {
  it.each([
    { args: [], packed: true },
    { args: ['--segment-ids', 'off'], packed: false },
    { args: ['--packing', 'off'], packed: false, notice: /--packing is now --segment-ids \(whether the graph takes segment ids\); taking --packing off as --segment-ids/ },
  ])('$args: packed graph $packed', async ({ args, packed, notice }) => {
    const out = path.join(scratch, `${packed ? 'packed' : 'unpacked'}-${args.join('')}`);
    const res = await runDecide(['make-model', '--preset', 'tiny', '--out', out, ...args]);
    expect(res.code).toBe(0);
    if (notice) expect(res.stderr).toMatch(notice);
    const decision = JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8'));
    expect(decision.builder.features).toEqual(packed ? { segmentIds: true } : undefined);
    const engine = await Engine.load({ modelDir: out, threads: 1, packSuffixes: true });
    try {
      expect(engine.info.packsSuffixes).toBe(packed);
    } finally {
      engine.close();
    }
  });

  it('--out inside another model directory is refused (exit 1), that model untouched', async () => {
    const host = path.join(scratch, 'nest', 'host-2026-11');
    expect((await runDecide(['make-model', '--preset', 'tiny', '--out', host])).code).toBe(0);
    const before = (await readdir(host, { recursive: true })).sort();
    const res = await runDecide(['make-model', '--preset', 'tiny', '--out', path.join(host, 'inner-2026-11')]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`lies inside the model directory ${host}: a model there is served by no models directory`);
    // The way out in make-model's own flags (it has no --id).
    expect(res.stderr).toContain(`write it beside it instead (in the models directory ${path.dirname(host)}: --out ${path.join(path.dirname(host), 'NAME')})`);
    expect(res.stderr).not.toContain('--id');
    const models = path.join(scratch, 'project');
    await mkdir(models, { recursive: true });
    await writeFile(path.join(models, 'notes.txt'), 'mine');
    const whole = await runDecide(['make-model', '--preset', 'tiny', '--out', models, '--force']);
    expect(whole.code).toBe(1);
    expect(whole.stderr).toMatch(/is not a model directory \(no config\.json\); --out names the new model's own directory \(e\.g\. .*NAME-YYYY-MM\)\n$/);
    expect((await readdir(host, { recursive: true })).sort()).toEqual(before);
  });

  it('a bad value of any option is a usage error (exit 2) and writes nothing', async () => {
    const out = path.join(scratch, 'maybe');
    for (const [args, message] of [
      [['--segment-ids', 'maybe'], /--segment-ids must be on or off, got 'maybe'/],
      [['--dtype', 'bf16'], /--dtype must be fp32, fp16 or int8, got 'bf16'/],
      [['--attention', 'flash'], /--attention must be ops or fused, got 'flash'/],
      [['--seed', '1.5'], /--seed must be a non-negative integer, got '1.5'/],
    ] as const) {
      const res = await runDecide(['make-model', '--preset', 'tiny', '--out', out, ...args]);
      expect(res.code, args.join(' ')).toBe(2);
      expect(res.stderr).toMatch(message);
      expect(existsSync(out)).toBe(false);
    }
    const preset = await runDecide(['make-model', '--preset', 'huge', '--out', out]);
    expect(preset.code).toBe(2);
    expect(preset.stderr).toMatch(/--preset must be one of tiny, small, qwen3-0\.6b, got 'huge'/);
  });
});

/** Every file under `dir` with its bytes. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) out[path.relative(dir, path.join(entry.parentPath, entry.name))] = (await readFile(path.join(entry.parentPath, entry.name))).toString('base64');
  }
  return out;
}

describe('decide make-model onto an existing model', () => {
  it('a pinned (dated) model is never replaced, --force or not', async () => {
    const pinned = path.join(scratch, 'models', 'svc-alpha-2026-10');
    expect((await runDecide(['make-model', '--preset', 'tiny', '--out', pinned, '--segment-ids', 'off'])).code).toBe(0);
    const before = await snapshot(pinned);
    for (const extra of [[], ['--force']]) {
      const res = await runDecide(['make-model', '--preset', 'tiny', '--out', pinned, '--seed', '7', ...extra]);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/svc-alpha-2026-10 already exists and is a pinned version .* never changes, --force or not/);
      expect(await snapshot(pinned)).toEqual(before);
    }
  });

  it('an undated model is replaced only with --force; a model not written by decide never', async () => {
    const out = path.join(scratch, 'models', 'scratch-tiny');
    expect((await runDecide(['make-model', '--preset', 'tiny', '--out', out, '--seed', '3'])).code).toBe(0);
    const refused = await runDecide(['make-model', '--preset', 'tiny', '--out', out, '--seed', '4']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/already exists; .* pass --force to replace it/);
    expect(JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8')).builder.seed).toBe(3);
    expect((await runDecide(['make-model', '--preset', 'tiny', '--out', out, '--seed', '4', '--force'])).code).toBe(0);
    expect(JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8')).builder.seed).toBe(4);
    expect((await readdir(path.dirname(out))).filter((n) => n.includes('.tmp-'))).toEqual([]);

    // The same files with decision.json's builder record gone: a model installed by hand.
    const hand = path.join(scratch, 'models', 'hand-installed');
    await cp(out, hand, { recursive: true });
    await rm(path.join(hand, 'decision.json'));
    const before = await snapshot(hand);
    const res = await runDecide(['make-model', '--preset', 'tiny', '--out', hand, '--force']);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/was not written by decide import-model or make-model/);
    expect(await snapshot(hand)).toEqual(before);
  });

  it('--force refuses, naming them, when someone put files of their own in the model directory; they are kept', async () => {
    const out = path.join(scratch, 'models', 'notes-tiny');
    expect((await runDecide(['make-model', '--preset', 'tiny', '--out', out, '--seed', '3'])).code).toBe(0);
    // What the engine derives from the graph at load is ours; a note and a checkpoint are not.
    await writeFile(path.join(out, 'onnx', 'model.decide-gather.onnx'), 'derived');
    await writeFile(path.join(out, 'NOTES.md'), 'my notes');
    await mkdir(path.join(out, 'ckpt'));
    await writeFile(path.join(out, 'ckpt', 'model.safetensors'), 'weights');
    const before = await snapshot(out);
    const refused = await runDecide(['make-model', '--preset', 'tiny', '--out', out, '--seed', '4', '--force']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/holds 2 files that decide did not write \(NOTES\.md, ckpt\/model\.safetensors\); --force replaces only what decide wrote/);
    expect(await snapshot(out)).toEqual(before);

    // Written before the manifest existed: the names our writers use are ours, the note is not.
    await rm(path.join(out, '.decide-files'));
    await rm(path.join(out, 'ckpt'), { recursive: true });
    const legacy = await runDecide(['make-model', '--preset', 'tiny', '--out', out, '--seed', '4', '--force']);
    expect(legacy.code).toBe(1);
    expect(legacy.stderr).toMatch(/holds a file that decide did not write \(NOTES\.md\)/);

    await rm(path.join(out, 'NOTES.md'));
    expect((await runDecide(['make-model', '--preset', 'tiny', '--out', out, '--seed', '4', '--force'])).code).toBe(0);
    expect(JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8')).builder.seed).toBe(4);
    expect(JSON.parse(await readFile(path.join(out, '.decide-files'), 'utf8'))).toEqual(expect.arrayContaining(['config.json', 'decision.json', 'onnx/model.onnx']));
  });
});

describe('decide make-model interrupted', () => {
  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
    // A closed terminal or ssh session; Node's own action for both would leave the folder behind.
    ['SIGHUP', 129],
    ['SIGUSR2', 140],
  ] as const)('%s while the model is being written: its hidden staging folder is removed, exit %i', async (signal, code) => {
    const parent = await mkdtemp(path.join(scratch, 'interrupted-'));
    const child = spawn(process.execPath, [await decideBin(), 'make-model', '--preset', 'small', '--out', path.join(parent, 'm')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    // Signalled once the staging folder holds a file: the model is being written.
    const staging = () => readdirSync(parent).filter((name) => name.startsWith('.m.tmp-'));
    while (!staging().some((name) => readdirSync(path.join(parent, name)).length > 0)) await new Promise((r) => setTimeout(r, 10));
    child.kill(signal);
    expect(await exited, stderr).toBe(code);
    expect(stderr).toContain(`decide make-model: ${signal}: removing the unfinished model`);
    expect(readdirSync(parent)).toEqual([]);
  }, 120_000);
});
