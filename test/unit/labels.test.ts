import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeLabels, DIGITS, LabelSet, LETTERS, type LabelTokenizer } from '../../src/runtime/labels.js';
import { PromptRenderer } from '../../src/runtime/prompt.js';
import { TextTokenizer } from '../../src/runtime/tokenizer.js';
import { makeTokenizerDir, type TokenizerDir } from '../helpers/tokenizer-dir.js';

let model: TokenizerDir;
let tok: TextTokenizer;
let labels: LabelSet;

beforeAll(async () => {
  model = await makeTokenizerDir();
  tok = await TextTokenizer.load(model.dir);
  const renderer = await PromptRenderer.load(model.dir);
  labels = await LabelSet.build(tok, { context: renderer.labelContext });
});
afterAll(() => model.cleanup());

function score(...keys: string[]) {
  return { type: 'score' as const, options: keys.map((key) => ({ key })) };
}

/** Greedy longest-match tokenizer over a small vocabulary; any other character is its own token. */
function fakeTokenizer(vocab: Record<string, number>, split: string[] = []): LabelTokenizer {
  const entries = Object.entries(vocab).sort((a, b) => b[0].length - a[0].length);
  return {
    async encode(text: string) {
      const ids: number[] = [];
      for (let i = 0; i < text.length; ) {
        const hit = entries.find(([s]) => text.startsWith(s, i));
        if (hit) {
          ids.push(hit[1]);
          i += hit[0].length;
        } else {
          const ch = text[i]!;
          ids.push(1000 + ch.charCodeAt(0));
          if (split.includes(ch)) ids.push(999); // this character takes two tokens
          i += 1;
        }
      }
      return Int32Array.from(ids);
    },
  };
}

describe('LabelSet on the Qwen3 tokenizer', () => {
  it('uses single-token letters A..Z and the no / yes tokens', async () => {
    expect(Array.from(labels.letterIds)).toEqual(LETTERS.map((l) => tok.tokenToId(l)));
    expect(labels.noul.labels).toEqual(['no', 'yes']);
    expect(Array.from(labels.noul.labelIds)).toEqual([tok.tokenToId('no'), tok.tokenToId('yes')]);
    for (const [i, letter] of LETTERS.entries()) {
      expect(Array.from(await tok.encode(letter))).toEqual([labels.letterIds[i]]);
    }
  });

  it('labels choice options with letters in option order', async () => {
    const q = { type: 'choice' as const, options: ['x', 'y', 'z'].map((key) => ({ key })) };
    const l = await labels.forQuestion(q);
    expect(l.labels).toEqual(['A', 'B', 'C']);
    expect(Array.from(l.labelIds)).toEqual([32, 33, 34]);
    const all = await labels.forQuestion({ type: 'choice', options: LETTERS.map((key) => ({ key: key.toLowerCase() })) });
    expect(all.labels).toEqual([...LETTERS]);
    expect(new Set(all.labelIds).size).toBe(26);
  });

  it('labels noul with no / yes', async () => {
    const l = await labels.forQuestion({ type: 'noul', options: [{ key: 'no' }, { key: 'yes' }] });
    expect(l.labels).toEqual(['no', 'yes']);
    expect(Array.from(l.labelIds)).toEqual([2152, 9693]);
    await expect(labels.forQuestion({ type: 'noul', options: [{ key: 'yes' }, { key: 'no' }] })).rejects.toThrow(/\[no, yes\]/);
  });

  it('labels score with the level keys when each is one token, else with letters', async () => {
    const digits = await labels.forQuestion(score('0', '1', '2', '3', '4', '5', '6', '7', '8', '9'));
    expect(digits.labels).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    expect(Array.from(digits.labelIds)).toEqual([15, 16, 17, 18, 19, 20, 21, 22, 23, 24]);
    for (const keys of [['0', '5', '10'], ['-1', '0', '1'], ['1', '2.5', '4']]) {
      const l = await labels.forQuestion(score(...keys));
      expect(l.labels).toEqual(LETTERS.slice(0, keys.length));
      expect(Array.from(l.labelIds)).toEqual(Array.from(labels.letterIds.slice(0, keys.length)));
    }
  });

  it('labels 27 to 255 options with the two-token codes A0..Z4, letter ids and digit ids', async () => {
    expect(labels.codeProblem).toBeUndefined();
    const options = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `o${i}` }));
    const l27 = await labels.forQuestion({ type: 'choice', options: options(27) });
    expect(l27.labels).toEqual(codeLabels(27));
    expect(l27.labels.slice(-3)).toEqual(['C4', 'C5', 'C6']);
    expect(Array.from(l27.codes!.letterIds)).toEqual(['A', 'B', 'C'].map((c) => tok.tokenToId(c)));
    expect(Array.from(l27.codes!.digitIds)).toEqual(DIGITS.map((d) => tok.tokenToId(d)));
    expect(l27.codes!.count).toBe(27);
    const l255 = await labels.forQuestion({ type: 'choice', options: options(255) });
    expect(l255.labels.at(-1)).toBe('Z4');
    expect(new Set(l255.labels).size).toBe(255);
    expect(l255.codes!.letterIds).toHaveLength(26);
    // Score levels past 26 that are not single tokens get codes too; 26 and fewer never do.
    expect((await labels.forQuestion(score(...Array.from({ length: 30 }, (_, i) => String(i * 10))))).labels).toEqual(codeLabels(30));
    expect((await labels.forQuestion({ type: 'choice', options: options(26) })).codes).toBeUndefined();
    await expect(labels.forQuestion({ type: 'choice', options: options(256) })).rejects.toThrow(/256 options; labels cover 1 to 255/);
  });

  it('returns copies: callers cannot change the shared ids', async () => {
    const l = await labels.forQuestion({ type: 'noul', options: [{ key: 'no' }, { key: 'yes' }] });
    l.labelIds[0] = -1;
    expect(labels.noul.labelIds[0]).toBe(2152);
  });
});

describe('LabelSet.build checks the tokenizer', () => {
  it('falls back to " no" / " yes" when only those are single tokens', async () => {
    const l = await LabelSet.build(fakeTokenizer({ ' no': 1, ' yes': 2 }));
    expect(l.noul.labels).toEqual(['no', 'yes']);
    expect(Array.from(l.noul.labelIds)).toEqual([1, 2]);
  });

  it('prefers "no" / "yes" when they are single tokens', async () => {
    const l = await LabelSet.build(fakeTokenizer({ no: 5, yes: 6, ' no': 1, ' yes': 2 }));
    expect(Array.from(l.noul.labelIds)).toEqual([5, 6]);
  });

  it('names the letter that is not a single token', async () => {
    await expect(LabelSet.build(fakeTokenizer({ no: 5, yes: 6 }, ['Q']))).rejects.toThrow(/the label "Q" is not a single token/);
  });

  it('names no or yes when neither spelling is a single token', async () => {
    await expect(LabelSet.build(fakeTokenizer({ no: 5 }))).rejects.toThrow(/the label "yes" is not a single token/);
    await expect(LabelSet.build(fakeTokenizer({}))).rejects.toThrow(/the label "no" is not a single token/);
  });

  it('names the code a tokenizer breaks, keeps serving 26 options and refuses more', async () => {
    const merged = await LabelSet.build(fakeTokenizer({ no: 5, yes: 6, B7: 7 }));
    expect(merged.codeProblem).toMatch(/breaks the code "B7": it encodes to 1 tokens after the prompt \(7\)/);
    const options = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `o${i}` }));
    expect((await merged.forQuestion({ type: 'choice', options: options(26) })).labels).toEqual([...LETTERS]);
    await expect(merged.forQuestion({ type: 'choice', options: options(27) })).rejects.toThrow(/"B7"/);
    const split = await LabelSet.build(fakeTokenizer({ no: 5, yes: 6 }, ['3']));
    expect(split.codeProblem).toMatch(/breaks the code "A3": it encodes to 3 tokens/);
    expect((await LabelSet.build(fakeTokenizer({ no: 5, yes: 6, Z9: 99 }))).codeProblem).toMatch(/"Z9"/);
    expect((await LabelSet.build(fakeTokenizer({ no: 5, yes: 6 }))).codeProblem).toBeUndefined();
  });

  it('checks labels in context: a token that merges with the context does not count', async () => {
    // "A" merges with a trailing ":" of the context, so it is not one token at that position.
    const t = fakeTokenizer({ no: 5, yes: 6, ':A': 7 });
    await expect(LabelSet.build(t, { context: 'Answer:' })).rejects.toThrow(/the label "A" is not a single token/);
    await expect(LabelSet.build(t, { context: 'Answer: ' })).resolves.toBeInstanceOf(LabelSet);
  });
});
