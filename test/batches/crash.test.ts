/**
 * Crash safety with real processes: `decide serve` killed with SIGKILL mid-job several times and
 * restarted on the same data dir, and `decide batch` (the CLI) killed and run again. Either way the
 * final results must hold every input row exactly once, in input order, with the answers of an
 * uninterrupted run (within 1e-6). The reference is an uninterrupted CLI run of the same file.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { decideBin } from '../helpers/bin.js';
import { client, DECIDE_BIN, goodLines, maxProbDiff, mixedFile, parseRows, startServer, tempWorkspace, type ResultRow } from './helpers.js';

let workDir: string;
let modelsDir: string;
let inputPath: string;
let reference: ResultRow[];

/** Seeded randomness, printed so that a failure can be replayed. */
const SEED = Number(process.env.BATCH_KILL_SEED ?? Date.now() % 100000);
let rngState = SEED >>> 0;
function random(): number {
  rngState = (Math.imul(rngState, 1664525) + 1013904223) >>> 0;
  return rngState / 2 ** 32;
}

function runCli(args: string[], opts: { onSpawn?: (p: ReturnType<typeof spawn>) => void } = {}): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [DECIDE_BIN, 'batch', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr }));
    opts.onSpawn?.(proc);
  });
}

/** Rows lost and duplicated against the reference, by custom_id position; order checked separately. */
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

beforeAll(async () => {
  await decideBin();
  ({ dir: workDir, modelsDir } = await tempWorkspace('batch-crash'));
  // ~280 rows: good records with the mixed file's bad ones in the middle.
  const mixed = mixedFile().text.trimEnd().split('\n');
  const lines = [...goodLines(120, 11, 'a'), ...mixed, ...goodLines(120, 12, 'b')];
  inputPath = path.join(workDir, 'input.jsonl');
  await writeFile(inputPath, `${lines.join('\n')}\n`);
  const out = path.join(workDir, 'reference.jsonl');
  const ref = await runCli([inputPath, '--model', 'svc-alpha', '--out', out, '--models-dir', modelsDir]);
  expect(ref.code, ref.stderr).toBe(0);
  reference = parseRows(await readFile(out, 'utf8'));
  expect(reference.length).toBe(lines.filter((l) => l.trim() !== '').length);
  console.log(`batch crash tests: seed ${SEED} (BATCH_KILL_SEED=${SEED} replays), ${reference.length} rows`);
});

afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

describe('decide serve killed with SIGKILL mid-job', () => {
  it('resumes after every kill; the results hold every row exactly once, in order, with the uninterrupted answers', async () => {
    const dataDir = path.join(workDir, 'server-data');
    const env = { DECIDE_API_KEYS: 'key-k', DECIDE_BATCH_CHUNK_RECORDS: '8' };
    let server = await startServer({ dataDir, modelsDir, env });
    let api = client(server.url, 'key-k');
    const created = await api.create({ model: 'svc-alpha', file: await readFile(inputPath) });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const total = created.body.progress.total;
    expect(total).toBe(reference.length);

    const kills: Array<{ atRows: number; afterMs: number }> = [];
    const plannedKills = 4;
    try {
      for (let k = 0; k < plannedKills; k++) {
        // Kill once the job has passed a random row, after a random extra delay: anywhere inside a
        // chunk (scoring, writing, fsyncing, committing).
        const { body } = await api.get(id);
        const done = body.progress.completed + body.progress.failed;
        if (body.status === 'completed') break;
        const remaining = total - done;
        const target = done + Math.floor(random() * remaining * (1 / (plannedKills - k + 1)));
        let now = done;
        while (now < target) {
          const res = await api.get(id);
          now = res.body.progress.completed + res.body.progress.failed;
          if (res.body.status === 'completed') break;
          await new Promise((r) => setTimeout(r, 5));
        }
        const delay = Math.floor(random() * 60);
        await new Promise((r) => setTimeout(r, delay));
        const before = await api.get(id);
        if (before.body.status === 'completed') break;
        await server.kill();
        kills.push({ atRows: before.body.progress.completed + before.body.progress.failed, afterMs: delay });
        server = await startServer({ dataDir, modelsDir, env });
        api = client(server.url, 'key-k');
      }
      const final = await api.waitFor(id, ['completed', 'failed'], 120_000);
      expect(final.status).toBe('completed');
      const rows = parseRows((await api.results(id)).text);
      const result = compare(rows, reference);
      console.log(
        `server kill test: ${kills.length} SIGKILLs at rows ${kills.map((x) => x.atRows).join(', ')} of ${total}; ` +
          `${rows.length} rows in the results (reference ${reference.length}), lost ${result.lost}, duplicated ${result.duplicated}, ` +
          `in order: ${result.inOrder}, max |dp| ${result.worst.toExponential(2)}`,
      );
      expect(kills.length).toBeGreaterThanOrEqual(3);
      expect(result).toMatchObject({ lost: 0, duplicated: 0, inOrder: true });
      // Probabilities are rounded to 6 decimals: one rounding step is the most two batch layouts may differ by.
      expect(result.worst).toBeLessThanOrEqual(1e-6 + 1e-12);
      expect(final.progress).toEqual({
        total,
        completed: reference.filter((r) => !r.error).length,
        failed: reference.filter((r) => r.error).length,
      });
    } finally {
      await server.stop();
    }
  });
});

describe('decide batch (CLI)', () => {
  it('runs a file: summary on stdout, rows in order, no state file left', async () => {
    const { text, expected } = mixedFile();
    const input = path.join(workDir, 'mixed.jsonl');
    const out = path.join(workDir, 'mixed-out.jsonl');
    await writeFile(input, text);
    const res = await runCli([input, '--model', 'svc-alpha', '--out', out, '--models-dir', modelsDir]);
    expect(res.code, res.stderr).toBe(0);
    const failed = expected.filter((e) => e.code).length;
    expect(res.stdout).toMatch(new RegExp(`${expected.length} rows, ${expected.length - failed} completed, ${failed} failed; .* decisions/s`));
    expect(res.stderr).toMatch(/rows \(100\.0%\)/);
    const rows = parseRows(await readFile(out, 'utf8'));
    expect(rows.map((r) => ({ custom_id: r.custom_id, code: r.error?.code }))).toEqual(expected.map((e) => ({ custom_id: e.custom_id, code: e.code })));
    expect(existsSync(`${out}.state.json`)).toBe(false);
  });

  it('resumes an interrupted run (SIGKILL, then SIGINT) to the same final output', async () => {
    const out = path.join(workDir, 'cli-out.jsonl');
    const state = `${out}.state.json`;
    const args = [inputPath, '--model', 'svc-alpha', '--out', out, '--models-dir', modelsDir];
    const interruptions: string[] = [];
    // The run that finishes the output: a later interrupted run may instead run to the end
    // before its signal lands (the engine is fast on the tiny model); then it is the last one.
    let finishing: Awaited<ReturnType<typeof runCli>> | undefined;
    for (const signal of ['SIGKILL', 'SIGINT'] as const) {
      let stopAt = -1;
      const before = await readFile(state, 'utf8').then(
        (t) => {
          const p = (JSON.parse(t) as { progress: { completed: number; failed: number } }).progress;
          return p.completed + p.failed;
        },
        () => 0,
      );
      const res = await runCli(args, {
        onSpawn: (proc) => {
          // Interrupt once a random number of further rows is committed (read from the state file).
          const want = before + 1 + Math.floor(random() * (reference.length - before) * 0.5);
          const timer = setInterval(() => {
            void readFile(state, 'utf8').then(
              (t) => {
                const p = (JSON.parse(t) as { progress: { completed: number; failed: number } }).progress;
                if (p.completed + p.failed >= want && stopAt < 0) {
                  stopAt = p.completed + p.failed;
                  clearInterval(timer);
                  proc.kill(signal);
                }
              },
              () => undefined,
            );
          }, 5);
          proc.on('exit', () => clearInterval(timer));
        },
      });
      if (res.code === 0) {
        finishing = res; // finished before the interruption landed
        break;
      }
      interruptions.push(`${signal} at row ${stopAt}`);
      if (signal === 'SIGINT') {
        expect(res.code).toBe(130);
        expect(res.stderr).toMatch(/interrupted at row \d+ of \d+; run the same command again to resume/);
      } else {
        expect(res.signal).toBe('SIGKILL');
      }
      expect(existsSync(state)).toBe(true);
    }
    const last = finishing ?? (await runCli(args));
    expect(last.code, last.stderr).toBe(0);
    if (interruptions.length > 0) expect(last.stderr).toMatch(/resuming at row \d+ of \d+/);
    const rows = parseRows(await readFile(out, 'utf8'));
    const result = compare(rows, reference);
    console.log(`CLI resume test: interrupted by ${interruptions.join(', ') || 'nothing'}; ${rows.length} rows, lost ${result.lost}, duplicated ${result.duplicated}, max |dp| ${result.worst.toExponential(2)}`);
    expect(interruptions.length).toBeGreaterThanOrEqual(1);
    expect(result).toMatchObject({ lost: 0, duplicated: 0, inOrder: true });
    expect(result.worst).toBeLessThanOrEqual(1e-6 + 1e-12);
    expect(existsSync(state)).toBe(false);
  });

  it('never overwrites a finished --out unasked: without a terminal it refuses unless --force', async () => {
    const input = path.join(workDir, 'small.jsonl');
    const out = path.join(workDir, 'small-out.jsonl');
    await writeFile(input, `${goodLines(3, 21, 's').join('\n')}\n`);
    const args = [input, '--model', 'svc-alpha', '--out', out, '--models-dir', modelsDir];
    expect((await runCli(args)).code).toBe(0);
    await writeFile(out, 'the finished results\n');
    const again = await runCli(args);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`${out} already exists and no unfinished run of it was found; give --force to overwrite it, or choose another --out`);
    expect(await readFile(out, 'utf8')).toBe('the finished results\n');
    const forced = await runCli([...args, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(parseRows(await readFile(out, 'utf8')).map((r) => r.custom_id)).toEqual(['s-0', 's-1', 's-2']);
  });

  it('refuses to resume with different questions, saying so', async () => {
    const out = path.join(workDir, 'questions-out.jsonl');
    const questions = path.join(workDir, 'questions.json');
    await writeFile(questions, JSON.stringify({ q: { type: 'noul', instructions: 'Is it?' } }));
    const inputSha256 = createHash('sha256').update(await readFile(inputPath)).digest('hex');
    const progress = { inputOffset: 0, inputLine: 0, resultsBytes: 0, completed: 0, failed: 0 };
    await writeFile(`${out}.state.json`, JSON.stringify({ version: 1, inputSha256, model: 'svc-alpha-2026-10', questionsSha256: 'other', progress }));
    const res = await runCli([inputPath, '--model', 'svc-alpha', '--out', out, '--questions', questions, '--models-dir', modelsDir]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/belongs to an unfinished run with different questions; run that command again to finish it/);
  });

  it('refuses to resume with a different input, and explains usage errors', async () => {
    const out = path.join(workDir, 'other-out.jsonl');
    await writeFile(`${out}.state.json`, JSON.stringify({ version: 1, inputSha256: 'x', model: 'svc-alpha-2026-10', questionsSha256: null, progress: { inputOffset: 1 } }));
    const res = await runCli([inputPath, '--model', 'svc-alpha', '--out', out, '--models-dir', modelsDir]);
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
