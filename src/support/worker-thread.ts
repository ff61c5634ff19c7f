/**
 * Runs a worker script (a file that reads workerData and posts one message, found beside its
 * caller: the engine's graph rewrites, the models' default model and fused graph) in a worker
 * thread and resolves with that message; or starts one that stays and answers messages
 * (startWorker, behind thread-client.ts). Run from the TypeScript sources (tests, tsx), the worker
 * loads them through tsx, as the caller's process does; from dist/, the compiled file.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/** tsx's ESM API (its `import` build, beside the `require` one that require.resolve finds). */
function tsxEsmApi(): string {
  return createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs');
}

/**
 * The parent's Node options for a worker (a worker inherits them, and loaders such as tsx must reach
 * it), less --input-type: that option only applies to code given with --eval, --print or STDIN,
 * and a worker started from a file refuses to run under it (ERR_INPUT_TYPE_NOT_ALLOWED), which
 * would fail every worker of a program run as `node --input-type=module -e ...`.
 */
function workerExecArgv(): string[] {
  const out: string[] = [];
  for (let i = 0; i < process.execArgv.length; i++) {
    const a = process.execArgv[i]!;
    if (a === '--input-type') i++;
    else if (!a.startsWith('--input-type=')) out.push(a);
  }
  return out;
}

/**
 * Starts the worker script `name` (base name, no extension) that sits in the folder of the module
 * `besideUrl` (the caller's import.meta.url): a worker that stays, answering messages.
 */
export function startWorker(besideUrl: string, name: string, workerData: unknown): Worker {
  const here = fileURLToPath(besideUrl);
  const fromSource = here.endsWith('.ts');
  const script = path.join(path.dirname(here), `${name}${fromSource ? '.ts' : '.js'}`);
  return fromSource
    ? new Worker(
        `import(${JSON.stringify(pathToFileURL(tsxEsmApi()).href)})` +
          `.then((tsx) => { tsx.register(); return import(${JSON.stringify(pathToFileURL(script).href)}); });`,
        { eval: true, workerData, execArgv: workerExecArgv() },
      )
    : new Worker(script, { workerData, execArgv: workerExecArgv() });
}

/**
 * Runs the worker script `name` (base name, no extension) that sits in the folder of the module
 * `besideUrl` (the caller's import.meta.url): runWorker(import.meta.url, 'int8-rewrite-worker', ...).
 */
export function runWorker<T>(besideUrl: string, name: string, workerData: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const worker = startWorker(besideUrl, name, workerData);
    let answered = false;
    worker.once('message', (message: T) => {
      answered = true;
      resolve(message);
    });
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (!answered) reject(new Error(`the worker thread ${name} stopped (exit code ${code}) without an answer`));
    });
  });
}
