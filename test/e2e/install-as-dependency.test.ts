/**
 * The package as another Node service meets it: `npm pack` this repository, `npm install` the
 * tarball into a brand-new project (no .npmrc of ours, no npm_config_* inherited from this run,
 * packages from the registry or the npm cache only), then import it there and serve a decision
 * in-process on the embedded default model, which is generated on first open.
 *
 * --prefer-offline reuses the npm cache that installing this repository filled. better-sqlite3 (a
 * dependency) downloads its prebuilt binary from GitHub, which this machine cannot reach, and then
 * compiles SQLite from source for minutes; the binary this repository's install already built is
 * offered to it as a local prebuild instead (prebuild-install's documented
 * npm_config_<package>_local_prebuilds), which is what the download would have given it. To match
 * that binary the new project asks for the better-sqlite3 version this repository is locked to
 * (a version our range allows), as a service that already uses it would.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, describe, expect, it } from 'vitest';

import { decideBin } from '../helpers/bin.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'decide-consumer-'));

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

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('installed as a dependency of a new project', () => {
  it('npm install <tarball> succeeds and the project serves a decision in-process', async () => {
    // dist/ must match src/ (compiled here when stale); the addon built here ships as this platform's prebuilt.
    await decideBin();
    execFileSync(process.execPath, [path.join(root, 'scripts', 'prebuild.mjs')], { cwd: root });
    const packDir = path.join(tmp, 'pack');
    mkdirSync(packDir);
    execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', packDir], {
      cwd: root,
      env: cleanEnv(),
      stdio: 'ignore',
    });
    const tarball = path.join(packDir, readdirSync(packDir).find((f) => f.endsWith('.tgz'))!);

    const project = path.join(tmp, 'service');
    mkdirSync(project);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'some-service', version: '1.0.0', type: 'module' }));
    const install = spawnSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, `better-sqlite3@${betterSqliteVersion}`], {
      cwd: project,
      env: { ...cleanEnv(), npm_config_better_sqlite3_local_prebuilds: betterSqlitePrebuilds() },
      encoding: 'utf8',
    });
    const installLog = `${install.stdout}\n${install.stderr}`;
    expect(install.status, installLog).toBe(0);
    expect(installLog).not.toMatch(/EBADENGINE/);
    // No package with a non-registry download in its install script is pulled in.
    expect(existsSync(path.join(project, 'node_modules', 'onnxruntime-node'))).toBe(false);

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
    const run = spawnSync(process.execPath, ['decide-once.mjs'], { cwd: project, env: cleanEnv(), encoding: 'utf8' });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    const res = JSON.parse(run.stdout.trim().split('\n').pop()!);
    expect(res.model).toBe('svc-alpha-2026-10');
    expect(existsSync(path.join(project, 'models', 'svc-alpha-2026-10', 'config.json'))).toBe(true);
    expect(Object.keys(res.answers.refund.probs)).toEqual(['no', 'yes']);
    expect(res.answers.refund.probs.no + res.answers.refund.probs.yes).toBeCloseTo(1, 5);
    expect(['payments', 'delivery']).toContain(res.answers.topic.top);
    expect(res.usage.input_tokens).toBeGreaterThan(0);
  }, 900_000);
});
