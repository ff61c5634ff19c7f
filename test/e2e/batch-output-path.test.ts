/**
 * `decide batch --out` naming the input under another path (a symbolic link, a hard link): refused
 * before anything is opened for writing, even with --force, and the input keeps every byte. The
 * check runs before any model is loaded, so no models are needed there. And the files a run writes
 * (results, state) are mode 0600 whatever the umask, as the server keeps batch results. On a
 * terminal, the question before an existing --out is overwritten takes Ctrl-D as a no and Ctrl-C
 * as an interruption (130).
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { chmod, link, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tempModels } from '../api/fixtures.js';
import { decideBin, runDecide } from '../helpers/bin.js';
import { unprivilegedRun } from '../helpers/unprivileged.js';

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

describe('decide batch --out must be a file it can write', () => {
  it.each([
    ['missing/out.jsonl', /--out .*missing\/out\.jsonl: its folder .*missing does not exist/],
    ['.', /--out .*: is a folder; name the file to write/],
    ['/dev/null', /--out \/dev\/null: is not a regular file; name the file to write/],
    ['input.jsonl/out.jsonl', /--out .*input\.jsonl\/out\.jsonl: .*input\.jsonl is not a folder/],
  ])('--out %s: refused before any model loads, nothing written', async (name, message) => {
    const out = path.isAbsolute(name) ? name : path.join(scratch, name);
    const before = readdirSync(scratch).sort();
    const res = await batch([input, '--model', 'svc-alpha', '--models-dir', path.join(scratch, 'no-models'), '--out', out, '--force']);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toMatch(message);
    expect(readdirSync(scratch).sort()).toEqual(before);
  });
});

describe('the files decide batch writes', () => {
  it('the state file named after --out clashing with the input says to choose another --out', async () => {
    const out = path.join(scratch, 'clash.jsonl');
    await link(input, `${out}.state.json`);
    const res = await batch([input, '--model', 'svc-alpha', '--models-dir', path.join(scratch, 'no-models'), '--out', out, '--force']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/the state file .* is the input file .* under another name \(a link\); writing it would destroy the input\. Choose another --out\n/);
    expect(await readFile(input, 'utf8')).toBe(INPUT);
  });

  it('results are created 0600 under umask 000', async () => {
    const dirs = await tempModels(['svc-alpha-2026-10']);
    const before = process.umask(0o000);
    try {
      const out = path.join(scratch, 'private.jsonl');
      const res = await batch([input, '--model', 'svc-alpha', '--models-dir', dirs.modelsDir, '--threads', '1', '--out', out]);
      expect(res.code, res.stderr).toBe(0);
      expect(statSync(out).mode & 0o777).toBe(0o600);
      expect(JSON.parse(await readFile(out, 'utf8')).custom_id).toBe('a');
    } finally {
      process.umask(before);
      dirs.cleanup();
    }
  });
});

describe('decide batch --out this user may not write', () => {
  it('a read-only --out or folder is a usage error (exit 2) naming it, before the model loads, leaving nothing behind', async (ctx) => {
    // As nobody where this is root (root passes every permission check).
    const bin = await decideBin();
    const user = unprivilegedRun(ctx, bin);
    const place = await mkdtemp(path.join(os.tmpdir(), 'read-only-out-'));
    try {
      const open = path.join(place, 'open');
      const closed = path.join(place, 'closed');
      await mkdir(open);
      await mkdir(closed);
      const readOnlyOut = path.join(open, 'results.jsonl');
      await writeFile(readOnlyOut, '');
      await chmod(readOnlyOut, 0o444);
      await chmod(open, 0o777);
      await chmod(closed, 0o555);
      await chmod(place, 0o755);
      await chmod(input, 0o644);
      await chmod(scratch, 0o755);
      for (const [out, what] of [
        [readOnlyOut, 'the file'],
        [path.join(closed, 'results.jsonl'), `its folder ${closed}`],
      ] as const) {
        const res = await new Promise<{ code: number; stderr: string }>((resolve) => {
          const args = [bin, 'batch', input, '--model', 'svc-alpha', '--models-dir', path.join(place, 'never-read'), '--out', out, '--force'];
          execFile(process.execPath, args, { cwd: place, ...user }, (err, _stdout, stderr) => resolve({ code: err ? Number(err.code) : 0, stderr }));
        });
        expect(res.code, res.stderr).toBe(2);
        expect(res.stderr).toBe(`decide batch: --out ${out}: ${what} cannot be written (EACCES); choose another --out\n`);
      }
      expect((await readdir(open)).sort()).toEqual(['results.jsonl']);
      expect(await readdir(closed)).toEqual([]);
    } finally {
      await rm(place, { recursive: true, force: true });
    }
  });
});


describe('decide batch --questions saved by a Windows editor', () => {
  it('a byte-order mark and CRLF are read as the input file reads them', async () => {
    const dirs = await tempModels(['svc-alpha-2026-10']);
    try {
      const questions = path.join(scratch, 'bom-questions.json');
      await writeFile(questions, `\uFEFF${JSON.stringify({ fromFile: { type: 'noul', instructions: 'Is it?' } })}\r\n`);
      const bare = path.join(scratch, 'no-questions.jsonl');
      await writeFile(bare, `${JSON.stringify({ custom_id: 'b', state: 'hello' })}\n`);
      const out = path.join(scratch, 'bom.jsonl');
      const res = await batch([bare, '--questions', questions, '--model', 'svc-alpha', '--models-dir', dirs.modelsDir, '--threads', '1', '--out', out]);
      expect(res.code, res.stderr).toBe(0);
      expect(Object.keys(JSON.parse(await readFile(out, 'utf8')).answers)).toEqual(['fromFile']);
    } finally {
      dirs.cleanup();
    }
  });
});

describe('one decide batch run per --out file, whatever name it is given by', () => {
  // The first run's --questions is a named pipe: it holds its locks, waiting to read the questions,
  // until the test writes them, so the second run surely meets a live run.
  it.each([
    ['a symbolic link to --out', 'soft'],
    ['a hard link to an existing --out', 'hard'],
  ] as const)('a second run through %s is refused naming the first; the first finishes unharmed', async (_, kind) => {
    const dirs = await tempModels(['svc-alpha-2026-10']);
    const work = await mkdtemp(path.join(scratch, `lock-${kind}-`));
    try {
      const out = path.join(work, 'out.jsonl');
      const other = path.join(work, 'other-name.jsonl');
      if (kind === 'soft') await symlink(out, other);
      else {
        await writeFile(out, 'an earlier run\n');
        await link(out, other);
      }
      const pipe = path.join(work, 'questions.fifo');
      execFileSync('mkfifo', [pipe]);
      const models = ['--model', 'svc-alpha', '--models-dir', dirs.modelsDir, '--threads', '1', '--force'];
      const first = spawn(process.execPath, [await decideBin(), 'batch', input, '--out', out, '--questions', pipe, ...models], { stdio: ['ignore', 'ignore', 'pipe'] });
      let firstErr = '';
      first.stderr.on('data', (d: Buffer) => (firstErr += d.toString()));
      const firstCode = new Promise<number | null>((resolve) => first.on('exit', resolve));
      while (!existsSync(`${out}.lock`)) await new Promise((r) => setTimeout(r, 5));
      const second = await batch([input, '--out', other, ...models]);
      expect(second.code, second.stderr).toBe(1);
      expect(second.stderr).toContain(`is being written by another decide batch run (process ${first.pid})`);
      await writeFile(pipe, JSON.stringify({ q: { type: 'noul', instructions: 'Is it?' } }));
      expect(await firstCode, firstErr).toBe(0);
      expect(JSON.parse(await readFile(out, 'utf8')).custom_id).toBe('a');
      expect(readdirSync(work).sort()).toEqual(['other-name.jsonl', 'out.jsonl', 'questions.fifo']);
    } finally {
      dirs.cleanup();
    }
  });
});

describe('decide batch creates no model', () => {
  it('a --models-dir that does not exist is refused naming it, and is not created', async () => {
    const missing = path.join(scratch, 'mistyped-models');
    const out = path.join(scratch, 'no-model.jsonl');
    const res = await batch([input, '--model', 'svc-alpha', '--models-dir', missing, '--threads', '1', '--out', out]);
    expect(res.code, res.stderr).toBe(2);
    expect(res.stderr).toMatch(/^decide batch: model 'svc-alpha' is not installed; installed: \(none\) \(models dir .*mistyped-models; give --models-dir or DECIDE_MODELS_DIR\)\n$/);
    expect(existsSync(missing)).toBe(false);
    expect(existsSync(out)).toBe(false);
  });
});

let BIN_FOR_TERMINAL: string;
const hasScript = process.platform === 'linux' && (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/**
 * `decide batch` on a terminal (util-linux `script` gives it one), with an existing --out: `keys`
 * are typed once the overwrite question shows. Resolves with the exit code and what the terminal showed.
 */
function askedOnTerminal(out: string, keys: string): Promise<{ code: number | null; screen: string }> {
  const command = [process.execPath, BIN_FOR_TERMINAL, 'batch', input, '--model', 'svc-alpha', '--models-dir', path.join(scratch, 'no-models'), '--out', out]
    .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
    .join(' ');
  return new Promise((resolve, reject) => {
    const term = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let screen = '';
    let typed = false;
    const timer = setTimeout(() => {
      term.kill('SIGKILL');
      reject(new Error(`no answer in time; the terminal showed: ${JSON.stringify(screen)}`));
    }, 30_000);
    const read = (d: Buffer) => {
      screen += d.toString();
      if (!typed && screen.includes('Overwrite it? [y/N] ')) {
        typed = true;
        term.stdin.write(keys);
      }
    };
    term.stdout.on('data', read);
    term.stderr.on('data', read);
    term.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, screen });
    });
  });
}

describe.skipIf(!hasScript)('the overwrite question on a terminal', () => {
  beforeAll(async () => {
    BIN_FOR_TERMINAL = await decideBin();
  });

  it.each([
    ['n and Enter', 2, 'n\r', /decide batch: .*asked\.jsonl left as it is\r\n$/],
    ['Ctrl-D (end of input): the same no', 2, '\x04', /decide batch: .*asked\.jsonl left as it is\r\n$/],
    ['Ctrl-C: the usual interruption', 130, '\x03', /decide batch: SIGINT: .*asked\.jsonl left as it is\r\n$/],
  ])('%s: exit %i, --out untouched, no readline text', async (_, code, keys, last) => {
    const out = path.join(scratch, 'asked.jsonl');
    await writeFile(out, 'the finished results\n');
    const res = await askedOnTerminal(out, keys);
    expect(res.code, res.screen).toBe(code);
    expect(res.screen).toMatch(last);
    expect(res.screen).not.toMatch(/Aborted/);
    expect(await readFile(out, 'utf8')).toBe('the finished results\n');
    expect(existsSync(`${out}.state.json`)).toBe(false);
  }, 40_000);
});
