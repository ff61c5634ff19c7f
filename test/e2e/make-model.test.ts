/**
 * `decide make-model` as a user runs it: the packing graph by default (decision.json records
 * builder.features.segmentIds, and an engine asked to pack can), `--packing off` for the graph
 * without it, and a bad value refused before anything is written.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { decideBin } from '../helpers/bin.js';

const run = promisify(execFile);
let scratch: string;

async function decide(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [await decideBin(), ...args]);
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'decide-make-model-'));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('decide make-model --packing', () => {
  it.each([
    { args: [], packed: true },
    { args: ['--packing', 'off'], packed: false },
  ])('$args: packed graph $packed', async ({ args, packed }) => {
    const out = path.join(scratch, packed ? 'packed' : 'unpacked');
    const res = await decide(['make-model', '--preset', 'tiny', '--out', out, ...args]);
    expect(res.code).toBe(0);
    const decision = JSON.parse(await readFile(path.join(out, 'decision.json'), 'utf8'));
    expect(decision.builder.features).toEqual(packed ? { segmentIds: true } : undefined);
    const engine = await Engine.load({ modelDir: out, threads: 1, packSuffixes: true });
    try {
      expect(engine.info.packsSuffixes).toBe(packed);
    } finally {
      engine.close();
    }
  });

  it('a bad value is refused and writes nothing', async () => {
    const out = path.join(scratch, 'maybe');
    const res = await decide(['make-model', '--preset', 'tiny', '--out', out, '--packing', 'maybe']);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/--packing must be on or off/);
    expect(existsSync(out)).toBe(false);
  });
});
