/**
 * What the registry knows without loading a model (issue 23 item 9): a graph with NaN weights is
 * listed broken from the start, with the reason, and its alias does not point at it.
 *
 * One rule for model ids (issue 23 item 7): an undated id is never the alias of dated versions.
 * Every writer refuses it (calibrate through checkNewModelId, import-model, make-model), and the
 * registry, finding such a directory made by hand, does not serve it, so routing and the listing
 * agree on what the alias means.
 */
import { cpSync, mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import onnxProto from 'onnx-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { checkNewModelId } from '../../src/models/model-version.js';
import { modelIdProblem, ModelRegistry, parseDatedId } from '../../src/models/registry.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

describe('modelIdProblem', () => {
  it('an undated id equal to an alias of dated versions is refused, naming them', () => {
    expect(modelIdProblem('svc-alpha', ['svc-alpha-2026-10', 'svc-alpha-2026-11-22', 'other'])).toMatch(
      /'svc-alpha' is the alias of the dated version\(s\) svc-alpha-2026-10, svc-alpha-2026-11-22: .* Give it a dated id/,
    );
  });
  it('a dated id whose alias is an existing undated model is refused', () => {
    expect(modelIdProblem('svc-beta-2026-12', ['svc-beta'])).toMatch(/the alias of 'svc-beta-2026-12' is 'svc-beta', which is already an undated model/);
  });
  it('ordinary ids pass; invalid ones are named', () => {
    expect(modelIdProblem('svc-alpha-2026-12', ['svc-alpha-2026-10'])).toBeUndefined();
    expect(modelIdProblem('scratch', ['svc-alpha-2026-10'])).toBeUndefined();
    expect(modelIdProblem('svc', ['svc-alpha-2026-10'])).toBeUndefined();
    expect(modelIdProblem('../x', [])).toMatch(/not a valid model id/);
    expect(modelIdProblem('.m.tmp-1', [])).toMatch(/not a valid model id/);
  });

  it('a version date that does not exist is refused; a real one, leap days included, passes', () => {
    for (const id of ['svc-alpha-2026-13', 'svc-alpha-2026-00', 'svc-alpha-2026-02-30', 'svc-alpha-2026-11-31', 'svc-alpha-2025-02-29']) {
      expect(parseDatedId(id), id).toBeUndefined();
      expect(modelIdProblem(id, []), id).toMatch(/ends in a date that does not exist/);
    }
    for (const id of ['svc-alpha-2026-12', 'svc-alpha-2024-02-29', 'svc-alpha-2026-11-30']) {
      expect(parseDatedId(id)?.alias, id).toBe('svc-alpha');
      expect(modelIdProblem(id, []), id).toBeUndefined();
    }
  });
});

describe('writers and the registry apply it', () => {
  let root: string;
  let modelsDir: string;
  beforeAll(async () => {
    const tiny = await tinyModelDir();
    root = mkdtempSync(path.join(os.tmpdir(), 'model-ids-'));
    modelsDir = path.join(root, 'models');
    mkdirSync(modelsDir);
    for (const id of ['svc-alpha-2026-10', 'svc-alpha-2026-11', 'svc-alpha']) symlinkSync(tiny, path.join(modelsDir, id), 'dir');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('calibrate --as svc-alpha (checkNewModelId) is refused', () => {
    expect(() => checkNewModelId(modelsDir, 'svc-alpha-x')).not.toThrow();
    rmSync(path.join(modelsDir, 'svc-alpha'));
    expect(() => checkNewModelId(modelsDir, 'svc-alpha')).toThrow(/'svc-alpha' is the alias of the dated version\(s\) svc-alpha-2026-10, svc-alpha-2026-11/);
  });

  it('an undated directory named like an alias is not served: the alias resolves to the newest dated version everywhere', async () => {
    symlinkSync(await tinyModelDir(), path.join(modelsDir, 'svc-alpha'), 'dir');
    const logged: string[] = [];
    const registry = new ModelRegistry(modelsDir, { log: (m) => logged.push(m) });
    expect(registry.list().map((m) => m.id)).toEqual(['svc-alpha-2026-10', 'svc-alpha-2026-11']);
    expect(registry.aliases()).toEqual({ 'svc-alpha': 'svc-alpha-2026-11' });
    expect(registry.resolve('svc-alpha').id).toBe('svc-alpha-2026-11');
    expect(logged.join('\n')).toMatch(/skipping svc-alpha: its name is the alias of dated versions/);
  });

  it('a directory whose date does not exist is no version of the alias (it would rank newest): it is served under its own id', async () => {
    rmSync(path.join(modelsDir, 'svc-alpha'));
    symlinkSync(await tinyModelDir(), path.join(modelsDir, 'svc-alpha-2026-13'), 'dir');
    const registry = new ModelRegistry(modelsDir);
    expect(registry.aliases()).toEqual({ 'svc-alpha': 'svc-alpha-2026-11' });
    expect(registry.resolve('svc-alpha-2026-13').alias).toBeUndefined();
  });
});

describe('known load problems', () => {
  it('NaN weights: listed broken from the start, the alias stays on the good version', async () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'model-nan-'));
    try {
      const modelsDir = path.join(root, 'models');
      mkdirSync(modelsDir);
      const tiny = await tinyModelDir();
      symlinkSync(tiny, path.join(modelsDir, 'm-2026-10'), 'dir');
      const bad = path.join(modelsDir, 'm-2026-11');
      cpSync(tiny, bad, { recursive: true });
      const { onnx } = onnxProto;
      const graphFile = path.join(bad, 'onnx', 'model.onnx');
      const model = onnx.ModelProto.decode(readFileSync(graphFile));
      const norm = model.graph!.initializer!.find((t) => t.name === 'model.norm.weight')!;
      norm.rawData = new Uint8Array(new Float32Array(norm.rawData!.length / 4).fill(NaN).buffer);
      writeFileSync(graphFile, onnx.ModelProto.encode(model).finish());

      const registry = new ModelRegistry(modelsDir);
      expect(registry.list().find((m) => m.id === 'm-2026-11')?.broken).toMatch(/weight model\.norm\.weight holds NaN or infinite values/);
      expect(registry.aliases()).toEqual({ m: 'm-2026-10' });
      expect(registry.describe('m-2026-11').broken).toMatch(/NaN/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
