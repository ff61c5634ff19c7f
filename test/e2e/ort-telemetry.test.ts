/**
 * ONNX Runtime's telemetry client (1.29 and newer on Linux and macOS) stays off in every process
 * that loads an engine (native/ort_runtime.cc sets ORT_DISABLE_TELEMETRY before the first ONNX
 * Runtime environment): a child process that loads one, with TMPDIR and HOME pointing at fresh
 * empty folders and a fresh working directory, leaves all three empty (no mat-debug-<pid>.log,
 * no .ses, no ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ event queue). An operator who sets
 * ORT_DISABLE_TELEMETRY=0 keeps ONNX Runtime's own default, and the same child then leaves its
 * files: what the first case would find if the switch were lost.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { decideBin, ROOT } from '../helpers/bin.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

/**
 * ONNX Runtime also keeps quiet where one of these says it runs in CI or in its own unit tests:
 * the child runs without them, so that what it shows is the engine's own switch.
 */
const ORT_QUIET_VARIABLES = [
  'ORT_DISABLE_TELEMETRY',
  'ORT_RUNNING_UNIT_TESTS',
  'CI',
  'TF_BUILD',
  'GITHUB_ACTIONS',
  'GITLAB_CI',
  'CIRCLECI',
  'TRAVIS',
  'JENKINS_URL',
  'CODEBUILD_BUILD_ID',
  'BUILDKITE',
  'TEAMCITY_VERSION',
  'APPVEYOR',
  'BITBUCKET_BUILD_NUMBER',
  'SYSTEM_TEAMFOUNDATIONCOLLECTIONURI',
];

const scratch = mkdtempSync(path.join(os.tmpdir(), 'ort-telemetry-'));
let modelDir: string;

beforeAll(async () => {
  await decideBin(); // dist/ current: the child loads the engine from there
  modelDir = await tinyModelDir();
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Every path under `dir`, relative to it. */
const contents = (dir: string) => readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();

/** Loads an engine and scores once in a child process; returns what its TMPDIR, HOME and cwd hold afterwards. */
async function loadInChild(name: string, extraEnv: Record<string, string> = {}) {
  const tmp = mkdtempSync(path.join(scratch, `${name}-tmp-`));
  const home = mkdtempSync(path.join(scratch, `${name}-home-`));
  const cwd = mkdtempSync(path.join(scratch, `${name}-cwd-`));
  const env: Record<string, string | undefined> = { ...process.env, TMPDIR: tmp, HOME: home, XDG_CACHE_HOME: undefined, ...extraEnv };
  for (const variable of ORT_QUIET_VARIABLES) if (!(variable in extraEnv)) delete env[variable];
  const engineModule = pathToFileURL(path.join(ROOT, 'dist', 'src', 'engine', 'engine.js')).href;
  const script = `
    const { Engine } = await import(${JSON.stringify(engineModule)});
    const engine = await Engine.load({ modelDir: ${JSON.stringify(modelDir)}, threads: 1 });
    await engine.score([{ prefix: new Int32Array([1, 2, 3]), suffixes: [{ tokens: new Int32Array([4]), labels: new Int32Array([5, 6]) }] }]);
    engine.close();`;
  await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd, env });
  return { tmp: contents(tmp), home: contents(home), cwd: contents(cwd) };
}

describe("ONNX Runtime's telemetry", () => {
  it('is off by default: an engine leaves nothing in TMPDIR, HOME or the working directory', async () => {
    expect(await loadInChild('default')).toEqual({ tmp: [], home: [], cwd: [] });
  });

  it("ORT_DISABLE_TELEMETRY=0, the operator's choice, is left as it is: ONNX Runtime's files appear", async () => {
    const left = await loadInChild('chosen', { ORT_DISABLE_TELEMETRY: '0' });
    expect(left.tmp).toEqual(expect.arrayContaining(['.ses', expect.stringMatching(/^mat-debug-\d+\.log$/)]));
    expect(left.home.some((p) => p.startsWith(path.join('.cache', 'Microsoft')))).toBe(true);
  });
});
