/**
 * Customer data on disk is private to the service's user, whatever the umask (022 here, the usual
 * one): the SQLite batch store makes the data dir and batches/ 0700, and batches.sqlite (with its
 * -wal/-shm), staged uploads and each job's input.jsonl / results.jsonl 0600. A data dir an older
 * version left 0755 is tightened when it is recognisably ours; a shared directory named as the data
 * dir is reported, not changed. A keys file that others can read is used with a warning.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BatchService } from '../../src/batches/batch-service.js';
import { resolveApiKeys } from '../../src/server/api-keys.js';
import { DecisionService } from '../../src/service/decision-service.js';
import { goodLines, MODEL_ID, tempWorkspace } from './helpers.js';

let workDir: string;
let modelsDir: string;
let svc: DecisionService;
let umask: number;

beforeAll(async () => {
  umask = process.umask(0o022);
  ({ dir: workDir, modelsDir } = await tempWorkspace('batch-private'));
  svc = await DecisionService.open({ modelsDir, preload: [MODEL_ID], threads: 1 });
}, 120_000);

afterAll(async () => {
  process.umask(umask);
  await svc?.close();
  await rm(workDir, { recursive: true, force: true });
});

const mode = (p: string) => statSync(p).mode & 0o777;

async function waitCompleted(batches: BatchService, id: string): Promise<void> {
  const until = Date.now() + 60_000;
  while ((await batches.get('o', id)).status !== 'completed') {
    if (Date.now() > until) throw new Error(`batch ${id} did not complete`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('batch data on disk is private', () => {
  it('a fresh data dir: directories 0700, the database, staged uploads and job files 0600', async () => {
    const dataDir = path.join(workDir, 'fresh', 'data');
    const batches = await BatchService.open({ service: svc, dataDir, databaseUrl: '' });
    try {
      const upload = await batches.stageUpload(Readable.from([goodLines(6).join('\n')]));
      expect(mode(upload.path)).toBe(0o600);
      const job = await batches.create({ owner: 'o', model: 'svc-alpha', upload });
      await waitCompleted(batches, job.id);
      await batches.whenIdle();
      expect(mode(dataDir)).toBe(0o700);
      for (const dir of ['batches', path.join('batches', '.staging'), path.join('batches', job.id)]) expect(mode(path.join(dataDir, dir)), dir).toBe(0o700);
      const files = ['batches.sqlite', 'batches.sqlite-wal', 'batches.sqlite-shm', path.join('batches', job.id, 'input.jsonl'), path.join('batches', job.id, 'results.jsonl')];
      for (const f of files) {
        if (f.startsWith('batches.sqlite-') && !existsSync(path.join(dataDir, f))) continue;
        expect(mode(path.join(dataDir, f)), f).toBe(0o600);
      }
      expect(existsSync(path.join(dataDir, 'batches.sqlite-wal'))).toBe(true); // WAL mode: the -wal file exists and was checked
    } finally {
      await batches.close();
    }
  }, 60_000);

  it('a data dir an older version left wide is tightened; a shared directory is reported, not changed', async () => {
    const old = path.join(workDir, 'old-data');
    mkdirSync(path.join(old, 'batches'), { recursive: true });
    writeFileSync(path.join(old, 'api-key'), 'dk_x\n', { mode: 0o600 });
    writeFileSync(path.join(old, 'batches.sqlite'), '');
    for (const [p, m] of [[old, 0o755], [path.join(old, 'batches'), 0o755], [path.join(old, 'batches.sqlite'), 0o644]] as const) chmodSync(p, m);
    // Written by an older version: before this process started (a file this process wrote does not mark the dir as ours).
    const before = new Date(performance.timeOrigin - 60_000);
    for (const name of ['api-key', 'batches.sqlite']) utimesSync(path.join(old, name), before, before);
    const a = await BatchService.open({ service: svc, dataDir: old, databaseUrl: '' });
    await a.close();
    expect(mode(old)).toBe(0o700);
    expect(mode(path.join(old, 'batches'))).toBe(0o700);
    expect(mode(path.join(old, 'batches.sqlite'))).toBe(0o600);

    const shared = path.join(workDir, 'shared');
    mkdirSync(shared, { mode: 0o755 });
    chmodSync(shared, 0o755);
    writeFileSync(path.join(shared, 'notes.txt'), 'theirs');
    const lines: string[] = [];
    const b = await BatchService.open({ service: svc, dataDir: shared, databaseUrl: '', log: (l) => lines.push(l) });
    await b.close();
    expect(mode(shared)).toBe(0o755);
    expect(lines.join('\n')).toMatch(/the data dir .*shared is mode 0755: others on this machine can list or read batch data there; chmod 700 it/);
    expect(readdirSync(shared)).toContain('notes.txt');
  }, 60_000);

  it('a keys file others can read: used, with a warning; a 0600 one: no warning', () => {
    const file = path.join(workDir, 'keys.txt');
    writeFileSync(file, 'file-key-1\n');
    chmodSync(file, 0o644);
    const wide = resolveApiKeys({ env: { DECIDE_API_KEYS_FILE: file } });
    expect(wide.keys.verify('file-key-1')).toBeDefined();
    expect(wide.warnings).toEqual([`the API keys file ${file} is mode 0644: others on this machine can read the keys; chmod 600 it`]);
    expect(resolveApiKeys({ keysFile: file }).warnings).toHaveLength(1);
    chmodSync(file, 0o600);
    expect(resolveApiKeys({ env: { DECIDE_API_KEYS_FILE: file } }).warnings).toEqual([]);
  });
});
