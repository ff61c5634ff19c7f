import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TextTokenizer } from '../../src/runtime/tokenizer.js';
import { makeTokenizerDir, type TokenizerDir } from '../helpers/tokenizer-dir.js';

let model: TokenizerDir;
let tok: TextTokenizer;

beforeAll(async () => {
  model = await makeTokenizerDir();
  tok = await TextTokenizer.load(model.dir);
});
afterAll(() => model.cleanup());

describe('TextTokenizer (Qwen3 tokenizer.json)', () => {
  it('encodes to an Int32Array without adding special tokens', async () => {
    const ids = await tok.encode('hello world');
    expect(ids).toBeInstanceOf(Int32Array);
    expect(Array.from(ids)).toEqual([14990, 1879]);
    expect(Array.from(await tok.encode(''))).toEqual([]);
  });

  it('maps special tokens written as text to their ids', async () => {
    expect(Array.from(await tok.encode('<|im_start|>user\n'))).toEqual([151644, 872, 198]);
    expect(tok.tokenToId('<|im_end|>')).toBe(151645);
  });

  it('decodes back to the same text, special tokens included', async () => {
    const text = '<|im_start|>assistant\n<think>\n\n</think>\n\nA – ü 😀';
    expect(await tok.decode(await tok.encode(text))).toBe(text);
  });

  it('exposes the vocabulary', () => {
    expect(tok.vocabSize).toBe(151669);
    expect(tok.tokenToId('A')).toBe(32);
    expect(tok.idToToken(32)).toBe('A');
    expect(tok.tokenToId('no such token at all')).toBeUndefined();
    expect(tok.idToToken(10_000_000)).toBeUndefined();
  });

  it('fails clearly when tokenizer.json is missing', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'decision-empty-'));
    try {
      await expect(TextTokenizer.load(empty)).rejects.toThrow(/no tokenizer: .*tokenizer\.json is missing/);
    } finally {
      await rm(empty, { recursive: true, force: true });
    }
  });
});
