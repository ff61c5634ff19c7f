/**
 * The console's HTTP surface without a browser (a real listening server, the tiny model): the
 * static files (CSP, content types, cache headers, the page for unknown console paths, no 500
 * when the console is not built) and the API additions the console reads: POST
 * /v1/batches/validate (the bad lines of a file by number, nothing created) and the `incomplete`
 * directories of GET /v1/models. The browser drives the rest in test/e2e/console.test.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import type { FastifyInstance } from 'fastify';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createServer } from '../../src/server/app.js';
import { CONSOLE_CSP, consoleRoutes } from '../../src/server/console.js';
import { registerErrorHandling } from '../../src/server/errors.js';
import { AUTH, TEST_KEY, tempModels, type TempDirs } from './fixtures.js';
import { consoleBuilt } from '../helpers/console-build.js';
import { brokenVersion } from '../helpers/broken-version.js';

let dirs: TempDirs;

let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  await consoleBuilt();
  dirs = await tempModels(['svc-alpha-2026-10']);
  // A version still being copied: config.json only.
  mkdirSync(path.join(dirs.modelsDir, 'svc-alpha-2026-12'));
  writeFileSync(path.join(dirs.modelsDir, 'svc-alpha-2026-12', 'config.json'), '{}');
  await brokenVersion(dirs.modelsDir);
  app = await createServer({ modelsDir: dirs.modelsDir, apiKeys: [TEST_KEY], dataDir: dirs.dataDir, rateLimit: false, logger: false });
  url = await app.listen({ port: 0, host: '127.0.0.1' });
}, 120_000);

afterAll(async () => {
  await app?.close();
  dirs?.cleanup();
});

const get = (p: string, headers: Record<string, string> = {}) => fetch(`${url}${p}`, { headers });

/** The headers docs/console.md promises on every console answer, errors included. */
function expectSecurityHeaders(header: (name: string) => unknown, what: string): void {
  expect(header('content-security-policy'), what).toBe(CONSOLE_CSP);
  expect(header('x-content-type-options'), what).toBe('nosniff');
  expect(header('referrer-policy'), what).toBe('no-referrer');
  expect(header('x-frame-options'), what).toBe('DENY');
}

describe('GET /console', () => {
  it('serves the page without a key, with a strict CSP, as HTML that is never cached', async () => {
    const res = await get('/console');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('set-cookie')).toBeNull();
    const html = await res.text();
    // No inline script: every <script> loads a file from this origin.
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBe(1);
    for (const [, attrs, body] of scripts) {
      expect(attrs).toMatch(/src="\/console\/assets\/console-[A-Z0-9]+\.js"/);
      expect(body!.trim()).toBe('');
    }
    expect(html).not.toMatch(/\sstyle="|\son[a-z]+="/);
  });

  it('serves the hashed assets with their content types and a year of immutable caching', async () => {
    const html = await (await get('/console')).text();
    const js = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const css = /href="(\/console\/assets\/[^"]+\.css)"/.exec(html)![1]!;
    for (const [asset, type] of [
      [js, 'text/javascript; charset=utf-8'],
      [css, 'text/css; charset=utf-8'],
    ] as const) {
      const res = await get(asset);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(type);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
  });

  it('answers any other console path with the page (the browser routes it), an unknown asset with 404', async () => {
    for (const p of ['/console/', '/console/batches', '/console/models/svc-alpha', '/console/no/such/page?x=1']) {
      const res = await get(p);
      expect(res.status, p).toBe(200);
      expect(await res.text(), p).toContain('<div id="app">');
    }
    const missing = await get('/console/assets/console-NOPE.js');
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { code: string }).code).toBe('not_found');
    const traversal = await get('/console/assets/..%2F..%2Fpackage.json');
    expect(traversal.status).toBe(404);
  });

  it('every answer carries the security headers: the page, an asset, an unknown asset\'s 404', async () => {
    const html = await (await get('/console')).text();
    const js = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    for (const [p, status] of [['/console', 200], ['/console/batches', 200], [js, 200], ['/console/assets/console-NOPE.js', 404], ['/console/assets/..%2Fx', 404]] as const) {
      const res = await get(p);
      expect(res.status, p).toBe(status);
      expectSecurityHeaders((name) => res.headers.get(name), p);
    }
  });

  it('the API beside it still needs the key', async () => {
    expect((await get('/v1/models')).status).toBe(401);
  });

  it('a server whose console is not built says so (503), never a 500', async () => {
    const bare = Fastify();
    registerErrorHandling(bare);
    await bare.register(consoleRoutes, { dir: path.join(dirs.root, 'no-console-here') });
    const res = await bare.inject({ method: 'GET', url: '/console/health' });
    expect(res.statusCode).toBe(503);
    expect(res.json().message).toMatch(/not built.*build:console/);
    expectSecurityHeaders((name) => res.headers[name], '503');
    await bare.close();
  });
});

describe('POST /v1/batches/validate', () => {
  const QUESTIONS = { refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' } };
  const validate = async (fields: Record<string, string>) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) {
      if (k === 'file') form.append('file', new Blob([v]), 'records.jsonl');
      else form.append(k, v);
    }
    const res = await fetch(`${url}/v1/batches/validate`, { method: 'POST', body: form, headers: AUTH });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('lists every bad record by line number, counts the good ones and creates nothing', async () => {
    const lines = [
      JSON.stringify({ custom_id: 'a', state: 'my parcel is late', questions: QUESTIONS }),
      '',
      '{"custom_id": "b", "state": ',
      JSON.stringify({ custom_id: 'a', state: 'again', questions: QUESTIONS }),
      JSON.stringify({ custom_id: 'c', state: 'x', questions: { q: { type: 'choice', instructions: 'one option', criteria: { only: 'x' } } } }),
      JSON.stringify({ custom_id: 'd', state: 'uses the form questions' }),
      JSON.stringify({ state: 'no id', questions: QUESTIONS }),
    ];
    const { status, body } = await validate({ model: 'svc-alpha', questions: JSON.stringify(QUESTIONS), file: `${lines.join('\n')}\n` });
    expect(status).toBe(200);
    expect(body).toMatchObject({ object: 'batch_validation', model: 'svc-alpha-2026-10', records: 6, valid: 2, invalid: 4, errors_truncated: false });
    expect(body.errors.map((e: { line: number }) => e.line)).toEqual([3, 4, 5, 7]);
    expect(body.errors[1]).toMatchObject({ custom_id: 'a', code: 'invalid_question' });
    expect(body.errors[1].message).toMatch(/duplicate of line 1/);
    expect(body.errors[2].message).toMatch(/2 to 255|at least 2/);
    expect(body.errors[3].custom_id).toBeNull();

    const list = await fetch(`${url}/v1/batches`, { headers: AUTH });
    expect(((await list.json()) as { data: unknown[] }).data).toEqual([]);
  });

  it('finds a question the model cannot fit even with an empty state, with the message /v1/decide gives it', async () => {
    // Three options of 1,900 emoji: far past the model's context whatever the state.
    const tooBig = { q: { type: 'choice', instructions: 'p', criteria: Object.fromEntries([0, 1, 2].map((i) => [`o${i}`, `${i}${'\u{1F600}'.repeat(1900)}`])) } };
    const lines = [
      JSON.stringify({ custom_id: 'fits', state: 's' }),
      ...Array.from({ length: 150 }, (_, i) => JSON.stringify({ custom_id: `big${i}`, state: 's', questions: tooBig })),
      JSON.stringify({ custom_id: 'fits too', state: 's' }),
    ];
    const { status, body } = await validate({ model: 'svc-alpha', questions: JSON.stringify(QUESTIONS), file: `${lines.join('\n')}\n` });
    expect(status).toBe(200);
    expect(body).toMatchObject({ records: 152, valid: 2, invalid: 150, errors_truncated: true });
    expect(body.errors).toHaveLength(100);
    const live = await fetch(`${url}/v1/decide`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'svc-alpha', state: 's', questions: tooBig }) });
    expect(live.status).toBe(400);
    const liveError = (await live.json()) as { code: string; message: string };
    expect(liveError.message).toMatch(/even with an empty state/);
    expect(body.errors[0]).toEqual({ line: 2, custom_id: 'big0', code: 'invalid_question', message: liveError.message });
  });

  it('refuses the envelope as POST /v1/batches does: unknown model 404, no file 400, empty file 400', async () => {
    expect((await validate({ model: 'nope', file: '{}\n' })).status).toBe(404);
    const noFile = await validate({ model: 'svc-alpha' });
    expect(noFile.status).toBe(400);
    expect(noFile.body.message).toMatch(/file: required/);
    expect((await validate({ model: 'svc-alpha', file: '\n\n' })).body.message).toMatch(/empty/);
  });

  it('needs the key', async () => {
    const res = await fetch(`${url}/v1/batches/validate`, { method: 'POST', body: new FormData() });
    expect(res.status).toBe(401);
  });
});

describe('GET /v1/models: incomplete directories', () => {
  it('are listed with the reason, apart from the models; a broken version only as broken', async () => {
    // Asked for once: its load fails and marks it broken (it may already be known broken from its files).
    const asked = await fetch(`${url}/v1/decide`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'other-2026-10', state: 'x', questions: { q: { type: 'noul', instructions: 'ok?' } } }),
    });
    expect(asked.status).toBe(500);
    const res = await get('/v1/models', AUTH);
    const body = (await res.json()) as { data: Array<{ id: string; status: string; error?: string }>; incomplete: Array<{ id: string; reason: string }> };
    expect(body.data.map((m) => m.id)).toEqual(['other-2026-10', 'svc-alpha-2026-10']);
    expect(body.data[0]!.status).toBe('broken');
    expect(body.incomplete.map((d) => d.id)).toEqual(['svc-alpha-2026-12']);
    expect(body.incomplete[0]!.reason.length).toBeGreaterThan(5);
    expect(((await (await get('/v1/models/other-2026-10', AUTH)).json()) as { error?: string }).error).toBe(body.data[0]!.error);
  });

  it('name files relative to the models directory, never by the server\'s absolute path', async () => {
    const body = (await (await get('/v1/models', AUTH)).json()) as { data: Array<{ id: string; error?: string }>; incomplete: Array<{ id: string; reason: string }> };
    const error = body.data.find((m) => m.id === 'other-2026-10')!.error!;
    const reason = body.incomplete[0]!.reason;
    expect(error).toMatch(/^other-2026-10\/onnx\/\S+\.onnx: /);
    expect(reason).toMatch(/^svc-alpha-2026-12\/config\.json: /);
    for (const text of [error, reason, JSON.stringify(body)]) {
      expect(text).not.toContain(dirs.root);
      expect(text).not.toMatch(/(^|[\s"(])\/(tmp|home|work|var|srv|private)\//);
    }
  });
});
