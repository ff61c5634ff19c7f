/**
 * Runs `node bin/decide.js serve` as a child process (the real CLI on dist/, compiled when stale by
 * decideBin()) and finds its URL from the `decide: listening on http://HOST:PORT` line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { decideBin, ROOT } from '../helpers/bin.js';

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  /** Sends `signal` (default SIGTERM) and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * `node`: the Node binary to run it with (default: the one running the tests).
 * `addressSpaceKiB`: run it under `ulimit -v` of that many KiB (through bash).
 */
export async function startServe(options: {
  args?: string[];
  env?: Record<string, string | undefined>;
  cwd?: string;
  timeoutMs?: number;
  node?: string;
  addressSpaceKiB?: number;
}): Promise<ServeProcess> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...process.env, ...options.env })) if (v !== undefined) env[k] = v;
  const command = [options.node ?? process.execPath, await decideBin(), 'serve', '--port', '0', ...(options.args ?? [])];
  const limited = options.addressSpaceKiB === undefined ? command : ['bash', '-c', `ulimit -v ${options.addressSpaceKiB} && exec "$0" "$@"`, ...command];
  const child = spawn(limited[0]!, limited.slice(1), {
    cwd: options.cwd ?? ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`decide serve did not start in time\nstdout:\n${out}\nstderr:\n${err}`)), options.timeoutMs ?? 60_000);
    const check = () => {
      const m = /^decide: listening on (http:\/\/\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`decide serve exited with ${code} before listening\nstdout:\n${out}\nstderr:\n${err}`));
    });
  });

  return {
    url,
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** POST /v1/decide with fetch; returns status, headers and parsed body. */
export async function postDecide(url: string, key: string, body: unknown): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(`${url}/v1/decide`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** The value of one unlabelled-or-labelled sample in Prometheus text, summed over matching lines. */
export function metricValue(text: string, name: string, labelFilter = ''): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const [series, value] = line.split(' ');
    if (!series || value === undefined) continue;
    const seriesName = series.split('{')[0];
    if (seriesName === name && series.includes(labelFilter)) sum += Number(value);
  }
  return sum;
}
