/**
 * One process owns a SQLite data dir, with real `decide serve` processes: a second server on the
 * same --data-dir refuses to start (it would resume and run the first one's jobs into the same
 * result files) and says which process holds it; a server killed with SIGKILL leaves a lock that
 * the next start takes over; a clean stop removes it, also when SIGTERM comes the moment the
 * server says it listens. A refused start leaves the owner's uploads in flight alone.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, expect, it } from 'vitest';

import { goodLines, startServer, tempWorkspace } from './helpers.js';

let dir: string;
let modelsDir: string;

beforeAll(async () => {
  ({ dir, modelsDir } = await tempWorkspace('data-dir-lock'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The pid a lock file names (a small SQLite database whose user_version, bytes 60-63, is the holder's pid). */
function lockPid(file: string): number {
  return readFileSync(file).readUInt32BE(60);
}

/** Files staged under the data dir's upload staging folder, at any depth (not the folders' owner locks). */
function staged(dataDir: string): string[] {
  const root = path.join(dataDir, 'batches', '.staging');
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name !== '.owner.lock')
    .map((e) => e.name);
}

it('a second server on the same data dir refuses to start; a killed owner is taken over; a clean stop releases', async () => {
  const dataDir = path.join(dir, 'data');
  const lock = path.join(dataDir, 'batches.lock');
  const first = await startServer({ dataDir, modelsDir });
  try {
    expect(lockPid(lock)).toBe(first.proc.pid);
    const second = startServer({ dataDir, modelsDir });
    await expect(second).rejects.toThrow(new RegExp(`exited with 1[^]*data dir ${dataDir.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is in use by process ${first.proc.pid}`));
    // The refused start took nothing from the owner.
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    expect(lockPid(lock)).toBe(first.proc.pid);
  } finally {
    await first.kill();
  }
  // SIGKILL left the lock behind; its process is gone, so the next server takes it over.
  expect(existsSync(lock)).toBe(true);
  const next = await startServer({ dataDir, modelsDir });
  expect(lockPid(lock)).toBe(next.proc.pid);
  // SIGTERM the moment it says it listens: its handler is in by then, so it drains and exits 0.
  expect(await next.stop()).toBe(0);
  expect(existsSync(lock)).toBe(false);
});

it("a second server refused on the data dir leaves the owner's upload in flight alone: it is answered 201", async () => {
  const dataDir = path.join(dir, 'data-uploading');
  const owner = await startServer({ dataDir, modelsDir });
  try {
    const key = readFileSync(path.join(dataDir, 'api-key'), 'utf8').trim();
    const boundary = 'b0undary';
    const lines = goodLines(40, 5, 'u');
    const encode = (text: string) => new TextEncoder().encode(text);
    let sendRest!: () => void;
    const rest = new Promise<void>((resolve) => (sendRest = resolve));
    // The file part in two halves: the second is sent only after the refused start.
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(
          encode(
            `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nsvc-alpha\r\n` +
              `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\n\r\n${lines.slice(0, 20).join('\n')}\n`,
          ),
        );
        await rest;
        controller.enqueue(encode(`${lines.slice(20).join('\n')}\r\n--${boundary}--\r\n`));
        controller.close();
      },
    });
    const upload = fetch(`${owner.url}/v1/batches`, {
      method: 'POST',
      body,
      duplex: 'half',
      headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    } as RequestInit);
    const until = Date.now() + 30_000;
    while (staged(dataDir).length === 0) {
      if (Date.now() > until) throw new Error('the upload was never staged');
      await new Promise((r) => setTimeout(r, 20));
    }
    await expect(startServer({ dataDir, modelsDir })).rejects.toThrow(/is in use by process/);
    expect(staged(dataDir)).toHaveLength(1);
    sendRest();
    const res = await upload;
    expect(res.status, await res.clone().text()).toBe(201);
    expect(((await res.json()) as { progress: { total: number } }).progress.total).toBe(40);
  } finally {
    await owner.kill();
  }
});
