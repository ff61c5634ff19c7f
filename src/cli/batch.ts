/**
 * `decide batch INPUT.jsonl --model ID --out RESULTS.jsonl [--questions Q.json] [--models-dir M]`:
 * the batch runner in-process, no server. Same record format, same result rows, same validation
 * as POST /v1/batches.
 *
 * Resuming: next to --out the command keeps `<out>.state.json` (the input's SHA-256, the model,
 * the questions, and the last committed checkpoint), replaced atomically after each chunk's rows are
 * fsynced. Run the same command again after an interruption (Ctrl-C, kill, crash) and it continues
 * from the last committed row; the finished output is the same as an uninterrupted run's. The state
 * file is deleted when the run completes. Without a state file an existing --out (a finished run's
 * results, or any other file) is overwritten only when the user says so: asked on a terminal,
 * --force otherwise. With a state file from a different input, model or questions the command
 * refuses to start.
 *
 * One run per --out: a run holds `<out>.lock` (naming its pid) from before it reads the state file
 * until it ends. A second run on the same --out refuses (exit 1) naming the process; the lock of a
 * run that was killed is taken over, so killing and resuming still works. `<out>` is the file itself
 * (symbolic links followed), and an existing --out is also locked by device and inode, so a link to
 * it is the same --out.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { open, readFile, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';

import { ApiError, describeError } from '../api/errors.js';
import { takePidLock } from '../batches/pid-lock.js';
import { PRIVATE_FILE_MODE } from '../batches/private-files.js';
import { parseFormQuestions } from '../batches/query.js';
import { RecordCounter } from '../batches/jsonl-lines.js';
import { startRecordThread } from '../batches/record-thread.js';
import { DEFAULT_CHUNK_OPTIONS, runBatch } from '../batches/runner.js';
import { chunkOptionsFromEnv } from '../batches/settings.js';
import { zeroUsage, type JobProgress } from '../batches/ports.js';
import { exitNow } from '../engine/native.js';
import { DecisionService } from '../service/decision-service.js';
import { addressSpaceProblem } from './address-space.js';
import { commandError, parseCommand } from './args.js';
import { dirOption } from './dir-options.js';
import { folderDefaultText, MODELS_FOLDER } from '../support/env-path.js';
import { ENGINE_FLAGS, ENGINE_FLAGS_HELP, engineOptionsFromFlags } from './engine-flags.js';
import { outputClash, outputPlaceProblem, realOutputPath } from './output-path.js';
import { ProgressReporter } from './progress.js';
import { onGracefulStop, SIGNAL_EXIT_CODES, type StopSignal } from './signal-exit.js';
import { statIfExists } from '../support/stat-if-exists.js';

const HELP = `usage: decide batch INPUT.jsonl --model ID --out RESULTS.jsonl [options]

Runs a JSONL batch in this process (no server): one result row per non-blank input line, in input
order, {"custom_id","id","answers","usage"} or {"custom_id","error":{"code","message"}}.

options:
  --model ID         model id or alias (e.g. svc-alpha)                         (required)
  --out FILE         where the result rows go                                   (required)
  --questions FILE   JSON questions for records without their own
  --models-dir DIR   model directories (${folderDefaultText(MODELS_FOLDER)}); nothing is created
                     there: a model that is not installed is refused (exit 2)
  --force            overwrite an existing --out without asking
  -h, --help         this text

${ENGINE_FLAGS_HELP}
An interrupted run (Ctrl-C, kill, crash) resumes when the same command is run again: progress is
kept in <out>.state.json, which is removed when the run completes. Ctrl-C, SIGTERM, SIGHUP (a closed
terminal) or SIGUSR2 stops after the chunk being written (a second one at once) and exits 128 + the
signal's number: 130, 143, 129 or 140. While a run is going, a second run on the same --out
refuses (<out>.lock names the running process), also through a symbolic or hard link (the lock and
state file sit beside the file links lead to). An existing --out with no
unfinished run is overwritten only after a yes on a terminal (Ctrl-D is a no, exit 2; Ctrl-C exits
130), or with --force. The results hold customer data: --out and its state file are created with
mode 0600 (owner only), whatever the umask, as the server keeps batch results; an existing --out
keeps its mode.

environment:
  DECIDE_BATCH_CHUNK_RECORDS, DECIDE_BATCH_CHUNK_BYTES  rows written and committed together
                     (default ${DEFAULT_CHUNK_OPTIONS.chunkRecords} records, ${DEFAULT_CHUNK_OPTIONS.chunkBytes} input bytes): a run resumes after its last whole chunk
`;

const OPTIONS = {
  model: { type: 'string' },
  out: { type: 'string' },
  questions: { type: 'string' },
  'models-dir': { type: 'string' },
  ...ENGINE_FLAGS,
  force: { type: 'boolean' },
} as const;

const STATE_VERSION = 1;

interface RunState {
  version: number;
  input: string;
  inputSha256: string;
  inputBytes: number;
  total: number;
  model: string;
  questionsSha256: string | null;
  progress: JobProgress;
}

/** One pass over the input: its SHA-256 (to recognise it on resume) and its record count. */
async function fingerprint(file: string): Promise<{ sha256: string; bytes: number; records: number }> {
  const hash = createHash('sha256');
  const counter = new RecordCounter();
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer);
    counter.push(chunk as Buffer);
  }
  return { sha256: hash.digest('hex'), bytes: counter.bytes, records: counter.total() };
}

async function writeStateAtomically(file: string, state: RunState): Promise<void> {
  const tmp = `${file}.tmp`;
  const fh = await open(tmp, 'w', PRIVATE_FILE_MODE);
  try {
    await fh.writeFile(`${JSON.stringify(state)}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
  const dir = await open(path.dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

async function readState(file: string): Promise<RunState | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const state = JSON.parse(text) as RunState;
    if (state.version !== STATE_VERSION || typeof state.progress?.inputOffset !== 'number') throw new Error('unknown format');
    // A state written before usage was counted: the rows before it count none.
    state.progress.usage ??= zeroUsage();
    state.progress.failedBytes ??= 0;
    return state;
  } catch {
    throw new Error(`${file} is not a state file of this version; delete it (and ${file.replace(/\.state\.json$/, '')}) to start over`);
  }
}

/**
 * Where the lock shared by every name of the existing file `file` lives (os.tmpdir(), named after its
 * device and inode), or undefined when there is no file yet. An open file's inode is not reused, so
 * the name stays that file's while a run holds it.
 */
function inodeLockPath(file: string): string | undefined {
  const info = statIfExists(file);
  return info === undefined ? undefined : path.join(os.tmpdir(), `decide-batch-${info.dev}-${info.ino}.lock`);
}

/**
 * Whether an existing `out` may be overwritten: --force, else a yes on a terminal. Without a
 * terminal (a script, CI) nobody can answer, so the answer is no and the message says what to do.
 * On the terminal, end of input (Ctrl-D) is a no like `n`; Ctrl-C is the interruption it is
 * everywhere else (exit 130), not a failure.
 */
async function mayOverwrite(out: string, force: boolean): Promise<{ ok: true } | { ok: false; message: string; code?: number }> {
  if (force) return { ok: true };
  const refusal = `${out} already exists and no unfinished run of it was found; give --force to overwrite it, or choose another --out`;
  if (!process.stdin.isTTY || !process.stderr.isTTY) return { ok: false, message: refusal };
  const declined = `${out} left as it is`;
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  // The terminal is in raw mode while readline asks: Ctrl-C arrives as this event, not as a signal.
  const ctrlC = new AbortController();
  prompt.on('SIGINT', () => ctrlC.abort());
  try {
    const answer = await prompt.question(`decide batch: ${out} already exists (the results of a finished run?). Overwrite it? [y/N] `, { signal: ctrlC.signal });
    return /^\s*y(es)?\s*$/i.test(answer) ? { ok: true } : { ok: false, message: declined };
  } catch (err) {
    // readline rejects the question at end of input (Ctrl-D) and when Ctrl-C aborts it.
    if ((err as Error).name !== 'AbortError') throw err;
    if (ctrlC.signal.aborted) return { ok: false, message: `SIGINT: ${declined}`, code: SIGNAL_EXIT_CODES.SIGINT };
    // Ctrl-D leaves the cursor on the question's line (Ctrl-C has readline end it).
    process.stderr.write('\n');
    return { ok: false, message: declined };
  } finally {
    prompt.close();
  }
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand('batch', argv, HELP, OPTIONS, true);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  // Before anything else: a limit that cannot hold the run's threads would end it mid-run.
  const tooSmall = addressSpaceProblem('batch');
  if (tooSmall) return commandError('batch', tooSmall, 1);
  if (positionals.length !== 1 || !values.model || !values.out) return commandError('batch', `give one INPUT file, --model and --out\n\n${HELP}`);
  const engine = engineOptionsFromFlags(values);
  if (typeof engine === 'string') return commandError('batch', engine);
  let chunking;
  try {
    chunking = chunkOptionsFromEnv();
  } catch (err) {
    return commandError('batch', (err as Error).message);
  }

  const models = dirOption(values['models-dir'], '--models-dir', MODELS_FOLDER);
  if ('problem' in models) return commandError('batch', models.problem);

  // `-` is not stdout here: the rows go to a file, with a state file and a lock beside it.
  if (values.out === '-') return commandError('batch', '--out - : the results go to a file (resumable, with a state file beside it), not to stdout; name the file');
  const inputPath = path.resolve(positionals[0]!);
  const givenOut = path.resolve(values.out);
  if (inputPath === givenOut) return commandError('batch', '--out must not be the input file');
  const place = outputPlaceProblem(givenOut);
  if (place) return commandError('batch', place);
  // The lock and the state file go beside the file itself, not beside the name it was given: a
  // symbolic link to --out (or a path through one) finds the same lock and resumes the same state.
  const outPath = realOutputPath(givenOut);
  const statePath = `${outPath}.state.json`;
  const inputs = [{ label: 'the input file', path: inputPath }, ...(values.questions === undefined ? [] : [{ label: '--questions', path: values.questions }])];
  const lockPath = `${outPath}.lock`;
  for (const [written, label] of [[givenOut, '--out'], [statePath, 'the state file'], [`${statePath}.tmp`, 'the state file'], [lockPath, 'the lock file']] as const) {
    // The state and lock files are named after --out: another --out is the way out of either clash.
    const clash = outputClash(written, inputs, label, '--out');
    if (clash) return commandError('batch', clash);
  }

  // One run writes an --out at a time: a second one would take the live run for an interrupted one
  // and write the same rows into the same file. A killed run's lock is taken over, so it resumes.
  const releases: Array<() => void> = [];
  const release = () => releases.reverse().forEach((r) => r());
  const inUse = (pid: number) =>
    `${values.out} is being written by another decide batch run (process ${pid}); wait for it to finish, or stop it and run this command again to resume`;
  try {
    // A hard link (or a bind mount) names an existing file under a path no link leads back from:
    // a second lock, named after its device and inode, is what every name of it shares. Taken
    // first, so a run whose <out>.lock is there holds both.
    const inodeLock = inodeLockPath(outPath);
    if (inodeLock) releases.push(takePidLock(inodeLock, inUse));
    releases.push(takePidLock(lockPath, inUse));
  } catch (err) {
    release();
    // A system error (no permission, ...) names the lock file; a held lock is its own message.
    const e = err as NodeJS.ErrnoException;
    return commandError('batch', e.code === undefined ? e.message : `cannot lock ${values.out}: ${e.message}`, 1);
  }
  try {
    const { model, out, questions, force } = values;
    return await runLocked({ values: { model, out, questions, force, 'models-dir': models.dir }, positionals, engine, chunking, inputPath, outPath, statePath });
  } finally {
    release();
  }
}

/** The run itself, once this process holds `<out>.lock`. */
async function runLocked(args: {
  values: { model: string; out: string; questions?: string; force?: boolean; 'models-dir'?: string };
  positionals: string[];
  engine: Exclude<ReturnType<typeof engineOptionsFromFlags>, string>;
  chunking: ReturnType<typeof chunkOptionsFromEnv>;
  inputPath: string;
  outPath: string;
  statePath: string;
}): Promise<number> {
  const { values, positionals, engine, chunking, inputPath, outPath, statePath } = args;
  let questionsText: string | null = null;
  let formQuestions: unknown;
  if (values.questions !== undefined) {
    try {
      // A byte-order mark (a Windows editor's) is skipped, as in the input file.
      questionsText = (await readFile(values.questions, 'utf8')).replace(/^\uFEFF/, '');
      formQuestions = parseFormQuestions(questionsText, undefined, 'the file');
    } catch (err) {
      return commandError('batch', `--questions ${values.questions}: ${(err as Error).message}`);
    }
  }

  let input;
  try {
    input = await fingerprint(inputPath);
  } catch (err) {
    return commandError('batch', `cannot read ${positionals[0]}: ${(err as Error).message}`);
  }
  if (input.records === 0) return commandError('batch', `${positionals[0]} has no records (one JSON object per line)`);
  // With a state file the run resumes into --out; without one, --out would be started over.
  if (!existsSync(statePath) && existsSync(outPath)) {
    const overwrite = await mayOverwrite(values.out, values.force ?? false);
    if (!overwrite.ok) return commandError('batch', overwrite.message, overwrite.code);
  }

  // The first signal stops the run after the current chunk; its exit status says which signal it
  // was (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP, 140 for SIGUSR2), also when a second one
  // ends the run at once.
  let interrupted: StopSignal | undefined;
  const onSignal = (signal: StopSignal) => {
    if (interrupted !== undefined) exitNow(SIGNAL_EXIT_CODES[interrupted]);
    interrupted = signal;
    process.stderr.write('\ndecide batch: stopping after the current chunk (again to quit at once)\n');
  };
  const offSignals = onGracefulStop(onSignal);
  // The thread that reads large lines starts now, not at the first one: a limit that cannot hold
  // it ends the process here, before any row is written (address-space.ts).
  await startRecordThread();
  let service: DecisionService;
  try {
    // Nothing is created here: a mistyped --models-dir must not become a folder holding the
    // random-weights default model that the run would then score with.
    service = await DecisionService.open({
      modelsDir: values['models-dir'],
      runtime: { engine },
      ensureDefaultModel: false,
      preload: [],
      warn: (line) => process.stderr.write(`decide batch: ${line}\n`),
    });
  } catch (err) {
    offSignals();
    return commandError('batch', `cannot open the models: ${(err as Error).message}`, 1);
  }
  try {
    const modelFailure = (err: unknown) =>
      err instanceof ApiError && err.code === 'not_found'
        ? commandError('batch', `${describeError(err)} (models dir ${service.registry.modelsDir}; give --models-dir or DECIDE_MODELS_DIR)`)
        : commandError('batch', describeError(err), 1);
    let model: string;
    try {
      model = service.resolveModel(values.model);
    } catch (err) {
      return modelFailure(err);
    }

    const questionsSha256 = questionsText === null ? null : createHash('sha256').update(questionsText).digest('hex');
    let state: RunState;
    let previous: RunState | undefined;
    try {
      previous = await readState(statePath);
    } catch (err) {
      return commandError('batch', (err as Error).message);
    }
    if (previous && (previous.inputSha256 !== input.sha256 || previous.model !== model || previous.questionsSha256 !== questionsSha256)) {
      const what =
        previous.inputSha256 !== input.sha256 ? 'a different input' : previous.model !== model ? `a different model (${previous.model})` : 'different questions';
      return commandError(
        'batch',
        `${statePath} belongs to an unfinished run with ${what}; ` +
          `run that command again to finish it, or delete ${statePath} to start this one over ${values.out}`,
      );
    }
    // Loaded once the run is known to go ahead: a refusal above costs no model load.
    try {
      await service.runtime(model);
    } catch (err) {
      return modelFailure(err);
    }
    if (previous) {
      state = previous;
      process.stderr.write(`decide batch: resuming at row ${state.progress.completed + state.progress.failed} of ${state.total}\n`);
    } else {
      state = {
        version: STATE_VERSION,
        input: inputPath,
        inputSha256: input.sha256,
        inputBytes: input.bytes,
        total: input.records,
        model,
        questionsSha256,
        progress: { inputOffset: 0, inputLine: 0, resultsBytes: 0, failedBytes: 0, completed: 0, failed: 0, usage: zeroUsage() },
      };
      await writeStateAtomically(statePath, state);
    }

    const startRows = state.progress.completed + state.progress.failed;
    const startCompleted = state.progress.completed;
    const reporter = new ProgressReporter('batch', state.total, startRows);
    const started = Date.now();
    reporter.update(startRows, true);
    const result = await runBatch({
      ...chunking,
      scorer: service,
      model,
      requestedModel: values.model,
      formQuestions,
      inputPath,
      resultsPath: outPath,
      // Customer data, as the server's results: owner only, whatever the umask.
      resultsMode: PRIVATE_FILE_MODE,
      start: state.progress,
      commit: async (progress) => {
        state.progress = progress;
        await writeStateAtomically(statePath, state);
      },
      shouldStop: () => interrupted !== undefined,
      onProgress: (p) => reporter.update(p.completed + p.failed),
    });
    const p = result.progress;
    reporter.update(p.completed + p.failed, true);
    reporter.end();
    const seconds = (Date.now() - started) / 1000;
    const decisions = p.completed - startCompleted;
    if (!result.finished) {
      process.stderr.write(
        `decide batch: interrupted at row ${p.completed + p.failed} of ${state.total}; run the same command again to resume\n`,
      );
      return SIGNAL_EXIT_CODES[interrupted ?? 'SIGINT'];
    }
    await rm(statePath, { force: true });
    const resumed = startRows > 0 ? `, resumed at row ${startRows}` : '';
    process.stdout.write(
      `decide batch: wrote ${values.out}: ${p.completed + p.failed} rows, ${p.completed} completed, ${p.failed} failed; ` +
        `${decisions} decisions in ${seconds.toFixed(1)} s (${(decisions / Math.max(seconds, 1e-3)).toFixed(1)} decisions/s${resumed})\n`,
    );
    return 0;
  } finally {
    offSignals();
    await service.close();
  }
}
