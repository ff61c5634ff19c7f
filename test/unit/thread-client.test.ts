/**
 * ThreadClient (src/support/thread-client.ts), the worker thread behind the request body and batch
 * line readers, with a real worker thread: answers come back to their own calls, a request the
 * worker fails rejects alone, a worker that dies fails the requests it held and the next request
 * starts another, a worker that cannot start fails the calls with the reason it gave, close() ends
 * it, start() runs it before any call, and a call whose signal aborts before it was sent is dropped.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { afterEach, expect, it } from 'vitest';

import { ThreadClient } from '../../src/support/thread-client.js';

type Request = { text: string; fail?: boolean; later?: boolean; exit?: number; busyMs?: number; handled?: boolean };
const clients: Array<ThreadClient<Request, number>> = [];
const client = () => {
  const c = new ThreadClient<Request, number>(import.meta.url, 'fixtures/length-worker');
  clients.push(c);
  return c;
};
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

it('answers each call with its own reply, and counts the calls in progress', async () => {
  const c = client();
  const calls = ['a', 'bb', 'ccc'].map((text) => c.call({ text }));
  expect(c.inProgress).toBe(3);
  expect(await Promise.all(calls)).toEqual([1, 2, 3]);
  expect(c.inProgress).toBe(0);
});

it('a request the worker throws on rejects alone, with its message', async () => {
  const c = client();
  const [bad, good] = await Promise.allSettled([c.call({ text: 'x', fail: true }), c.call({ text: 'yy' })]);
  expect(bad).toMatchObject({ status: 'rejected', reason: { message: 'fixtures/length-worker: cannot measure x' } });
  expect(good).toEqual({ status: 'fulfilled', value: 2 });
});

it('a handler that answers through a promise: its value, or its rejection with the error\'s code; errors can be the caller\'s own', async () => {
  const c = new ThreadClient<Request, number>(import.meta.url, 'fixtures/length-worker', {
    errors: { failed: (failure) => Object.assign(new Error(`own: ${failure.message}`), { code: failure.code }) },
  });
  clients.push(c);
  const [slow, bad, fast] = await Promise.allSettled([c.call({ text: 'slow', later: true }), c.call({ text: 'x', fail: true, later: true }), c.call({ text: 'ok' })]);
  expect(slow).toEqual({ status: 'fulfilled', value: 4 });
  expect(bad).toMatchObject({ status: 'rejected', reason: { message: 'own: cannot measure x', code: 'E_MEASURE' } });
  expect(fast).toEqual({ status: 'fulfilled', value: 2 });
  // The errors not given stay the default ones.
  c.close();
  await expect(c.call({ text: 'after' })).rejects.toThrow('the fixtures/length-worker thread is closed');
});

it('background calls go to the worker one at a time: a call that is not waits behind one of them, not all', async () => {
  const c = client();
  const order: string[] = [];
  const track = (name: string, p: Promise<number>) => p.then(() => order.push(name));
  const background = ['b1', 'b2', 'b3', 'b4'].map((text) => track(text, c.call({ text, busyMs: 60 }, { background: true })));
  const live = track('live', c.call({ text: 'live' }));
  expect(c.inProgress).toBe(5);
  await Promise.all([...background, live]);
  // The worker answers in the order it receives: b1 was in it; b2-b4 waited here.
  expect(order).toEqual(['b1', 'live', 'b2', 'b3', 'b4']);
});

it('a call whose signal aborts while it waits here is never sent; one the worker holds runs, its answer dropped', async () => {
  const c = client();
  const leaving = new AbortController();
  const given = Array.from({ length: 12 }, (_, i) => c.call({ text: `t${i}`, busyMs: 30 }, { signal: leaving.signal }));
  const background = c.call({ text: 'b', busyMs: 30 }, { background: true, signal: leaving.signal });
  const kept = c.call({ text: 'kept' });
  expect(c.inProgress).toBe(14);
  expect(c.backgroundInProgress).toBe(1);
  leaving.abort(new Error('the client left'));
  for (const call of [...given, background]) await expect(call).rejects.toThrow('the client left');
  expect(c.inProgress).toBe(1);
  expect(c.backgroundInProgress).toBe(0);
  expect(await kept).toBe(4);
  // The worker measured the four live calls it held when the signal aborted (and the background
  // one it held), then `kept`: the other eight never reached it.
  expect(await c.call({ text: '', handled: true })).toBe(6);
  // An already aborted signal: refused at once, nothing sent.
  await expect(c.call({ text: 'late' }, { signal: leaving.signal })).rejects.toThrow('the client left');
  expect(await c.call({ text: '', handled: true })).toBe(6);
});

it('background calls waiting are failed with the rest when the worker dies, and by close()', async () => {
  const c = client();
  const held = c.call({ text: 'x', busyMs: 50, exit: 4 }, { background: true });
  const waiting = c.call({ text: 'waiting' }, { background: true });
  await expect(held).rejects.toThrow('stopped (exit code 4)');
  await expect(waiting).rejects.toThrow('stopped (exit code 4)');
  // The next background call is sent to a new worker (nothing is left counted as in the old one).
  expect(await c.call({ text: 'again' }, { background: true })).toBe(5);
  const queued = [c.call({ text: 'a', busyMs: 50 }, { background: true }), c.call({ text: 'b' }, { background: true })];
  c.close();
  for (const q of queued) await expect(q).rejects.toThrow('is closed');
});

it('a worker that dies fails what it held; the next call starts another', async () => {
  const c = client();
  const held = c.call({ text: 'held' });
  const dying = c.call({ text: 'x', exit: 3 });
  await expect(dying).rejects.toThrow('the fixtures/length-worker thread stopped (exit code 3)');
  // 'held' was answered before the exit (one message at a time, in order).
  expect(await held).toBe(4);
  expect(await c.call({ text: 'again' })).toBe(5);
});

it('a worker that cannot start fails the calls with its reason, not with its exit code alone', async () => {
  const c = new ThreadClient<Request, number>(import.meta.url, 'fixtures/unstartable-worker');
  clients.push(c);
  const calls = [c.call({ text: 'a' }), c.call({ text: 'b' }, { background: true })];
  for (const call of calls) {
    await expect(call).rejects.toThrow('the fixtures/unstartable-worker thread stopped (exit code 1: the unstartable worker cannot start: its settings are missing)');
  }
  // A caller's own stopped() is given the reason too.
  const own = new ThreadClient<Request, number>(import.meta.url, 'fixtures/unstartable-worker', {
    errors: { stopped: (code, reason) => new Error(`own: ${code}, ${reason?.message}`) },
  });
  clients.push(own);
  await expect(own.call({ text: 'a' })).rejects.toThrow('own: 1, the unstartable worker cannot start: its settings are missing');
});

it('close() fails the calls waiting and refuses later ones', async () => {
  const c = client();
  const waiting = c.call({ text: 'late' });
  c.close();
  await expect(waiting).rejects.toThrow('is closed');
  await expect(c.call({ text: 'after' })).rejects.toThrow('is closed');
});

it('start() runs the thread before any call; started and idle, it keeps no process alive', async () => {
  const c = client();
  await c.start();
  expect(await c.call({ text: 'abcd' })).toBe(4);
  // A process that only starts a thread must end on its own (the thread's own listener once held it).
  const script =
    `import { ThreadClient } from ${JSON.stringify(pathToFileURL(path.resolve('src/support/thread-client.ts')).href)};\n` +
    `const c = new ThreadClient(${JSON.stringify(import.meta.url)}, 'fixtures/length-worker');\n` +
    `await c.start();\nconsole.log('started');\n`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  expect(r.stdout.trim(), r.stderr).toBe('started');
  expect(r.signal, 'still running after 30 s').toBeNull();
  expect(r.status).toBe(0);
});
