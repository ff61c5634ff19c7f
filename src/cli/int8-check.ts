/**
 * The agreement check `--dtype int8` runs after writing a model (make-model, import-model): the
 * fp32 twin (same weights, unquantized) is written to a temporary directory, both score the same
 * generated prompts (src/models/import/int8-agreement.ts), the result is printed and the twin removed.
 * `--no-agreement` skips it (the twin costs an fp32 model's disk space and build time while it runs).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { cpuInt8Support, int8SpeedNote } from '../engine/cpu-int8.js';
import { measureInt8Agreement, type Int8Agreement } from '../models/import/int8-agreement.js';

/** The issue-21 bound the bench checks too: past it the int8 model is flagged, not refused. */
const INT8_PROB_BOUND = 2e-2;

export async function reportInt8Agreement(command: string, int8Dir: string, writeTwin: (dir: string) => Promise<void>): Promise<Int8Agreement> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'decide-int8-twin-'));
  try {
    const twin = path.join(tmp, 'fp32-twin');
    process.stderr.write(`decide ${command}: measuring int8 against its fp32 twin on generated prompts (--no-agreement skips this) ...\n`);
    await writeTwin(twin);
    const a = await measureInt8Agreement(int8Dir, twin);
    const verdict = a.maxAbsProbDiff <= INT8_PROB_BOUND ? 'within' : 'OVER';
    process.stdout.write(
      `int8 vs fp32 twin on ${a.rows} generated questions (${a.states} states, 4 options each): max |prob diff| ${a.maxAbsProbDiff.toExponential(2)} ` +
        `(${verdict} ${INT8_PROB_BOUND}), max |label logit diff| ${a.maxAbsLogitDiff.toExponential(2)}, top option agrees on ${a.topAgreeing}/${a.rows}\n`,
    );
    const note = int8SpeedNote(cpuInt8Support());
    if (note !== undefined) process.stdout.write(`note: ${note}\n`);
    return a;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
