/**
 * `decide serve`'s folders and settings as an operator writes them, in real processes: an empty
 * DECIDE_DATA_DIR is unset (./data, never the current directory); a data dir it finds that others
 * can enter is left as it is, with a warning at warn level, even though the generated key is
 * written into it; a retention with a fraction of a millisecond still lets batches finish; at
 * `--log-level trace` no line holds the key; a stdout whose reader left after the key
 * (`decide serve | head -2`) does not stop the server; the host's locale does not change the
 * order models are listed in.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempModels, type TempDirs } from '../api/fixtures.js';
import { client } from '../batches/helpers.js';
import { decideBin } from '../helpers/bin.js';
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

  it('under a Turkish locale (LANG, LC_ALL), models are listed in code-point order, as under any other', async () => {
    const ids = ['hx-2026-10', 'ix-2026-10', 'Ix-2026-10', 'svc-alpha-2026-10', 'svc_alpha-2026-10', 'Svc-alpha-2026-11'];
    const models = await tempModels(ids);
    const server = await startServe({
      args: ['--models-dir', models.modelsDir, '--data-dir', models.dataDir, '--threads', '1'],
      env: { ...NO_KEYS, LANG: 'tr_TR.UTF-8', LC_ALL: 'tr_TR.UTF-8' },
    });
    try {
      const auth = { authorization: `Bearer ${(await readFile(path.join(models.dataDir, 'api-key'), 'utf8')).trim()}` };
      const listed = (await (await fetch(`${server.url}/v1/models`, { headers: auth })).json()) as { data: Array<{ id: string }> };
      const codePoints = (list: string[]) => [...list].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const dated = listed.data.map((m) => m.id).filter((id) => ids.includes(id));
      expect(dated).toEqual(codePoints(ids));
      expect(dated.slice(0, 3)).toEqual(['Ix-2026-10', 'Svc-alpha-2026-11', 'hx-2026-10']);
      // The list a request for a model not installed is answered with: aliases, then ids.
      const missing = await fetch(`${server.url}/v1/decide`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'nope', state: 'x', questions: { q: { type: 'noul', instructions: 'Is it?' } } }),
      });
      expect(missing.status).toBe(404);
      const aliases = ['hx', 'ix', 'Ix', 'svc-alpha', 'svc_alpha', 'Svc-alpha'];
      expect(JSON.stringify(await missing.json())).toContain(`installed: ${[...codePoints(aliases), ...codePoints(ids)].join(', ')}`);
    } finally {
      expect(await server.stop()).toBe(0);
      models.cleanup();
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

  it('stdout closed by its reader after the key (`| head -2`): the server keeps serving, no EPIPE, exit 0 on SIGTERM', async () => {
    const dataDir = path.join(dirs.root, 'head-data');
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...process.env, ...NO_KEYS })) if (v !== undefined) env[k] = v;
    const child = spawn(process.execPath, [await decideBin(), 'serve', '--port', '0', '--models-dir', dirs.modelsDir, '--data-dir', dataDir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    try {
      // The reader takes the key lines and goes, before the model is loaded and the listening line written.
      const firstLines = await new Promise<string>((resolve) => child.stdout!.setEncoding('utf8').once('data', resolve));
      expect(firstLines).toContain('created an API key');
      child.stdout!.destroy();
      // The listening line is lost with the pipe; the log on stderr has the address.
      let url: string | undefined;
      for (let i = 0; i < 600 && url === undefined && child.exitCode === null; i++) {
        url = /"msg":"Server listening at (http:\/\/[^"]+)"/.exec(stderr)?.[1];
        if (url === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(url, stderr).toBeDefined();
      // A moment for the listening line's write to fail, then the server still answers.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect(child.exitCode).toBe(null);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(stderr).not.toContain('EPIPE');
  }, 60_000);
});
