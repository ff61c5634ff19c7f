/**
 * Installing a model while the service runs: a version copied in file by file stays invisible
 * until its last file is whole, an alias never moves to a version that cannot load (it keeps the
 * last good one, and /v1/models reports the broken one), and a broken version is tried again once
 * its files change. Real engine, real files.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { makeModel } from '../../src/models/builder/make-model.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { tinyModelDir } from '../helpers/tiny-model.js';
import { QWEN3_TOKENIZER_FILES } from '../helpers/tokenizer-dir.js';

const QUESTION = { refund: { type: 'noul', instructions: 'Does the customer want a refund?' } };

/** Every file of a model directory, relative paths, in the order a plain `cp -r` might copy them. */
function filesOf(dir: string, sub = ''): string[] {
  return readdirSync(path.join(dir, sub))
    .sort()
    .flatMap((name) => {
      const rel = path.join(sub, name);
      return statSync(path.join(dir, rel)).isDirectory() ? filesOf(dir, rel) : [rel];
    });
}

describe('installing a model while the service runs', () => {
  let tmp: string;
  let modelsDir: string;
  let source: string;
  let svc: DecisionService;
  const logged: string[] = [];

  const answeredBy = async (model: string) => (await svc.decide({ model, state: 'The parcel arrived broken.', questions: QUESTION })).model;
  const listed = () => svc.listModels();
  /** An unknown id makes the registry re-read the directory, as in the original report. */
  const rescanByUnknownId = async () => expect(answeredBy('no-such-model')).rejects.toMatchObject({ code: 'not_found' });

  beforeAll(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'model-install-'));
    modelsDir = path.join(tmp, 'models');
    mkdirSync(modelsDir);
    const tiny = await tinyModelDir();
    const good = path.join(modelsDir, 'svc-alpha-2026-10');
    for (const rel of filesOf(tiny)) {
      mkdirSync(path.dirname(path.join(good, rel)), { recursive: true });
      copyFileSync(path.join(tiny, rel), path.join(good, rel));
    }
    // The new version keeps its weights in external data (onnx/model.onnx_data), as real exports do.
    source = path.join(tmp, 'source');
    await makeModel({ preset: 'tiny', outDir: source, seed: 3, externalData: true });
    expect(filesOf(source)).toContain(path.join('onnx', 'model.onnx_data'));
    svc = await DecisionService.open({ modelsDir, ensureDefaultModel: false, preload: ['svc-alpha'], threads: 1, log: (l) => logged.push(l) });
  });
  afterAll(async () => {
    await svc?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('a version copied file by file is invisible until complete; the alias stays on the good one', async () => {
    const target = path.join(modelsDir, 'svc-alpha-2026-11');
    const files = filesOf(source);
    for (const rel of files) {
      const from = path.join(source, rel);
      const to = path.join(target, rel);
      mkdirSync(path.dirname(to), { recursive: true });
      // Each file first half-written (a copy in progress), then whole.
      const bytes = readFileSync(from);
      writeFileSync(to, bytes.subarray(0, Math.floor(bytes.length / 2)));
      for (const step of ['half', 'whole'] as const) {
        if (step === 'whole') writeFileSync(to, bytes);
        const last = step === 'whole' && rel === files[files.length - 1];
        await rescanByUnknownId();
        if (last) break;
        expect(await answeredBy('svc-alpha'), `${rel} ${step}`).toBe('svc-alpha-2026-10');
        expect(listed().data.map((m) => m.id)).not.toContain('svc-alpha-2026-11');
        expect(listed().aliases['svc-alpha']).toBe('svc-alpha-2026-10');
      }
    }
    expect(logged.some((l) => l.includes('skipping svc-alpha-2026-11'))).toBe(true);
    expect(await answeredBy('svc-alpha')).toBe('svc-alpha-2026-11');
    expect(listed().data.find((m) => m.id === 'svc-alpha-2026-11')).toMatchObject({ status: 'ok', loaded: true });
  });

  it('a complete version that cannot load is reported broken; the alias keeps the last good one', async () => {
    const target = path.join(modelsDir, 'svc-alpha-2026-12');
    const staging = path.join(modelsDir, '.svc-alpha-2026-12');
    for (const rel of filesOf(source)) {
      mkdirSync(path.dirname(path.join(staging, rel)), { recursive: true });
      copyFileSync(path.join(source, rel), path.join(staging, rel));
    }
    // config.json disagrees with the graph: complete on disk, but the engine refuses to load it.
    const configFile = path.join(staging, 'config.json');
    const config = JSON.parse(readFileSync(configFile, 'utf8'));
    writeFileSync(configFile, JSON.stringify({ ...config, num_hidden_layers: config.num_hidden_layers + 1 }));
    await rescanByUnknownId();
    expect(listed().data.map((m) => m.id)).not.toContain('.svc-alpha-2026-12');
    const { renameSync } = await import('node:fs');
    renameSync(staging, target);
    await rescanByUnknownId();

    expect(await answeredBy('svc-alpha')).toBe('svc-alpha-2026-11');
    expect(await answeredBy('svc-alpha')).toBe('svc-alpha-2026-11');
    const broken = listed().data.find((m) => m.id === 'svc-alpha-2026-12');
    expect(broken).toMatchObject({ status: 'broken', loaded: false });
    expect(broken?.error).toMatch(/layers/);
    expect(listed().aliases['svc-alpha']).toBe('svc-alpha-2026-11');
    expect(logged.some((l) => l.includes('svc-alpha-2026-12') && l.includes('broken'))).toBe(true);
    // The pinned id answers an error, not a hang or a crash.
    await expect(answeredBy('svc-alpha-2026-12')).rejects.toMatchObject({ code: 'server_error' });

    // Fixed in place: its files change, so it is tried again and the alias moves to it.
    writeFileSync(path.join(target, 'config.json'), JSON.stringify(config));
    expect(listed().data.find((m) => m.id === 'svc-alpha-2026-12')).toMatchObject({ status: 'ok' });
    expect(await answeredBy('svc-alpha')).toBe('svc-alpha-2026-12');
    expect(svc.isReady()).toBe(true);
  });

  it("another model's tokenizer (more ids than config.json's vocab_size) makes the version broken, a 500, not a 400 on every request", async () => {
    const target = path.join(modelsDir, 'other-2026-01');
    for (const rel of filesOf(source)) {
      mkdirSync(path.dirname(path.join(target, rel)), { recursive: true });
      copyFileSync(path.join(source, rel), path.join(target, rel));
    }
    copyFileSync(path.join(QWEN3_TOKENIZER_FILES, 'tokenizer.json'), path.join(target, 'tokenizer.json'));
    await rescanByUnknownId();
    await expect(answeredBy('other-2026-01')).rejects.toMatchObject({ code: 'server_error' });
    const broken = listed().data.find((m) => m.id === 'other-2026-01');
    expect(broken).toMatchObject({ status: 'broken', loaded: false });
    expect(broken?.error).toMatch(/the tokenizer's ids go up to 151668 but config\.json's vocab_size is \d+/);
  });

  it('a tokenizer with an id past vocab_size but no more tokens than it makes the version broken too, naming the ids, not a 400 on the texts that reach that id', async () => {
    const target = path.join(modelsDir, 'gap-2026-01');
    for (const rel of filesOf(source)) {
      mkdirSync(path.dirname(path.join(target, rel)), { recursive: true });
      copyFileSync(path.join(source, rel), path.join(target, rel));
    }
    const vocabSize = (JSON.parse(readFileSync(path.join(target, 'config.json'), 'utf8')) as { vocab_size: number }).vocab_size;
    const tokenizer = JSON.parse(readFileSync(path.join(target, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } };
    const moved = Object.keys(tokenizer.model.vocab).find((t) => tokenizer.model.vocab[t] === 40)!;
    tokenizer.model.vocab[moved] = vocabSize + 100;
    writeFileSync(path.join(target, 'tokenizer.json'), JSON.stringify(tokenizer));
    await rescanByUnknownId();
    await expect(answeredBy('gap-2026-01')).rejects.toMatchObject({ code: 'server_error' });
    const broken = listed().data.find((m) => m.id === 'gap-2026-01');
    expect(broken).toMatchObject({ status: 'broken', loaded: false });
    expect(broken?.error).toContain(`the tokenizer's ids go up to ${vocabSize + 100} but config.json's vocab_size is ${vocabSize}`);
  });

  it('a named pipe in a model directory is never read (that would block the process): the version is listed incomplete', async () => {
    const target = path.join(modelsDir, 'svc-alpha-2026-13');
    for (const rel of filesOf(source)) {
      mkdirSync(path.dirname(path.join(target, rel)), { recursive: true });
      if (rel !== 'tokenizer_config.json') copyFileSync(path.join(source, rel), path.join(target, rel));
    }
    execFileSync('mkfifo', [path.join(target, 'tokenizer_config.json')]);
    await rescanByUnknownId();
    const incomplete = listed().incomplete?.find((m) => m.id === 'svc-alpha-2026-13');
    expect(incomplete?.reason).toMatch(/tokenizer_config\.json: not a regular file/);
    expect(await answeredBy('svc-alpha')).toBe('svc-alpha-2026-12');
  });
});
