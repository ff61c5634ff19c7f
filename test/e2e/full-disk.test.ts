/**
 * A data dir on a disk that fills up, for real: a small tmpfs mounted for the test (it needs the
 * privilege to mount; without it the test is skipped, and test/batches/service.test.ts still covers
 * a store that refuses writes). The server keeps answering decisions; batch and file uploads answer
 * 503 with Retry-After in their route's shape, store nothing, and work again once space is freed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, rmSync, rmdirSync, writeSync, closeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AUTH, TEST_KEY, decideBody, tempModels, type TempDirs } from '../api/fixtures.js';
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
    const filler = path.join(mountPoint, 'filler');
    fillDisk(filler);
    const ours = await fetch(`${server.url}/v1/batches`, { method: 'POST', body: batchForm(), headers: AUTH });
    expect(ours.status).toBe(503);
    expect(ours.headers.get('retry-after')).toBe('30');
    expect(await ours.json()).toMatchObject({ code: 'server_error', message: expect.stringMatching(/^the batch store cannot write to its disk \(ENOSPC: full, read-only or failing\); nothing was stored/) });
    const openai = await fetch(`${server.url}/v1/files`, { method: 'POST', body: fileForm(), headers: AUTH });
    expect(openai.status).toBe(503);
    expect(openai.headers.get('retry-after')).toBe('30');
    expect(await openai.json()).toMatchObject({ error: { type: 'server_error', message: expect.stringMatching(/cannot write to its disk \(ENOSPC/) } });

    // Nothing was accepted, so nothing is listed; live decisions need no disk.
    expect(await (await fetch(`${server.url}/v1/batches`, { headers: AUTH })).json()).toMatchObject({ data: [] });
    expect((await postDecide(server.url, TEST_KEY, decideBody('a parcel that came late'))).status).toBe(200);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metricValue(metrics, 'decide_batch_store_unavailable_total')).toBe(2);

    rmSync(filler);
    const created = await fetch(`${server.url}/v1/batches`, { method: 'POST', body: batchForm(), headers: AUTH });
    expect(created.status).toBe(201);
    const file = await fetch(`${server.url}/v1/files`, { method: 'POST', body: fileForm(), headers: AUTH });
    expect(file.status).toBe(200);
  }, 120_000);
});
