/**
 * TokenizerThread, the service's tokenizer: the same ids as TextTokenizer (the same code, in a
 * worker thread), the event loop free while a full-size tokenizer loads, the load's errors (a
 * thread that could not start, with its reason), close, and a worker that died started again by
 * the next call.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TokenizerThread } from '../../src/runtime/tokenizer-thread.js';
import { TextTokenizer } from '../../src/runtime/tokenizer.js';
import { makeTokenizerDir, type TokenizerDir } from '../helpers/tokenizer-dir.js';

let model: TokenizerDir;
let here: TextTokenizer;

beforeAll(async () => {
  model = await makeTokenizerDir();
  here = await TextTokenizer.load(model.dir);
});
afterAll(() => model.cleanup());

const TEXTS = ['', 'hello world', '<|im_start|>user\nWhere is my parcel?<|im_end|>\n', 'A – ü 😀 \u2060 تست 测试', `${'lorem ipsum dolor '.repeat(2000)}end`];

describe('TokenizerThread (the full Qwen3 tokenizer in a worker)', () => {
  it('gives the ids TextTokenizer gives, for concurrent calls too, while the event loop keeps turning during the load', async () => {
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 10);
    let thread: TokenizerThread;
    try {
      thread = await TokenizerThread.load(model.dir);
    } finally {
      clearInterval(timer);
    }
    // Building this tokenizer is about a second of JavaScript; on this thread no timer would fire meanwhile.
    expect(ticks).toBeGreaterThanOrEqual(10);
    try {
      const ids = await Promise.all(TEXTS.map((t) => thread.encode(t)));
      for (const [i, text] of TEXTS.entries()) {
        expect(ids[i]).toBeInstanceOf(Int32Array);
        expect(Array.from(ids[i]!), text.slice(0, 30)).toEqual(Array.from(await here.encode(text)));
      }
    } finally {
      thread.close();
    }
  });

  it('rejects a model without tokenizer.json with TextTokenizer\'s error', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'decision-empty-'));
    try {
      await expect(TokenizerThread.load(empty)).rejects.toMatchObject({ name: 'EngineError', code: 'ERR_MODEL_LOAD', message: expect.stringMatching(/no tokenizer: .*tokenizer\.json is missing/) });
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('a thread that cannot start (the working directory was deleted) fails the load with its reason, not only its exit code', async () => {
    const script = fileURLToPath(new URL('fixtures/tokenizer-in-deleted-cwd.ts', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script, model.dir], { cwd: fileURLToPath(new URL('../..', import.meta.url)) });
    // Node's own wording of the cwd error differs by line (24: 'process.cwd failed with error no
    // such file or directory, ...'); what matters is that it is carried through.
    expect(stdout.trim()).toMatch(/^tokenizer thread: it stopped \(exit code 1: ENOENT: .*no such file or directory.*uv_cwd\) before the tokenizer loaded$/);
  });

  it('after close() every call is refused, the ones waiting included; a worker that died is started again by the next call', async () => {
    const thread = await TokenizerThread.load(model.dir);
    const expected = Array.from(await here.encode('hello world'));
    // The worker ends under it (a crash, say): the next call starts another and answers.
    await (thread as unknown as { thread: { worker: { terminate(): Promise<number> } } }).thread.worker.terminate();
    expect(Array.from(await thread.encode('hello world'))).toEqual(expected);

    const waiting = thread.encode('lorem ipsum '.repeat(20_000));
    thread.close();
    await expect(waiting).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
    await expect(thread.encode('hello')).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
  });
});
