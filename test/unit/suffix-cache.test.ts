/**
 * The suffix cache (src/runtime/suffix-cache.ts): one tokenization per question content, bounded in
 * bytes with the least recently used out first, so that questions of a megabyte each (refused for
 * the context anyway) cannot pin memory by their number; failures are not kept.
 */
import { expect, it } from 'vitest';

import { SuffixCache, type SuffixTokens } from '../../src/runtime/suffix-cache.js';

const suffix = (tokens: number): SuffixTokens => ({ tokens: new Int32Array(tokens), labels: Int32Array.of(1, 2), shown: ['A', 'B'] });

function counting(cache: SuffixCache) {
  const made: string[] = [];
  const get = (content: string, tokens = 1000) =>
    cache.get(content, async () => {
      made.push(content);
      return suffix(tokens);
    });
  return { made, get };
}

it('makes each question once and answers the same suffix after', async () => {
  const { made, get } = counting(new SuffixCache());
  const first = await get('q1');
  expect(await get('q1')).toBe(first);
  expect(made).toEqual(['q1']);
});

it('stays within its bytes, the least recently used out first', async () => {
  const cache = new SuffixCache(20_000); // room for four 4 KB suffixes
  const { made, get } = counting(cache);
  for (const q of ['a', 'b', 'c', 'd']) await get(q);
  await get('a'); // now the most recent
  await get('e'); // one over: 'b', the least recent, goes
  expect(cache.bytes).toBeLessThanOrEqual(20_000);
  await get('a');
  await get('b');
  expect(made).toEqual(['a', 'b', 'c', 'd', 'e', 'b']);
});

it('does not keep a suffix larger than the whole budget, yet answers it', async () => {
  const cache = new SuffixCache(20_000);
  const { made, get } = counting(cache);
  await get('small');
  expect((await get('huge', 1_000_000)).tokens.length).toBe(1_000_000);
  expect(cache.bytes).toBeLessThanOrEqual(20_000);
  await get('huge', 1_000_000);
  expect(made.filter((q) => q === 'huge')).toHaveLength(2);
});

it('does not keep a failure: the next ask makes it again', async () => {
  const cache = new SuffixCache();
  let calls = 0;
  const make = async () => {
    calls += 1;
    if (calls === 1) throw new Error('tokenizer gone');
    return suffix(3);
  };
  await expect(cache.get('q', make)).rejects.toThrow('tokenizer gone');
  await new Promise((r) => setImmediate(r));
  expect((await cache.get('q', make)).tokens.length).toBe(3);
  expect(calls).toBe(2);
});
