/**
 * The engine's compute threads run at a lower scheduling priority than the JavaScript thread
 * (engine option computeNice, default 10; Linux only), so that request handling and the health
 * probes get a core first while the engine keeps every core busy. Read from the kernel: a real
 * `decide serve` process, after a decision, has threads (the libuv thread that ran the load and
 * the score call, ONNX Runtime's intra-op threads it created) whose nice value is the main
 * thread's plus the increment; with `--compute-nice 0` none differs from the main thread.
 */
import { readdirSync, readFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TEST_KEY, tempModels, type TempDirs } from '../api/fixtures.js';
import { postDecide, startServe, type ServeProcess } from './serve-process.js';

let dirs: TempDirs;
const running: ServeProcess[] = [];

beforeAll(async () => {
  dirs = await tempModels(['svc-alpha-2026-10']);
});

afterAll(async () => {
  for (const p of running) await p.stop();
  dirs?.cleanup();
});

/** Nice value of every thread of `pid` (field 19 of /proc/PID/task/TID/stat), by thread id. */
function threadNices(pid: number): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    nices.set(Number(tid), Number(fields[16]));
  }
  return nices;
}

async function serveAndDecide(args: string[]): Promise<{ main: number; others: number[] }> {
  const p = await startServe({
    args: ['--models-dir', dirs.modelsDir, '--data-dir', dirs.dataDir, '--threads', '2', ...args],
    env: { DECIDE_API_KEYS: TEST_KEY, PORT: undefined },
  });
  running.push(p);
  const res = await postDecide(p.url, TEST_KEY, { model: 'svc-alpha', state: 'a ticket', questions: { q: { type: 'noul', instructions: 'Is it urgent?' } } });
  expect(res.status).toBe(200);
  const pid = p.child.pid!;
  const nices = threadNices(pid);
  await p.stop();
  const main = nices.get(pid)!;
  nices.delete(pid);
  return { main, others: [...nices.values()] };
}

describe.runIf(process.platform === 'linux')('compute threads yield to the JavaScript thread', () => {
  it('by default the threads that compute run at nice +10 against the main thread; --compute-nice 0 leaves every thread equal', async () => {
    const lowered = await serveAndDecide([]);
    // The libuv thread of the load and score calls, and with --threads 2 one intra-op thread more.
    expect(lowered.others.filter((n) => n === Math.min(19, lowered.main + 10)).length).toBeGreaterThanOrEqual(2);
    expect(lowered.others.every((n) => n === lowered.main || n === Math.min(19, lowered.main + 10))).toBe(true);

    const equal = await serveAndDecide(['--compute-nice', '0']);
    expect(equal.others.every((n) => n === equal.main)).toBe(true);
  });
});
