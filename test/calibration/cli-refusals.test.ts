// `decide calibrate` refusals as a person and a script meet them, each in a real `decide` process:
// the message on stderr names what is wrong (every unusable label with its question's options,
// even when no label is usable), and with --json stdout holds {"error": {code, message, exit_code,
// ...details}} instead of staying empty. Nothing is written.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { MODEL_ID, tempWorkspace } from '../batches/helpers.js';
import { decideBin, runDecide } from '../helpers/bin.js';
import { unprivilegedRun } from '../helpers/unprivileged.js';
import { QUESTIONS } from './helpers.js';

let dir: string;
let modelsDir: string;

beforeAll(async () => {
  ({ dir, modelsDir } = await tempWorkspace('calibrate-refusals'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const row = (expected: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ state: 'the parcel never arrived', questions: QUESTIONS, expected, ...extra });

async function calibrate(lines: string[], args: string[] = []) {
  const file = path.join(await mkdtemp(path.join(dir, 'data-')), 'data.jsonl');
  await writeFile(file, `${lines.join('\n')}\n`);
  const before = (await readdir(modelsDir)).sort();
  // `args` replaces a base flag it names (a flag is taken once).
  const base = [['--model', MODEL_ID], ['--data', file], ['--models-dir', modelsDir], ['--as', 'svc-alpha-2027-05-01']].filter(([flag]) => !args.includes(flag!)).flat();
  const res = await runDecide(['calibrate', ...base, ...args]);
  // A refusal writes nothing.
  expect((await readdir(modelsDir)).sort()).toEqual(before);
  return { ...res, file };
}

const topicOptions = Object.keys(QUESTIONS.topic.criteria).join(', ');

describe('no usable expected label', () => {
  it('lists every unusable label with its options on stderr, and all of them under --json', async () => {
    const lines = Array.from({ length: 5 }, () => row({ topic: 'nope' }));
    const text = await calibrate(lines);
    expect(text.code, text.stderr).toBe(2);
    expect(text.stdout).toBe('');
    expect(text.stderr).toContain('no row gave a usable expected label; nothing was fitted (5 expected labels were left out):');
    for (let line = 1; line <= 5; line++) expect(text.stderr).toContain(`line ${line}, topic: "nope" is not an option (options: ${topicOptions})`);

    const json = await calibrate(lines, ['--json']);
    expect(json.code, json.stderr).toBe(2);
    const { error } = JSON.parse(json.stdout);
    expect(error).toMatchObject({ code: 'no_usable_labels', exit_code: 2, failed_rows: [] });
    expect(json.stderr.endsWith(`decide calibrate: ${error.message}\n`)).toBe(true);
    expect(error.unusable).toEqual(
      Array.from({ length: 5 }, (_, i) => ({ line: i + 1, question: 'topic', reason: `"nope" is not an option (options: ${topicOptions})` })),
    );
  }, 120_000);

  it('a score label that names no level (compared as exact decimals) is one of them, shown as written', async () => {
    const big = { s: { type: 'score', instructions: 'How big?', criteria: { '100000000000000000000': 'low', '100000000000000000001': 'high' } } };
    const line = (label: string) => `{"state": "x", "questions": ${JSON.stringify(big)}, "expected": {"s": ${label}}}`;
    const res = await calibrate([line('100000000000000000002'), line('"0x3"')], ['--json']);
    expect(res.code, res.stderr).toBe(2);
    expect(JSON.parse(res.stdout).error.unusable).toEqual([
      { line: 1, question: 's', reason: '100000000000000000002 is not an option (options: 100000000000000000000, 100000000000000000001)' },
      {
        line: 2,
        question: 's',
        reason: '"0x3" is not a score level as /v1/decide writes them ("0", "2.5", "-1": no spaces, "+", hex or exponent) (options: 100000000000000000000, 100000000000000000001)',
      },
    ]);
  }, 120_000);
});

describe('--json on every refusal: a JSON error object on stdout, the message on stderr', () => {
  const refusal = async (lines: string[], args: string[], code: string) => {
    const res = await calibrate(lines, ['--json', ...args]);
    expect(res.code, res.stderr).toBe(2);
    const { error } = JSON.parse(res.stdout);
    expect(error.code).toBe(code);
    expect(error.exit_code).toBe(2);
    expect(res.stderr).toContain(error.message.split('\n')[0]);
    return error;
  };

  it('bad lines: each with its line number', async () => {
    const error = await refusal([row({ topic: 'billing' }), '{oops', row({ topic: 'billing' }, { extra: 1 })], [], 'invalid_data');
    expect(error.bad_lines).toEqual([
      { line: 2, error: expect.stringMatching(/^not valid JSON/) },
      { line: 3, error: 'unknown field "extra" (a row is state, questions, expected; model, custom_id, label_mass are allowed)' },
    ]);
  }, 120_000);

  it('an unknown model, an existing id, a bad --seed, too few labels', async () => {
    await refusal([row({ topic: 'billing' })], ['--model', 'svc-omega'], 'unknown_model');
    await refusal([row({ topic: 'billing' })], ['--as', MODEL_ID], 'invalid_id');
    expect((await refusal([row({ topic: 'billing' })], ['--seed', 'x'], 'invalid_argument')).message).toMatch(/--seed must be an integer/);
    // Rows carrying label_mass (logged decide requests) are read and scored: refused only for their number.
    await refusal(Array.from({ length: 10 }, (_, i) => row({ topic: 'billing' }, { label_mass: i % 2 === 0 })), [], 'too_few_labels');
  }, 120_000);
});

describe('--json with an option the parser refuses', () => {
  it.each([
    [['--bogus', '1'], "Unknown option '--bogus'"],
    [['--seed'], "Option '--seed <value>' argument missing"],
    [['--models-dir', ''], '--models-dir must name a folder, got an empty value'],
  ])('%j: the invalid_argument object on stdout, exit 2', async (args, message) => {
    const res = await calibrate([row({ topic: 'billing' })], ['--json', ...args]);
    expect(res.code, res.stderr).toBe(2);
    expect(JSON.parse(res.stdout)).toEqual({ error: { code: 'invalid_argument', message: expect.stringContaining(message), exit_code: 2 } });
  }, 60_000);
});

describe('a models folder without the model', () => {
  it('a --models-dir that does not exist is refused naming it (exit 2), and is not created', async () => {
    const missing = path.join(dir, 'mistyped-models');
    const file = path.join(await mkdtemp(path.join(dir, 'data-')), 'data.jsonl');
    await writeFile(file, `${row({ topic: 'nope' })}\n`);
    const res = await runDecide(['calibrate', '--model', 'svc-alpha', '--data', file, '--models-dir', missing, '--threads', '1']);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toMatch(/^decide calibrate: model 'svc-alpha' is not installed; installed: \(none\) \(models dir .*mistyped-models\)\n$/);
    expect(existsSync(missing)).toBe(false);
  }, 120_000);
});

describe('a --report folder the system refuses', () => {
  it('under /proc: refused (exit 2) before anything is scored or installed, not a spin', async () => {
    const lines = Array.from({ length: 5 }, () => row({ topic: 'nope' }));
    const res = await calibrate(lines, ['--report', '/proc/decide-test-report']);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toBe("decide calibrate: --report /proc/decide-test-report: cannot be the report's folder: cannot create /proc/decide-test-report: ENOENT\n");
  }, 120_000);
});

describe('a models folder that takes no new folder', () => {
  it('is refused as models_unavailable (exit 1) before any row is scored, saying so', async (ctx) => {
    // As nobody where this is root: a 0555 folder is read-only for nobody.
    const bin = await decideBin();
    const user = unprivilegedRun(ctx, bin);
    const readOnly = path.join(dir, 'read-only-models');
    await mkdir(readOnly);
    await symlink(await readlink(path.join(modelsDir, MODEL_ID)), path.join(readOnly, MODEL_ID), 'dir');
    await chmod(readOnly, 0o555);
    const file = path.join(await mkdtemp(path.join(dir, 'data-')), 'data.jsonl');
    await writeFile(file, `${Array.from({ length: 30 }, () => row({ topic: 'billing' })).join('\n')}\n`);
    await chmod(path.dirname(file), 0o755);
    await chmod(dir, 0o755);
    const res = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const args = [bin, 'calibrate', '--model', MODEL_ID, '--data', file, '--models-dir', readOnly, '--as', 'svc-alpha-2027-06-01', '--threads', '1', '--json'];
      execFile(process.execPath, args, { cwd: dir, ...user }, (err, stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stdout, stderr }));
    });
    expect(res.code, res.stderr).toBe(1);
    const { error } = JSON.parse(res.stdout);
    expect(error).toMatchObject({ code: 'models_unavailable', exit_code: 1 });
    expect(error.message).toMatch(/^the models directory .*read-only-models cannot take the new version svc-alpha-2027-06-01: cannot create .*EACCES$/);
    // Refused before scoring: no progress line, nothing written.
    expect(res.stderr).not.toMatch(/scoring|rows/);
    expect(await readdir(readOnly)).toEqual([MODEL_ID]);
  }, 120_000);
});

