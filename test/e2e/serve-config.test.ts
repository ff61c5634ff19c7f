/**
 * `decide serve`'s folders and settings as an operator writes them, in real processes: an empty
 * DECIDE_DATA_DIR is unset (./data, never the current directory); a data dir it finds that others
 * can enter is left as it is, with a warning at warn level, even though the generated key is
 * written into it; a retention with a fraction of a millisecond still lets batches finish; at
 * `--log-level trace` no line holds the key.
 */
import { chmodSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempModels, type TempDirs } from '../api/fixtures.js';
import { client } from '../batches/helpers.js';
import { startServe } from './serve-process.js';

let dirs: TempDirs;
const NO_KEYS = { DECIDE_API_KEYS: undefined, DECIDE_API_KEYS_FILE: undefined };
const mode = (p: string) => statSync(p).mode & 0o777;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
});
afterAll(() => dirs?.cleanup());

describe('decide serve: folders and settings', () => {
  it('an empty DECIDE_DATA_DIR means ./data; a retention of 3600.0005 s still finishes a batch', async () => {
    const cwd = path.join(dirs.root, 'cwd');
    mkdirSync(cwd);
    chmodSync(cwd, 0o755);
    const server = await startServe({
      cwd,
      args: ['--models-dir', dirs.modelsDir],
      env: { ...NO_KEYS, DECIDE_DATA_DIR: '', DECIDE_BATCH_RETENTION_SECONDS: '3600.0005' },
    });
    try {
      expect(readdirSync(cwd)).toEqual(['data']);
      expect(mode(cwd)).toBe(0o755);
      const key = (await readFile(path.join(cwd, 'data', 'api-key'), 'utf8')).trim();
      const batches = client(server.url, key);
      const created = await batches.create({
        model: 'svc-alpha',
        file: `${JSON.stringify({ custom_id: 'a', state: 'hello' })}\n`,
        questions: JSON.stringify({ q: { type: 'noul', instructions: 'Is it?' } }),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      let status = created.body.status;
      for (let i = 0; i < 300 && status !== 'completed' && status !== 'failed'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = (await batches.get(created.body.id)).body.status;
      }
      expect(status).toBe('completed');
      expect(server.stderr()).not.toContain('runner error');
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 60_000);

  it('a data dir it finds that others can enter stays as it is, with a warning at warn level', async () => {
    const dataDir = path.join(dirs.root, 'shared-data');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o755);
    const server = await startServe({ args: ['--models-dir', dirs.modelsDir, '--data-dir', dataDir, '--log-level', 'warn'], env: NO_KEYS });
    try {
      expect(server.stdout()).toContain('created an API key');
      expect(mode(dataDir)).toBe(0o755);
      const warnings = server.stderr().split('\n').filter((line) => line.includes('is mode 0755'));
      expect(warnings).toHaveLength(1);
      expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40 });
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 60_000);

  it('at --log-level trace, no log line holds the key: multipart uploads (whose headers the form reader logs) included', async () => {
    const key = 'trace-key-abcdefghijklmnop';
    const dataDir = path.join(dirs.root, 'trace-data');
    const server = await startServe({
      args: ['--models-dir', dirs.modelsDir, '--data-dir', dataDir, '--log-level', 'trace'],
      env: { ...NO_KEYS, DECIDE_API_KEYS: key },
    });
    try {
      const file = () => new Blob([`${JSON.stringify({ custom_id: 'a', state: 'hello', questions: { q: { type: 'noul', instructions: 'Is it?' } } })}\n`]);
      const forms: Array<[string, Record<string, string>]> = [
        ['/v1/files', { purpose: 'batch' }],
        ['/v1/batches', { model: 'svc-alpha' }],
        ['/v1/batches/validate', { model: 'svc-alpha' }],
      ];
      for (const [route, fields] of forms) {
        const form = new FormData();
        for (const [name, value] of Object.entries(fields)) form.append(name, value);
        form.append('file', file(), 'in.jsonl');
        const res = await fetch(`${server.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
        expect(res.status, `${route}: ${await res.text()}`).toBeLessThan(300);
      }
      const log = server.stdout() + server.stderr();
      // The form reader's trace line is there, with its headers redacted.
      const busboy = log.split('\n').filter((line) => line.includes('busboyOptions'));
      expect(busboy).toHaveLength(forms.length);
      for (const line of busboy) expect(JSON.parse(line).busboyOptions.headers).toBe('[redacted]');
      expect(log).not.toContain(key);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  }, 60_000);
});
