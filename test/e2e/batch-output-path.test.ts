/**
 * `decide batch --out` naming the input under another path (a symbolic link, a hard link): refused
 * before anything is opened for writing, even with --force, and the input keeps every byte. The
 * check runs before any model is loaded, so no models are needed here.
 */
import { link, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runDecide } from '../helpers/bin.js';

let scratch: string;
let input: string;
const INPUT = `${JSON.stringify({ custom_id: 'a', state: 'hello', questions: { q: { type: 'noul', instructions: 'Is it?' } } })}\n`;

function batch(args: string[]): ReturnType<typeof runDecide> {
  return runDecide(['batch', ...args]);
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'decide-batch-out-'));
  input = path.join(scratch, 'input.jsonl');
  await writeFile(input, INPUT);
  await symlink(input, path.join(scratch, 'soft.jsonl'));
  await link(input, path.join(scratch, 'hard.jsonl'));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('decide batch --out is never the input under another name', () => {
  it.each(['soft.jsonl', 'hard.jsonl', 'sub/../input.jsonl'])('--out %s --force: refused, the input untouched', async (name) => {
    const res = await batch([input, '--model', 'svc-alpha', '--models-dir', path.join(scratch, 'no-models'), '--out', path.join(scratch, name), '--force']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/(--out .* is the input file .* under another name|--out must not be the input file)/);
    expect(await readFile(input, 'utf8')).toBe(INPUT);
  });

  it('--questions linked as --out is refused too', async () => {
    const questions = path.join(scratch, 'questions.json');
    await writeFile(questions, JSON.stringify({ q: { type: 'noul', instructions: 'Is it?' } }));
    const out = path.join(scratch, 'questions-link.jsonl');
    await link(questions, out);
    const res = await batch([input, '--questions', questions, '--model', 'svc-alpha', '--models-dir', path.join(scratch, 'no-models'), '--out', out, '--force']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/--out .* is --questions .* under another name/);
    expect(JSON.parse(await readFile(questions, 'utf8'))).toEqual({ q: { type: 'noul', instructions: 'Is it?' } });
  });
});
