/**
 * `decide serve` while it creates and loads its default model: it listens first, so the probes
 * answer during the load (/healthz 200, /readyz 503 until the model is loaded) and API requests
 * wait for the load and are then answered. A load that fails still ends the process with exit 1
 * and the load's message; the requests that waited get a 5xx in their door's shape. Real
 * processes on an empty models folder: the embedded default model is built there first (seconds).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { decideBody, expectErrorShape, tempModels, TEST_KEY, type TempDirs } from '../api/fixtures.js';
import { postDecide, startServe, type ServeProcess } from './serve-process.js';

const dirs: TempDirs[] = [];
let server: ServeProcess | undefined;

afterEach(async () => {
  await server?.stop('SIGKILL');
  server = undefined;
});
afterAll(() => dirs.forEach((d) => d.cleanup()));

async function serveEmptyModelsDir(env: Record<string, string | undefined> = {}): Promise<ServeProcess> {
  const d = await tempModels([]);
  dirs.push(d);
  server = await startServe({
    args: ['--models-dir', d.modelsDir, '--data-dir', d.dataDir, '--threads', '1', '--log-level', 'warn'],
    env: { DECIDE_API_KEYS: TEST_KEY, PORT: undefined, ...env },
  });
  return server;
}

const AUTH = { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' };
const OPENAI_BODY = { model: 'svc-alpha', input: 'The parcel arrived broken.', questions: [{ type: 'predicate', name: 'broken', instructions: 'Is it broken?' }] };

async function get(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers: AUTH });
  return { status: res.status, body: await res.json().catch(() => undefined) };
}

async function postOpenAi(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/v1/decisions`, { method: 'POST', headers: AUTH, body: JSON.stringify(OPENAI_BODY) });
  return { status: res.status, body: await res.json() };
}

describe('decide serve: starting', () => {
  it('listens before the default model is made and loaded: /healthz 200 and /readyz 503 first, then 200; requests sent meanwhile are answered', async () => {
    const { url } = await serveEmptyModelsDir();
    const health = await get(`${url}/healthz`);
    const first = await get(`${url}/readyz`);
    expect(health).toEqual({ status: 200, body: { status: 'ok' } });
    expect(first.status).toBe(503);
    expect(first.body).toMatchObject({ code: 'server_error', message: 'no model is loaded' });
    expect((await fetch(`${url}/metrics`)).status).toBe(200);

    // Every door: they wait for the load (not refused, not 404 for a model not made yet).
    const ours = postDecide(url, TEST_KEY, decideBody('The parcel arrived broken.'));
    const openai = postOpenAi(url);
    const models = get(`${url}/v1/models`);
    // Still loading after they were sent: they arrived in the window.
    expect((await get(`${url}/readyz`)).status).toBe(503);

    const seen: number[] = [];
    for (let i = 0; i < 1200 && seen.at(-1) !== 200; i++) {
      expect((await get(`${url}/healthz`)).status).toBe(200);
      seen.push((await get(`${url}/readyz`)).status);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(seen.at(-1)).toBe(200);
    expect(new Set(seen)).toEqual(new Set(seen.length > 1 ? [503, 200] : [200]));
    expect((await get(`${url}/readyz`)).body).toEqual({ status: 'ready', models: ['svc-alpha-2026-10'] });

    const [a, b, m] = await Promise.all([ours, openai, models]);
    expect(a.status).toBe(200);
    expect(a.body.model).toBe('svc-alpha-2026-10');
    expect(b.status).toBe(200);
    expect(b.body.model).toBe('svc-alpha-2026-10');
    expect(m.status).toBe(200);
    expect(m.body.data.map((x: { id: string }) => x.id)).toEqual(['svc-alpha-2026-10']);
    expect(await server!.stop()).toBe(0);
  });

  it('a default model that cannot load: the requests that waited get a 5xx in their shape, then exit 1 with the message', async () => {
    // A library path that does not exist: the model is made (seconds), its load fails on any host.
    const { url, exited, stderr } = await serveEmptyModelsDir({ DECIDE_ORT_LIBRARY: '/nonexistent/libonnxruntime.so' });
    const ours = postDecide(url, TEST_KEY, decideBody('The parcel arrived broken.'));
    const openai = postOpenAi(url);
    expect((await get(`${url}/readyz`)).status).toBe(503);

    const a = await ours;
    expect(a.status).toBe(500);
    expectErrorShape(a.body, 'server_error', a.headers.get('x-request-id') ?? undefined);
    expect(a.body.message).toBe('ONNX Runtime could not be loaded');
    const b = await openai;
    expect(b.status).toBe(500);
    expect(b.body.error).toMatchObject({ type: 'server_error', message: 'ONNX Runtime could not be loaded' });

    expect(await exited).toBe(1);
    expect(stderr()).toContain('decide serve: ONNX Runtime could not be loaded: cannot load ONNX Runtime from /nonexistent/libonnxruntime.so');
  });
});
