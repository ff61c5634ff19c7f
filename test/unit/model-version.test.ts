// A new model version shares its base's files by link and owns only its decision.json; it appears
// in one rename, so a failure leaves nothing behind. Day-dated ids sort after their month's id.
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { defaultVersionId, writeModelVersion } from '../../src/models/model-version.js';
import { parseDatedId } from '../../src/models/registry.js';

const roots: string[] = [];
afterAll(async () => {
  await Promise.all(roots.map((r) => rm(r, { recursive: true, force: true })));
});

async function fakeModels() {
  const root = await mkdtemp(path.join(tmpdir(), 'model-version-'));
  roots.push(root);
  const modelsDir = path.join(root, 'models');
  const base = path.join(modelsDir, 'm-2026-10');
  await mkdir(path.join(base, 'onnx'), { recursive: true });
  await writeFile(path.join(base, 'config.json'), '{"a":1}');
  await writeFile(path.join(base, 'onnx', 'model.onnx'), 'graph');
  await writeFile(path.join(base, 'onnx', 'model.onnx.tmp-123'), 'half-written by someone else');
  await writeFile(path.join(base, 'decision.json'), JSON.stringify({ model: { id: 'm-2026-10', note: 'x' }, calibration: { temperature: { choice: 3 } } }));
  await writeFile(path.join(root, 'outside.txt'), 'shared');
  await symlink('../../outside.txt', path.join(base, 'link.txt'));
  return { modelsDir, base };
}

describe('writeModelVersion', () => {
  it('hard-links every file, re-points symlinks, skips temp files, writes its own decision.json', async () => {
    const { modelsDir, base } = await fakeModels();
    const dir = await writeModelVersion({
      modelsDir,
      baseDir: base,
      newId: 'm-2026-11-22',
      decision: (b) => ({ ...b, calibration: { temperature: { choice: 0.5 } } }),
    });
    expect(dir).toBe(path.join(modelsDir, 'm-2026-11-22'));
    expect((await stat(path.join(dir, 'onnx', 'model.onnx'))).ino).toBe((await stat(path.join(base, 'onnx', 'model.onnx'))).ino);
    expect((await stat(path.join(dir, 'config.json'))).ino).toBe((await stat(path.join(base, 'config.json'))).ino);
    expect(await readFile(path.join(dir, 'link.txt'), 'utf8')).toBe('shared');
    expect(await readdir(path.join(dir, 'onnx'))).toEqual(['model.onnx']);
    expect(JSON.parse(await readFile(path.join(dir, 'decision.json'), 'utf8'))).toEqual({
      model: { id: 'm-2026-10', note: 'x' },
      calibration: { temperature: { choice: 0.5 } },
    });
    // The base's own decision.json is untouched (not a shared inode).
    expect(JSON.parse(await readFile(path.join(base, 'decision.json'), 'utf8')).calibration.temperature.choice).toBe(3);
    expect((await readdir(modelsDir)).sort()).toEqual(['m-2026-10', 'm-2026-11-22']);
  });

  it('refuses an existing or invalid id, and leaves nothing when the decision cannot be built', async () => {
    const { modelsDir, base } = await fakeModels();
    const decision = () => ({});
    await expect(writeModelVersion({ modelsDir, baseDir: base, newId: 'm-2026-10', decision })).rejects.toThrow(/already exists/);
    await expect(writeModelVersion({ modelsDir, baseDir: base, newId: '../escape', decision })).rejects.toThrow(/not a valid model id/);
    await expect(
      writeModelVersion({
        modelsDir,
        baseDir: base,
        newId: 'm-2026-12',
        decision: () => {
          throw new Error('boom');
        },
      }),
    ).rejects.toThrow('boom');
    expect(await readdir(modelsDir)).toEqual(['m-2026-10']);
  });

  it('removes what a run killed mid-write of the same id left (its process gone), and nothing of a live one', async () => {
    const { modelsDir, base } = await fakeModels();
    const deadPid = 2 ** 22 + 17; // above Linux's pid_max: no such process
    const dead = path.join(modelsDir, `.m-2026-11-23.tmp-${deadPid}-0badcafe`);
    const live = path.join(modelsDir, `.m-2026-11-23.tmp-${process.ppid}-0c0ffee0`);
    for (const dir of [dead, live]) {
      await mkdir(dir);
      await writeFile(path.join(dir, 'config.json'), '{}');
    }
    await writeModelVersion({ modelsDir, baseDir: base, newId: 'm-2026-11-23', decision: (b) => b });
    expect((await readdir(modelsDir)).sort()).toEqual([path.basename(live), 'm-2026-10', 'm-2026-11-23'].sort());
  });
});

describe('dated ids', () => {
  it('a day-dated id belongs to its alias and is newer than the month id', () => {
    expect(parseDatedId('svc-alpha-2026-11-22')).toEqual({ alias: 'svc-alpha', version: '2026-11-22' });
    expect(parseDatedId('svc-alpha-2026-10')).toEqual({ alias: 'svc-alpha', version: '2026-10' });
    expect(parseDatedId('tiny')).toBeUndefined();
    const versions = ['2026-11-22', '2026-10', '2026-11', '2026-10-31', '2027-01'].sort();
    expect(versions).toEqual(['2026-10', '2026-10-31', '2026-11', '2026-11-22', '2027-01']);
  });

  it('the default id of a calibration: the base alias and today (UTC)', () => {
    const now = new Date('2026-11-22T23:59:59Z');
    expect(defaultVersionId('svc-alpha-2026-10', now)).toBe('svc-alpha-2026-11-22');
    expect(defaultVersionId('svc-alpha-2026-11-01', now)).toBe('svc-alpha-2026-11-22');
    expect(defaultVersionId('tiny', now)).toBe('tiny-2026-11-22');
  });
});
