/**
 * The agreement check `--dtype int8` runs on a finished model before it is put in place
 * (make-model, import-model): the fp32 twin (same weights, unquantized) is written to a temporary
 * directory, both score the same generated prompts (src/models/import/int8-agreement.ts), the
 * result is printed and the twin removed. A check that cannot run (no room for the twin, say) fails
 * the command, and since the model is not in place yet, nothing is left at --out to block a retry.
 * `--no-agreement` skips it (the twin costs an fp32 model's disk space and build time while it runs).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { cpuInt8Support, int8SpeedNote } from '../engine/cpu-int8.js';
import { measureInt8Agreement, type Int8Agreement, type Int8AgreementOptions } from '../models/import/int8-agreement.js';
import { removeLeftovers } from '../models/output-dir.js';

/** The issue-21 bound the bench checks too: past it the int8 model is flagged, not refused. */
const INT8_PROB_BOUND = 2e-2;

/**
 * The twins' temporary directories: this prefix, then the pid of the run that made it. A run
 * killed during the check (Ctrl-C) cannot remove its twin, an fp32 model's size; the next
 * make-model or import-model does (removeLeftoverTwins).
 */
export const TWIN_PREFIX = 'decide-int8-twin-';

/** The check could not run: the command fails and the model is not put in place. */
export class Int8CheckError extends Error {
  constructor(what: string) {
    super(`the int8 agreement check failed, so the model was not written: ${what} (--no-agreement skips the check)`);
    this.name = 'Int8CheckError';
  }
}

const reason = (err: unknown) => (err as Error)?.message ?? String(err);

/** Removes the twins of earlier runs whose process is gone. */
export async function removeLeftoverTwins(): Promise<void> {
  await removeLeftovers(os.tmpdir(), TWIN_PREFIX, /^(\d+)-/);
}

export async function reportInt8Agreement(command: string, int8Dir: string, writeTwin: (dir: string) => Promise<void>): Promise<Int8Agreement> {
  let tmp: string;
  try {
    tmp = await mkdtemp(path.join(os.tmpdir(), `${TWIN_PREFIX}${process.pid}-`));
  } catch (err) {
    throw new Int8CheckError(`cannot make a temporary directory for the fp32 twin in ${os.tmpdir()}: ${reason(err)}`);
  }
  try {
    const twin = path.join(tmp, 'fp32-twin');
    process.stderr.write(`decide ${command}: measuring int8 against its fp32 twin on generated prompts (--no-agreement skips this) ...\n`);
    try {
      await writeTwin(twin);
    } catch (err) {
      throw new Int8CheckError(`its fp32 twin, written to the temporary ${twin}: ${reason(err)}`);
    }
    const line = (a: Int8Agreement) => {
      const verdict = a.maxAbsProbDiff <= INT8_PROB_BOUND ? 'within' : 'OVER';
      const pathName = a.int8 === undefined ? '' : `, path ${a.int8.path}`;
      process.stdout.write(
        `int8 vs fp32 twin on ${a.rows} generated questions (${a.states} states, 4 options each${pathName}): max |prob diff| ${a.maxAbsProbDiff.toExponential(2)} ` +
          `(${verdict} ${INT8_PROB_BOUND}), max |label logit diff| ${a.maxAbsLogitDiff.toExponential(2)}, top option agrees on ${a.topAgreeing}/${a.rows}\n`,
      );
    };
    const measure = (options?: Int8AgreementOptions) =>
      measureInt8Agreement(int8Dir, twin, options).catch((err: unknown) => {
        throw new Int8CheckError(`measuring the int8 model against its fp32 twin: ${reason(err)}`);
      });
    // This CPU's path first (what `decide serve` runs here), then the other one where it is exact.
    const a = await measure();
    line(a);
    if (a.int8 !== undefined) process.stdout.write(`int8 path on this CPU: ${a.int8.path} (${a.int8.reason})\n`);
    if (a.int8?.path === 'u8s8') {
      line(await measure({ int8Path: 'u8u8' }));
    } else if (a.int8?.path === 'u8u8' && !a.int8.forced) {
      process.stdout.write(
        'int8 path u8s8 not measured on this CPU (it runs where the CPU has VNNI or AMX, and there computes the same integer products as u8u8)\n',
      );
    }
    const note = int8SpeedNote(cpuInt8Support());
    if (note !== undefined) process.stdout.write(`note: ${note}\n`);
    return a;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
