/**
 * A data dir on a disk that fills up, for real: a small tmpfs mounted for the test (it needs the
 * privilege to mount; without it the test is skipped, and test/batches/service.test.ts still covers
 * a store that refuses writes). The server keeps answering decisions; batch and file uploads answer
 * 503 with Retry-After in their route's shape (the one /openapi.json declares for them), store
 * nothing, and work again once space is freed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, rmdirSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AUTH, TEST_KEY, decideBody, tempModels, type TempDirs } from '../api/fixtures.js';
import { decideBin } from '../helpers/bin.js';
import { responseSchemaErrors, type OpenApiDocument } from '../helpers/openapi-responses.js';
import { metricValue, postDecide, startServe, type ServeProcess } from './serve-process.js';

const mountPoint = mkdtempSync(path.join(os.tmpdir(), 'decide-full-disk-'));
const mounted = (() => {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'tmpfs', mountPoint], { stdio: 'ignore' });
    return true;
  } catch {
    rmdirSync(mountPoint);
    return false;
  }
})();

let dirs: TempDirs;
let server: ServeProcess;

beforeAll(async () => {
  if (!mounted) return;
  dirs = await tempModels();
  server = await startServe({
    args: ['--models-dir', dirs.modelsDir, '--data-dir', path.join(mountPoint, 'data'), '--threads', '1', '--log-level', 'warn'],
    env: { DECIDE_API_KEYS: TEST_KEY, PORT: undefined },
  });
}, 120_000);

afterAll(async () => {
  if (!mounted) return;
  if (server) expect(await server.stop()).toBe(0);
  execFileSync('umount', [mountPoint]);
  rmdirSync(mountPoint);
  dirs?.cleanup();
});

/** Writes into `file` until the disk refuses: ENOSPC. */
function fillDisk(file: string): void {
  const fd = openSync(file, 'w');
  const block = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
  } finally {
    closeSync(fd);
  }
}

const line = `${JSON.stringify({ custom_id: 'a', state: 'late parcel', questions: { refund: { type: 'noul', instructions: 'Refund?' } } })}\n`;
function batchForm(): FormData {
  const f = new FormData();
  f.append('model', 'svc-alpha');
  f.append('file', new Blob([line.repeat(200)]), 'records.jsonl');
  return f;
}
function fileForm(): FormData {
  const f = new FormData();
  f.append('purpose', 'batch');
  f.append('file', new Blob([line.repeat(200)]), 'records.jsonl');
  return f;
}

describe.skipIf(!mounted)('a data dir whose disk is full', () => {
  it('uploads answer 503 + Retry-After in each shape, decisions go on, and uploads work once space is freed', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`, { headers: AUTH })).json()) as OpenApiDocument;
    const filler = path.join(mountPoint, 'filler');
    fillDisk(filler);
    const ours = await fetch(`${server.url}/v1/batches`, { method: 'POST', body: batchForm(), headers: AUTH });
    expect(ours.status).toBe(503);
    expect(ours.headers.get('retry-after')).toBe('30');
    const oursBody = await ours.json();
    expect(oursBody).toMatchObject({ code: 'server_error', message: expect.stringMatching(/^the batch store cannot write to its disk \(ENOSPC: full, read-only or failing\); nothing was stored/) });
    const openai = await fetch(`${server.url}/v1/files`, { method: 'POST', body: fileForm(), headers: AUTH });
    expect(openai.status).toBe(503);
    expect(openai.headers.get('retry-after')).toBe('30');
    const openaiBody = await openai.json();
    expect(openaiBody).toMatchObject({ error: { type: 'server_error', message: expect.stringMatching(/cannot write to its disk \(ENOSPC/) } });
    // Checking a form stages its upload on the same disk.
    const checked = await fetch(`${server.url}/v1/batches/validate`, { method: 'POST', body: batchForm(), headers: AUTH });
    expect([checked.status, checked.headers.get('retry-after')]).toEqual([503, '30']);
    const checkedBody = await checked.json();
    // Each answer is the one /openapi.json declares for its route: a generated client reads it as such.
    for (const [method, route, body] of [['POST', '/v1/batches', oursBody], ['POST', '/v1/files', openaiBody], ['POST', '/v1/batches/validate', checkedBody]] as const) {
      expect(await responseSchemaErrors(doc, method, route, 503, body), `${method} ${route}`).toBeUndefined();
      expect(doc.paths[route]!.post!.responses['503']!.headers, route).toHaveProperty('retry-after');
    }
    // Each is logged as a failure on one whole line: request id, method, path, status and the cause.
    const failed = server.stderr().split('\n').filter((l) => l.includes('"request failed"')).map((l) => JSON.parse(l) as Record<string, any>);
    for (const [res, route] of [[ours, '/v1/batches'], [openai, '/v1/files'], [checked, '/v1/batches/validate']] as const) {
      const line = failed.find((l) => l.request_id === res.headers.get('x-request-id'));
      expect(line, route).toMatchObject({ level: 50, req: { method: 'POST', url: route }, status: 503, err: { message: expect.stringMatching(/ENOSPC/) } });
    }

    // Nothing was accepted, so nothing is listed; live decisions need no disk.
    expect(await (await fetch(`${server.url}/v1/batches`, { headers: AUTH })).json()).toMatchObject({ data: [] });
    expect((await postDecide(server.url, TEST_KEY, decideBody('a parcel that came late'))).status).toBe(200);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metricValue(metrics, 'decide_batch_store_unavailable_total')).toBe(3);

    rmSync(filler);
    const created = await fetch(`${server.url}/v1/batches`, { method: 'POST', body: batchForm(), headers: AUTH });
    expect(created.status).toBe(201);
    const file = await fetch(`${server.url}/v1/files`, { method: 'POST', body: fileForm(), headers: AUTH });
    expect(file.status).toBe(200);
  }, 120_000);
});

describe.skipIf(!mounted)('a first start on a full disk', () => {
  it('fails without leaving an empty API key file behind; the start after space is freed makes a key and serves', async () => {
    const filler = path.join(mountPoint, 'filler-2');
    const dataDir = path.join(mountPoint, 'fresh-data');
    fillDisk(filler);
    const env = { ...process.env, DECIDE_API_KEYS: undefined, DECIDE_API_KEYS_FILE: undefined };
    const refused = spawnSync(process.execPath, [await decideBin(), 'serve', '--port', '0', '--data-dir', dataDir, '--models-dir', dirs.modelsDir], { env, encoding: 'utf8', timeout: 60_000 });
    expect(refused.status, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(/ENOSPC/);
    expect(existsSync(path.join(dataDir, 'api-key'))).toBe(false);
    rmSync(filler);
    const started = await startServe({ args: ['--models-dir', dirs.modelsDir, '--data-dir', dataDir, '--log-level', 'warn'], env: { DECIDE_API_KEYS: undefined, DECIDE_API_KEYS_FILE: undefined, PORT: undefined } });
    try {
      expect(started.stdout()).toMatch(/created an API key/);
      expect(readFileSync(path.join(dataDir, 'api-key'), 'utf8').trim()).toMatch(/.{20,}/);
    } finally {
      expect(await started.stop()).toBe(0);
    }
  }, 120_000);
});
