/**
 * Crash safety with real processes: `decide serve` killed with SIGKILL mid-job several times and
 * restarted on the same data dir, and `decide batch` (the CLI) killed and interrupted, then run
 * again. Either way the final results must hold every input row exactly once, in input order, with
 * the answers of an uninterrupted run (within 1e-6). The reference is an uninterrupted CLI run of
 * the same file, in the default chunks of 128 records; the interrupted runs use chunks of 8, so
 * that a 68-row file has 9 commit points.
 *
 * No outcome depends on the machine's speed: every signal is decided while the process cannot
 * commit (the server while the test holds its SQLite write lock, the CLI while it is stopped with
 * SIGSTOP), after reading how far it got, so a kill always lands in an unfinished run. Each
 * spawned process costs seconds of CPU (node, the tokenizer, the ONNX session), so they are few
 * and run with --threads 1 (the scoring is the same; spinning threads are not).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { decideBin } from '../helpers/bin.js';
import { BatchDbProbe } from './batch-db-probe.js';
import { client, DECIDE_BIN, goodLines, maxProbDiff, mixedFile, parseRows, startServer, tempWorkspace, type ExpectedRow, type ResultRow, type ServerProcess } from './helpers.js';

/** Records per chunk in the interrupted runs (server jobs and CLI). */
const CHUNK_RECORDS = 8;
/** Probabilities are rounded to 6 decimals: one rounding step is the most two batch layouts may differ by. */
const TOLERANCE = 1e-6 + 1e-12;

let workDir: string;
let modelsDir: string;
let inputPath: string;
let expected: ExpectedRow[];
let reference: ResultRow[];
let referenceRun: CliResult & { out: string };

/** Seeded randomness, printed so that a failure can be replayed. */
const SEED = Number(process.env.BATCH_KILL_SEED ?? Date.now() % 100000);
let rngState = SEED >>> 0;
function random(): number {
  rngState = (Math.imul(rngState, 1664525) + 1013904223) >>> 0;
  return rngState / 2 ** 32;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function runCli(args: string[], opts: { env?: Record<string, string>; onSpawn?: (p: ChildProcess) => void } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [DECIDE_BIN, 'batch', ...args], { env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }));
    opts.onSpawn?.(proc);
  });
}

/** The options every model-loading CLI run gets. */
const modelArgs = () => ['--model', 'svc-alpha', '--models-dir', modelsDir, '--threads', '1'];

/** Rows lost and duplicated against the reference, by custom_id; order and answers checked too. */
function compare(rows: ResultRow[], ref: ResultRow[]) {
  const count = (list: ResultRow[]) => {
    const m = new Map<string, number>();
    for (const r of list) m.set(String(r.custom_id), (m.get(String(r.custom_id)) ?? 0) + 1);
    return m;
  };
  const got = count(rows);
  const want = count(ref);
  let lost = 0;
  let duplicated = 0;
  for (const [id, n] of want) lost += Math.max(0, n - (got.get(id) ?? 0));
  for (const [id, n] of got) duplicated += Math.max(0, n - (want.get(id) ?? 0));
  let worst = 0;
  if (rows.length === ref.length) rows.forEach((r, i) => (worst = Math.max(worst, maxProbDiff(r, ref[i]!))));
  else worst = Infinity;
  return { lost, duplicated, worst, inOrder: rows.map((r) => r.custom_id).join('\n') === ref.map((r) => r.custom_id).join('\n') };
}

/** Asserts that `text` holds the reference rows: each exactly once, in order, with its answers. */
function expectReferenceRows(text: string, what: string): void {
  const rows = parseRows(text);
  const result = compare(rows, reference);
  console.log(`${what}: ${rows.length} rows (reference ${reference.length}), lost ${result.lost}, duplicated ${result.duplicated}, in order: ${result.inOrder}, max |dp| ${result.worst.toExponential(2)}`);
  expect(result).toMatchObject({ lost: 0, duplicated: 0, inOrder: true });
  expect(result.worst).toBeLessThanOrEqual(TOLERANCE);
}

beforeAll(async () => {
  await decideBin();
  ({ dir: workDir, modelsDir } = await tempWorkspace('batch-crash'));
  // 68 rows: good records with the mixed file's bad ones in the middle.
  const mixed = mixedFile();
  const before = goodLines(16, 11, 'a');
  const after = goodLines(16, 12, 'b');
  inputPath = path.join(workDir, 'input.jsonl');
  await writeFile(inputPath, `${before.join('\n')}\n${mixed.text}${after.join('\n')}\n`);
  const ids = (lines: string[]) => lines.map((l) => ({ custom_id: (JSON.parse(l) as { custom_id: string }).custom_id }));
  expected = [...ids(before), ...mixed.expected, ...ids(after)];
  // The uninterrupted reference run, also the subject of the first CLI test.
  const out = path.join(workDir, 'reference.jsonl');
  referenceRun = { ...(await runCli([inputPath, '--out', out, ...modelArgs()])), out };
  expect(referenceRun.code, referenceRun.stderr).toBe(0);
  reference = parseRows(await readFile(out, 'utf8'));
  expect(reference.length).toBe(expected.length);
  console.log(`batch crash tests: seed ${SEED} (BATCH_KILL_SEED=${SEED} replays), ${reference.length} rows`);
});

afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

describe('decide serve killed with SIGKILL mid-job', () => {
  /**
   * Where a kill lands, both while the test holds the write lock: `anywhere` after 0-40 ms (the
   * server scoring, writing rows, or waiting to commit them), `rows written` once the next chunk's
   * rows are on disk but not committed (or, past the last commit, before the job is finished).
   */
  type KillMode = 'anywhere' | 'rows written';

  async function fileSize(file: string): Promise<number> {
    return (await stat(file).catch(() => undefined))?.size ?? 0;
  }

  /**
   * Kills the server once job `id` has committed `atRows` rows. Returns where the kill landed, or
   * undefined when the job had finished before the lock was taken (nothing was killed).
   */
  async function killMidJob(server: ServerProcess, db: BatchDbProbe, dataDir: string, id: string, atRows: number, mode: KillMode): Promise<string | undefined> {
    for (let job = db.job(id); job.status === 'in_progress' && job.rows < atRows; job = db.job(id)) await sleep(5);
    db.lock();
    try {
      const job = db.job(id);
      if (job.status !== 'in_progress') return undefined;
      const results = path.join(dataDir, job.resultsPath);
      if (mode === 'rows written') {
        // The server writes and fsyncs the next chunk's rows, then waits for the lock to commit them.
        while (job.rows < job.total && (await fileSize(results)) <= job.resultsBytes) await sleep(2);
      } else {
        await sleep(Math.floor(random() * 40));
      }
      const uncommitted = (await fileSize(results)) - job.resultsBytes;
      await server.kill();
      return `${mode} (${job.rows} rows committed, ${uncommitted} bytes written past them)`;
    } finally {
      db.unlock();
    }
  }

  it('resumes after every kill; the results hold every row exactly once, in order, with the uninterrupted answers', async () => {
    const dataDir = path.join(workDir, 'server-data');
    const env = { DECIDE_API_KEYS: 'key-k', DECIDE_BATCH_CHUNK_RECORDS: String(CHUNK_RECORDS) };
    const start = () => startServer({ dataDir, modelsDir, env, args: ['--threads', '1'] });
    const modes: KillMode[] = random() < 0.5 ? ['anywhere', 'rows written'] : ['rows written', 'anywhere'];
    let server = await start();
    const db = new BatchDbProbe(path.join(dataDir, 'batches.sqlite'));
    const file = await readFile(inputPath);
    const jobs: string[] = [];
    const createJob = async () => {
      const created = await client(server.url, 'key-k').create({ model: 'svc-alpha', file });
      expect(created.status).toBe(201);
      expect(created.body.progress.total).toBe(reference.length);
      jobs.push(created.body.id);
      return created.body.id;
    };
    const kills: string[] = [];
    try {
      let id = await createJob();
      for (const [k, mode] of modes.entries()) {
        // Spread over the first two thirds of the job.
        let atRows = Math.floor((reference.length * (k + random())) / (modes.length + 1));
        for (;;) {
          const landed = await killMidJob(server, db, dataDir, id, atRows, mode);
          if (landed) {
            kills.push(landed);
            break;
          }
          // The job finished before the lock was taken (its results are checked below): the kill
          // goes to a new job, locked from its first row.
          expect(jobs.length).toBeLessThan(modes.length + 2);
          id = await createJob();
          atRows = 0;
        }
        server = await start();
      }
      console.log(`server kill test: ${kills.length} SIGKILLs: ${kills.join('; ')}; ${jobs.length} job(s) of ${reference.length} rows`);
      expect(kills).toHaveLength(modes.length);
      const api = client(server.url, 'key-k');
      for (const job of jobs) {
        const final = await api.waitFor(job, ['completed', 'failed'], 120_000);
        expect(final.status).toBe('completed');
        expect(final.progress).toEqual({
          total: reference.length,
          completed: reference.filter((r) => !r.error).length,
          failed: reference.filter((r) => r.error).length,
        });
        expectReferenceRows((await api.results(job)).text, `server job ${job}`);
      }
    } finally {
      db.close();
      await server.stop();
    }
  });
});

describe('decide batch (CLI)', () => {
  it('runs a file: summary on stdout, rows in order, no state file left', async () => {
    const { stdout, stderr, out } = referenceRun;
    const failed = expected.filter((e) => e.code).length;
    expect(stdout).toMatch(new RegExp(`${expected.length} rows, ${expected.length - failed} completed, ${failed} failed; .* decisions/s`));
    expect(stderr).toMatch(/rows \(100\.0%\)/);
    const rows = parseRows(await readFile(out, 'utf8'));
    expect(rows.map((r) => ({ custom_id: r.custom_id, code: r.error?.code }))).toEqual(expected.map((e) => ({ custom_id: e.custom_id, code: e.code })));
    expect(existsSync(`${out}.state.json`)).toBe(false);
  });

  /** Committed rows and total in a CLI state file; undefined when there is none (not started, or finished). */
  async function readCommitted(state: string): Promise<{ rows: number; total: number } | undefined> {
    try {
      const s = JSON.parse(await readFile(state, 'utf8')) as { total: number; progress: { completed: number; failed: number } };
      return { rows: s.progress.completed + s.progress.failed, total: s.total };
    } catch {
      return undefined;
    }
  }

  /** The process's state letter (T: stopped, Z: exited), undefined once it is gone. */
  async function processState(pid: number): Promise<string | undefined> {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined); // Linux
    if (stat !== undefined) return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    const ps = await promisify(execFile)('ps', ['-o', 'stat=', '-p', String(pid)]).catch(() => undefined);
    return ps?.stdout.trim()[0];
  }

  /** SIGSTOP is delivered asynchronously: resolves once the process is stopped (or has exited). */
  async function stop(proc: ChildProcess): Promise<void> {
    proc.kill('SIGSTOP');
    for (let s = await processState(proc.pid!); s !== undefined && s !== 'T' && s !== 'Z'; s = await processState(proc.pid!)) await sleep(1);
  }

  /**
   * Sends `signal` to a running `decide batch` once its state file shows `atRows` committed rows.
   * The process is stopped (SIGSTOP) while the state is read again, so the signal lands at a known
   * checkpoint of a run that has not finished, with more than `leave` rows still to commit.
   * Resolves with the rows committed then, or undefined when the run was past that point first (no
   * signal sent).
   */
  function interruptAt(proc: ChildProcess, state: string, atRows: number, signal: NodeJS.Signals, leave: number): Promise<number | undefined> {
    return new Promise((resolve) => {
      let exited = false;
      proc.once('exit', () => {
        exited = true;
        resolve(undefined);
      });
      const poll = async (): Promise<void> => {
        if (exited) return;
        const seen = await readCommitted(state);
        if (!seen || seen.rows < atRows) {
          setTimeout(() => void poll(), 5);
          return;
        }
        await stop(proc);
        const frozen = await readCommitted(state);
        if (!frozen || frozen.total - frozen.rows <= leave) {
          proc.kill('SIGCONT');
          return resolve(undefined);
        }
        proc.kill(signal);
        proc.kill('SIGCONT');
        resolve(frozen.rows);
      };
      void poll();
    });
  }

  it('resumes an interrupted run (SIGKILL, then SIGINT) to the same final output; --force starts a finished --out over', async () => {
    const out = path.join(workDir, 'cli-out.jsonl');
    const state = `${out}.state.json`;
    await writeFile(out, 'the results of an earlier, finished run\n');
    // The same command every time: --force starts the finished --out over; with a state file it resumes.
    const args = [inputPath, '--out', out, '--force', ...modelArgs()];
    const env = { DECIDE_BATCH_CHUNK_RECORDS: String(CHUNK_RECORDS) };
    const plan = ['SIGKILL', 'SIGINT'] as const;
    // SIGKILL ends the run wherever it is. SIGINT lets a commit under way finish (and, if the signal
    // is handled a moment late, the next one): a SIGINT with no more than that left would rightly
    // end in a finished run. So a SIGINT is sent only while more than two chunks' rows are left. A
    // chunk holds at most CHUNK_RECORDS records plus the bad lines, which take no record slot.
    const maxChunkRows = CHUNK_RECORDS + reference.filter((r) => r.error).length;
    const leave = { SIGKILL: 0, SIGINT: 2 * maxChunkRows };
    // The SIGKILL in the first third, the SIGINT before the last 2 chunks' rows.
    const lastAt = { SIGKILL: Math.floor(reference.length / 3), SIGINT: reference.length - leave.SIGINT - 1 };
    const interruptions: Array<{ signal: string; atRows: number }> = [];
    for (let runs = 1; interruptions.length < plan.length; runs++) {
      const signal = plan[interruptions.length]!;
      const from = (await readCommitted(state))?.rows ?? 0;
      // At least one more commit, at a random point up to the signal's last.
      const atRows = from + 1 + Math.floor(random() * Math.max(0, lastAt[signal] - from - 1));
      let landed: Promise<number | undefined> = Promise.resolve(undefined);
      const res = await runCli(args, { env, onSpawn: (proc) => (landed = interruptAt(proc, state, atRows, signal, leave[signal])) });
      const atSignal = await landed;
      if (atSignal === undefined) {
        // The run got past the signal's point before the test could stop it (it would take a
        // machine that scores a third of the file within one 5 ms poll): it finishes, and its
        // output must be right all the same; then the interruptions start over.
        expect(res.code, res.stderr).toBe(0);
        expectReferenceRows(await readFile(out, 'utf8'), `CLI run ${runs}, finished before its ${signal}`);
        expect(runs).toBeLessThan(6);
        interruptions.length = 0;
        continue;
      }
      const after = await readCommitted(state);
      if (signal === 'SIGKILL') {
        expect(res.signal).toBe('SIGKILL');
        // Stopped, then killed: nothing was committed after the state the test read.
        expect(after?.rows).toBe(atSignal);
        // Its lock stays behind, naming a process that is gone: the next run takes it over.
        expect(existsSync(`${out}.lock`)).toBe(true);
      } else {
        // SIGINT stops at the next chunk boundary: the chunk being committed, if any, is kept.
        expect(res.code, res.stderr).toBe(130);
        const stoppedAt = Number(/interrupted at row (\d+) of \d+; run the same command again to resume/.exec(res.stderr)?.[1]);
        expect(stoppedAt).toBeGreaterThanOrEqual(atSignal);
        expect(after?.rows).toBe(stoppedAt);
      }
      interruptions.push({ signal, atRows: after!.rows });
    }
    const last = await runCli(args, { env });
    expect(last.code, last.stderr).toBe(0);
    const resumedAt = interruptions.at(-1)!.atRows;
    expect(last.stderr).toContain(`resuming at row ${resumedAt} of ${reference.length}`);
    expect(last.stdout).toContain(`resumed at row ${resumedAt}`);
    console.log(`CLI resume test: ${interruptions.map((i) => `${i.signal} with ${i.atRows} rows committed`).join(', ')}`);
    expectReferenceRows(await readFile(out, 'utf8'), 'CLI resumed output');
    expect(existsSync(state)).toBe(false);
    expect(existsSync(`${out}.lock`)).toBe(false);
  });

  // SIGHUP: a closed terminal or ssh session; SIGUSR2 a stray one. Node's own action for both ends
  // the run at once, mid-chunk, with the lock left.
  it.each([
    ['SIGTERM', 143],
    ['SIGHUP', 129],
    ['SIGUSR2', 140],
  ] as const)('%s stops at a chunk boundary as Ctrl-C does, with the exit status of that signal (%i), and the run resumes', async (signal, code) => {
    const out = path.join(workDir, `${signal.toLowerCase()}-out.jsonl`);
    const state = `${out}.state.json`;
    const env = { DECIDE_BATCH_CHUNK_RECORDS: String(CHUNK_RECORDS) };
    const leave = 2 * (CHUNK_RECORDS + reference.filter((r) => r.error).length);
    let landed: Promise<number | undefined> = Promise.resolve(undefined);
    const res = await runCli([inputPath, '--out', out, ...modelArgs()], { env, onSpawn: (proc) => (landed = interruptAt(proc, state, 1, signal, leave)) });
    const atSignal = await landed;
    if (atSignal === undefined) {
      // Finished before it could be stopped (see the resume test): nothing to say about the signal.
      expect(res.code, res.stderr).toBe(0);
      return;
    }
    expect(res.signal).toBe(null);
    expect(res.code, res.stderr).toBe(code);
    expect(res.stderr).toMatch(/interrupted at row \d+ of \d+; run the same command again to resume/);
    expect(existsSync(`${out}.lock`)).toBe(false);
    const last = await runCli([inputPath, '--out', out, ...modelArgs()], { env });
    expect(last.code, last.stderr).toBe(0);
    expectReferenceRows(await readFile(out, 'utf8'), `CLI run resumed after ${signal}`);
  });

  it('refuses a second run on an --out that a live run is writing, naming its process; the first run finishes unharmed', async () => {
    const out = path.join(workDir, 'two-runs.jsonl');
    const state = `${out}.state.json`;
    const env = { DECIDE_BATCH_CHUNK_RECORDS: String(CHUNK_RECORDS) };
    let first!: ChildProcess;
    let stopped!: Promise<void>;
    const firstRun = runCli([inputPath, '--out', out, ...modelArgs()], {
      env,
      onSpawn: (proc) => {
        first = proc;
        // Held (stopped, alive) once it has committed a row, so the second run surely meets a live, unfinished run.
        stopped = (async () => {
          while (((await readCommitted(state))?.rows ?? 0) < 1) await sleep(5);
          await stop(proc);
        })();
      },
    });
    await stopped;
    const frozen = await readFile(state, 'utf8');
    const second = await runCli([inputPath, '--out', out, ...modelArgs()], { env });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`is being written by another decide batch run (process ${first.pid})`);
    expect(await readFile(state, 'utf8')).toBe(frozen); // the second run wrote nothing
    first.kill('SIGCONT');
    const done = await firstRun;
    expect(done.code, done.stderr).toBe(0);
    expectReferenceRows(await readFile(out, 'utf8'), 'CLI run beside a refused second run');
    expect(existsSync(`${out}.lock`)).toBe(false);
    expect(existsSync(state)).toBe(false);
  });

  it('never overwrites a finished --out unasked: without a terminal it refuses (with --force it starts over: the test above)', async () => {
    const out = path.join(workDir, 'finished-out.jsonl');
    await writeFile(out, 'the finished results\n');
    const again = await runCli([inputPath, '--out', out, ...modelArgs()]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`${out} already exists and no unfinished run of it was found; give --force to overwrite it, or choose another --out`);
    expect(await readFile(out, 'utf8')).toBe('the finished results\n');
  });

  it('refuses to resume with different questions, saying so', async () => {
    const out = path.join(workDir, 'questions-out.jsonl');
    const questions = path.join(workDir, 'questions.json');
    await writeFile(questions, JSON.stringify({ q: { type: 'noul', instructions: 'Is it?' } }));
    const inputSha256 = createHash('sha256').update(await readFile(inputPath)).digest('hex');
    const progress = { inputOffset: 0, inputLine: 0, resultsBytes: 0, completed: 0, failed: 0 };
    await writeFile(`${out}.state.json`, JSON.stringify({ version: 1, inputSha256, model: 'svc-alpha-2026-10', questionsSha256: 'other', progress }));
    const res = await runCli([inputPath, '--out', out, '--questions', questions, ...modelArgs()]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/belongs to an unfinished run with different questions; run that command again to finish it/);
  });

  it('refuses to resume with a different input, and explains usage errors', async () => {
    const out = path.join(workDir, 'other-out.jsonl');
    await writeFile(`${out}.state.json`, JSON.stringify({ version: 1, inputSha256: 'x', model: 'svc-alpha-2026-10', questionsSha256: null, progress: { inputOffset: 1 } }));
    const res = await runCli([inputPath, '--out', out, ...modelArgs()]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/belongs to an unfinished run with a different input/);
    const usage = await runCli([inputPath, '--out', out]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--model and --out/);
    const unknown = await runCli([inputPath, '--model', 'svc-omega', '--out', path.join(workDir, 'x.jsonl'), '--models-dir', modelsDir]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/svc-omega.*not installed/);
  });
});
