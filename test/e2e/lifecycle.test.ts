/**
 * `decide serve` across its life: the generated API key (created and printed once, then reused
 * silently), the per-key rate limit from the environment, and graceful shutdown on SIGTERM with
 * requests in flight (SIGHUP and SIGUSR2 the same way). Each step is a real process on the tiny
 * model, sharing one data directory: the first stops on SIGINT; the restarted one answers, then is
 * the one shut down with SIGTERM.
 */
import http from 'node:http';
import net from 'node:net';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { decideBody, expectErrorShape, expectValidAnswers, longState, MIXED_QUESTIONS, tempModels, type TempDirs } from '../api/fixtures.js';
import { postDecide, startServe, type ServeProcess } from './serve-process.js';

let dirs: TempDirs;
let generatedKey = '';
const running: ServeProcess[] = [];
const NO_KEYS = { DECIDE_API_KEYS: undefined, DECIDE_API_KEYS_FILE: undefined, PORT: undefined };
/** The restarted server, left running for the SIGTERM case (each process costs seconds of CPU to start). */
let restarted: ServeProcess | undefined;

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
});

afterAll(async () => {
  for (const p of running) await p.stop('SIGKILL');
  dirs?.cleanup();
});

async function serve(env: Record<string, string | undefined>): Promise<ServeProcess> {
  const p = await startServe({ args: ['--models-dir', dirs.modelsDir, '--data-dir', dirs.dataDir, '--threads', '1'], env: { ...NO_KEYS, ...env } });
  running.push(p);
  return p;
}

/** Sends the headers and half the body of a decide request; finish() sends the rest. */
function partialRequest(url: string, key: string, body: string) {
  const { hostname, port } = new URL(url);
  const bytes = Buffer.from(body);
  const half = Math.floor(bytes.length / 2);
  let resolveResponse!: (r: { status: number; body: any }) => void;
  let rejectResponse!: (err: Error) => void;
  const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
    resolveResponse = resolve;
    rejectResponse = reject;
  });
  const req = http.request(
    {
      hostname,
      port: Number(port),
      method: 'POST',
      path: '/v1/decide',
      agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': bytes.length },
    },
    (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolveResponse({ status: res.statusCode!, body: JSON.parse(text) }));
    },
  );
  req.on('error', rejectResponse);
  const headersSent = new Promise<void>((resolve) => req.write(bytes.subarray(0, half), () => resolve()));
  return { headersSent, response, finish: () => req.end(bytes.subarray(half)) };
}

/** Resolves once the server has logged `n` incoming /v1/decide requests (it logs as it reads their headers). */
function requestsReceived(p: ServeProcess, n: number, timeoutMs = 60_000): Promise<void> {
  const received = () => p.stderr().split('\n').filter((l) => l.includes('"msg":"incoming request"') && l.includes('"url":"/v1/decide"')).length;
  return new Promise((resolve, reject) => {
    const check = () => {
      if (received() < n) return;
      clearTimeout(timer);
      p.child.stderr!.off('data', check);
      resolve();
    };
    const timer = setTimeout(() => {
      p.child.stderr!.off('data', check);
      reject(new Error(`the server saw only ${received()} of ${n} requests`));
    }, timeoutMs);
    p.child.stderr!.on('data', check);
    check();
  });
}

/** Resolves once a new TCP connection to `url` is refused. */
async function waitUntilRefused(url: string, timeoutMs = 5000): Promise<void> {
  const { port } = new URL(url);
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    const refused = await new Promise<boolean>((resolve) => {
      const s = net.connect(Number(port), '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(false)));
      s.once('error', () => resolve(true));
    });
    if (refused) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the server still accepts connections');
}

describe('decide serve lifecycle', () => {
  it('with no key configured: creates <data-dir>/api-key (0600), prints it once; the rate limit comes from the environment', async () => {
    // One token per 100 s: the fourth request is refused however slowly this machine runs the first three.
    const p = await serve({ DECIDE_RATE_LIMIT_RPS: '0.01', DECIDE_RATE_LIMIT_BURST: '3' });
    const file = path.join(dirs.dataDir, 'api-key');
    const out = p.stdout();
    const m = /^(dk_[A-Za-z0-9_-]{43})$/m.exec(out);
    expect(m, out).not.toBeNull();
    generatedKey = m![1]!;
    expect(out).toContain(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').trim()).toBe(generatedKey);
    expect(p.stderr()).not.toContain(generatedKey);

    const statuses: number[] = [];
    let limited: Awaited<ReturnType<typeof postDecide>> | undefined;
    for (let i = 0; i < 4; i++) {
      const r = await postDecide(p.url, generatedKey, decideBody(`rate ${i}`));
      statuses.push(r.status);
      if (r.status === 429) limited = r;
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expectErrorShape(limited!.body, 'rate_limited', limited!.headers.get('x-request-id')!);
    const retryAfter = limited!.headers.get('retry-after')!;
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
    expect(Number(retryAfter)).toBeLessThanOrEqual(100);
    // Health and metrics are not rate limited.
    for (let i = 0; i < 5; i++) expect((await fetch(`${p.url}/healthz`)).status).toBe(200);

    expect(await p.stop('SIGINT')).toBe(0);
  });

  it('a restart reuses the key and says where it is without printing it', async () => {
    expect(generatedKey).not.toBe('');
    const p = await serve({});
    expect(p.stdout()).toContain(`using the API key in ${path.join(dirs.dataDir, 'api-key')}`);
    expect(p.stdout()).not.toContain(generatedKey);
    const res = await fetch(`${p.url}/v1/models`, { headers: { authorization: `Bearer ${generatedKey}` } });
    expect(res.status).toBe(200);
    restarted = p;
  });

  it('SIGTERM: stops accepting, finishes the requests in flight with 200, exits 0', async () => {
    expect(generatedKey).not.toBe('');
    const p = restarted ?? (await serve({}));
    // Requests whose body is still arriving when the signal comes...
    const partial = Array.from({ length: 4 }, (_, i) => partialRequest(p.url, generatedKey, JSON.stringify(decideBody(`in flight ${i}: ${longState(300)}`))));
    await Promise.all(partial.map((r) => r.headersSent));
    // ...and complete requests that keep the engine busy (2,500 tokens each: still being scored when the signal comes).
    const busy = Array.from({ length: 4 }, (_, i) => postDecide(p.url, generatedKey, decideBody(`busy ${i}: ${longState(2500)}`)));
    // A request is in flight once the server has read its headers (it logs "incoming request");
    // one whose bytes it has not read yet could be dropped with its connection, as on any server.
    await requestsReceived(p, partial.length + busy.length);

    p.child.kill('SIGTERM');
    await waitUntilRefused(p.url);
    expect(p.child.exitCode).toBeNull();

    for (const r of partial) r.finish();
    const results = await Promise.all([...partial.map((r) => r.response), ...busy]);
    for (const r of results) {
      expect(r.status).toBe(200);
      expectValidAnswers(r.body.answers, MIXED_QUESTIONS);
    }
    expect(await p.exited).toBe(0);
    expect(p.stderr()).toContain('shutting down');
  });

  it('SIGTERM: connections that carry no request (nothing sent yet, headers half sent, kept alive between requests) do not hold the stop', async () => {
    expect(generatedKey).not.toBe('');
    const p = await serve({});
    const { port } = new URL(p.url);
    const open = (first?: string) =>
      new Promise<net.Socket>((resolve) => {
        const s = net.connect(Number(port), '127.0.0.1', () => {
          if (first) s.write(first);
          resolve(s);
        });
        s.on('error', () => undefined);
      });
    // A browser's spare socket, a request whose headers stop halfway, a kept-alive connection after its answer.
    const silent = await open();
    const halfHeaders = await open(`GET /healthz HTTP/1.1\r\nHost: localhost\r\n`);
    const keptAlive = await open(`GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    await new Promise<void>((resolve) => keptAlive.once('data', () => resolve()));
    // The one with a request in flight is still answered.
    const busy = postDecide(p.url, generatedKey, decideBody(`busy: ${longState(2500)}`));
    await requestsReceived(p, 1);
    const closedBy = (s: net.Socket) => new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));

    p.child.kill('SIGTERM');
    const r = await busy;
    expect(r.status).toBe(200);
    // Well inside the 60 s a silent connection would otherwise hold the stop (the headers timeout).
    await Promise.race([p.exited, new Promise((_, reject) => setTimeout(() => reject(new Error('still running 20 s after SIGTERM')), 20_000))]);
    expect(await p.exited).toBe(0);
    await Promise.all([closedBy(silent), closedBy(halfHeaders), closedBy(keptAlive)]);
  });

  // A closed terminal or ssh session sends SIGHUP, an operator's "reload" often too; SIGUSR2 is
  // another stray one. Node's own action for both ends the process at once (the request cut, the
  // lock left): they take SIGTERM's path.
  it.each(['SIGHUP', 'SIGUSR2'] as const)('%s: the same drain as SIGTERM: the request in flight answered 200, the lock removed, exit 0', async (signal) => {
    expect(generatedKey).not.toBe('');
    const p = await serve({});
    const lock = path.join(dirs.dataDir, 'batches.lock');
    expect(existsSync(lock)).toBe(true);
    const busy = postDecide(p.url, generatedKey, decideBody(`busy: ${longState(2500)}`));
    await requestsReceived(p, 1);

    p.child.kill(signal);
    await waitUntilRefused(p.url);
    const r = await busy;
    expect(r.status).toBe(200);
    expectValidAnswers(r.body.answers, MIXED_QUESTIONS);
    expect(await p.exited).toBe(0);
    expect(p.child.signalCode).toBeNull();
    expect(p.stderr()).toMatch(new RegExp(`"signal":"${signal}".*shutting down`));
    expect(p.stderr()).toContain('"msg":"stopped"');
    expect(existsSync(lock)).toBe(false);
  });

  it('a second SIGTERM while draining exits 1 at once, not when the forward pass in flight ends', async () => {
    expect(generatedKey).not.toBe('');
    const p = await serve({});
    // One request that is one long engine call: 64 questions of 40 options about a long state.
    const criteria = Object.fromEntries(Array.from({ length: 40 }, (_, j) => [`o${j}`, `option number ${j}`]));
    const questions = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`q${i}`, { type: 'choice', instructions: `Which one, number ${i}?`, criteria }]));
    const started = Date.now();
    const long = postDecide(p.url, generatedKey, { model: 'svc-alpha', state: longState(2500), questions }).then(
      (r) => `answered ${r.status} after ${Date.now() - started} ms`,
      () => 'dropped',
    );
    await requestsReceived(p, 1);
    p.child.kill('SIGTERM');
    await waitUntilRefused(p.url);
    const second = Date.now();
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(1);
    const exitMs = Date.now() - second;
    // Still being scored when the process ended: its answer never came.
    expect(await long).toBe('dropped');
    expect(p.stderr()).toContain('SIGTERM again, exiting without draining');
    // process.exit() waited for the engine call to end (seconds on this request); the exit now does not.
    expect(exitMs).toBeLessThan(1500);
  });
});
