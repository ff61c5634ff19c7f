/**
 * One process owns a SQLite data dir, with real `decide serve` processes: a second server on the
 * same --data-dir refuses to start (it would resume and run the first one's jobs into the same
 * result files) and says which process holds it; a server killed with SIGKILL leaves a lock that
 * the next start takes over; a clean stop removes it, also when SIGTERM comes the moment the
 * server says it listens.
 */
import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { startServer, tempWorkspace } from './helpers.js';

let dir: string;
let modelsDir: string;

beforeAll(async () => {
  ({ dir, modelsDir } = await tempWorkspace('data-dir-lock'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('a second server on the same data dir refuses to start; a killed owner is taken over; a clean stop releases', async () => {
  const dataDir = path.join(dir, 'data');
  const lock = path.join(dataDir, 'batches.lock');
  const first = await startServer({ dataDir, modelsDir });
  try {
    expect(readFileSync(lock, 'utf8').trim()).toBe(String(first.proc.pid));
    const second = startServer({ dataDir, modelsDir });
    await expect(second).rejects.toThrow(new RegExp(`exited with 1[^]*data dir ${dataDir.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is in use by process ${first.proc.pid}`));
    // The refused start took nothing from the owner.
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    expect(readFileSync(lock, 'utf8').trim()).toBe(String(first.proc.pid));
  } finally {
    await first.kill();
  }
  // SIGKILL left the lock behind; its process is gone, so the next server takes it over.
  expect(existsSync(lock)).toBe(true);
  const next = await startServer({ dataDir, modelsDir });
  expect(readFileSync(lock, 'utf8').trim()).toBe(String(next.proc.pid));
  // SIGTERM the moment it says it listens: its handler is in by then, so it drains and exits 0.
  expect(await next.stop()).toBe(0);
  expect(existsSync(lock)).toBe(false);
});
