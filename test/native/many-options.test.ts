/**
 * Questions with more than 26 options (two-token codes A0..Z4, src/runtime/code-scoring.ts), on
 * the CPU in fp32, against a brute-force oracle: for every code, the fresh causal row
 * prompt + letter + digit run through the onnxruntime-node JS API (never the engine), its
 * log p(letter | prompt) + log p(digit | prompt, letter), then a softmax over the codes. The
 * engine's one call must give the same probabilities within 1e-5, on the tiny preset (forked rows
 * and packed rows), the small preset and the transformers-made Qwen3 fixture (no tokenizer: token
 * ids straight into the same group layout). Also: a question alone equals it inside a busier call
 * (1e-6), 26 options and fewer are scored exactly as before (the same group, bit for bit), and the
 * order sensitivity under reversed options is printed (a random model's; not asserted).
 */
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { importModel } from '../../src/models/import/import-model.js';
import { makeModel } from '../../src/models/builder/make-model.js';
import { answerFromLogits } from '../../src/runtime/calibrate.js';
import { codeGroup, codeLogProbs } from '../../src/runtime/code-scoring.js';
import { codeLabels, DIGITS, LETTERS, type CodeIds } from '../../src/runtime/labels.js';
import { ModelRuntime, type PreparedRequest } from '../../src/runtime/model-runtime.js';
import { PromptRenderer } from '../../src/runtime/prompt.js';
import { TextTokenizer } from '../../src/runtime/tokenizer.js';
import type { NormalizedDecideRequest, NormalizedQuestion } from '../../src/domain/decision.js';
import { lastPositionLogits } from '../helpers/last-position-reference.js';
import { releaseReferenceSessions } from '../helpers/reference.js';
import { tokenIds } from '../helpers/score-compare.js';
import { tinyModelDir } from '../helpers/tiny-model.js';
import { HF_TINY } from '../helpers/fixtures.js';

const HF_QWEN3 = path.join(HF_TINY, 'qwen3');

function logSumExp(values: ArrayLike<number>): number {
  let max = -Infinity;
  for (let i = 0; i < values.length; i++) max = Math.max(max, values[i]!);
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += Math.exp(values[i]! - max);
  return max + Math.log(sum);
}

function softmax(values: ArrayLike<number>): Float64Array {
  const lse = logSumExp(values);
  return Float64Array.from(values as ArrayLike<number>, (v) => Math.exp(v - lse));
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

/**
 * The oracle: P(code k) for k < count by brute force. The fresh row of code k is
 * prompt ++ [letter, digit]; being causal, its logits at the letter's position are those at the
 * last position of the row prompt ++ [letter], and its logits at the prompt's last token those of
 * the row prompt. So each code reads two fresh rows; the rows of codes sharing a letter are the same
 * rows, computed once (27 full forwards for 255 codes instead of 510 identical ones).
 */
async function bruteForceProbs(modelDir: string, prompt: Int32Array, codes: CodeIds): Promise<Float64Array> {
  const atPrompt = await lastPositionLogits(modelDir, prompt);
  const promptLse = logSumExp(atPrompt);
  const joint = new Float64Array(codes.count);
  let row: Float32Array | undefined;
  let rowLse = 0;
  for (let k = 0; k < codes.count; k++) {
    const letter = codes.letterIds[Math.floor(k / 10)]!;
    const digit = codes.digitIds[k % 10]!;
    if (k % 10 === 0) {
      row = await lastPositionLogits(modelDir, Int32Array.from([...prompt, letter]));
      rowLse = logSumExp(row);
    }
    joint[k] = atPrompt[letter]! - promptLse + (row![digit]! - rowLse);
  }
  return softmax(joint);
}

/**
 * The code group of 255 codes after a prompt of random token ids (`state` then `question` tokens),
 * scored by the engine in one call, against the oracle; returns the worst difference.
 */
async function codeOracleGap(engine: Engine, dir: string, state: number, question: number): Promise<number> {
  const vocab = engine.info.vocabSize;
  const distinct = (seed: number, n: number) => {
    const seen = new Set<number>();
    for (const id of tokenIds(seed, 4 * n, vocab)) if (seen.size < n) seen.add(id);
    return Int32Array.from(seen);
  };
  const codes: CodeIds = { letterIds: distinct(3, 26), digitIds: distinct(4, 10), count: 255 };
  const prefix = Int32Array.from(tokenIds(1, state, vocab));
  const suffix = Int32Array.from(tokenIds(2, question, vocab));
  const [scores] = await engine.score([codeGroup(prefix, suffix, codes)]);
  const onePass = softmax(codeLogProbs(scores!, codes));
  const gap = maxAbsDiff(onePass, await bruteForceProbs(dir, Int32Array.from([...prefix, ...suffix]), codes));
  console.log(`${path.basename(dir)}: codeGroup vs brute force, 255 codes after ${state + question} tokens: max |p - p_oracle| = ${gap.toExponential(2)}`);
  return gap;
}

function choice(id: string, n: number, order: 'forward' | 'reversed' = 'forward'): NormalizedQuestion {
  const keys = Array.from({ length: n }, (_, i) => i);
  if (order === 'reversed') keys.reverse();
  return {
    id,
    type: 'choice',
    instructions: 'Which intent does the message express?',
    options: keys.map((i, at) => ({ key: `intent_${i}`, description: `intent ${i}`, criteriaIndex: at })),
  };
}

function request(stateText: string, questions: NormalizedQuestion[]): NormalizedDecideRequest {
  return { model: 'm', stateText, questions };
}

const STATE = 'Customer: my card payment was declined twice at the same shop today.';

/** Tokenizer, renderer and label ids read directly (not through LabelSet), to rebuild prompts independently. */
async function promptTools(dir: string) {
  const tokenizer = await TextTokenizer.load(dir);
  const renderer = await PromptRenderer.load(dir);
  const ids = (tokens: readonly string[]) => Int32Array.from(tokens, (t) => tokenizer.tokenToId(t)!);
  return {
    tokenizer,
    renderer,
    codes: (n: number): CodeIds => ({ letterIds: ids(LETTERS.slice(0, Math.ceil(n / 10))), digitIds: ids(DIGITS), count: n }),
    async prompt(state: string, q: NormalizedQuestion): Promise<Int32Array> {
      const prefix = await tokenizer.encode(renderer.renderPrefix(state));
      const suffix = await tokenizer.encode(renderer.renderSuffix(q, codeLabels(q.options.length)));
      return Int32Array.from([...prefix, ...suffix]);
    },
  };
}

/** Scores requests in one runtime call; per request, per question: [option key -> probability] from the raw scores. */
async function probsByKey(runtime: ModelRuntime, requests: NormalizedDecideRequest[]): Promise<Array<Array<Map<string, number>>>> {
  const prepared = await Promise.all(requests.map((r) => runtime.prepare(r)));
  const scored = await runtime.score(prepared);
  return scored.map((s, i) =>
    s.raw.map((raw, j) => {
      const p = softmax(raw.labelLogits);
      return new Map(requests[i]!.questions[j]!.options.map((o, k) => [o.key, p[k]!]));
    }),
  );
}

/**
 * The oracle against the runtime's one pass for questions of `sizes` options; returns the worst
 * difference. `dir`: a graph without segment ids holding the runtime's weights (the oracle's rows).
 */
async function oracleGap(runtime: ModelRuntime, dir: string, sizes: number[]): Promise<number> {
  const tools = await promptTools(dir);
  let worst = 0;
  for (const n of sizes) {
    const q = choice('q', n);
    const prepared = await runtime.prepare(request(STATE, [q]));
    expect(prepared.codeGroups).toHaveLength(1);
    const [scored] = await runtime.score([prepared]);
    const raw = scored!.raw[0]!;
    expect(raw.labels).toEqual(codeLabels(n));
    const oracle = await bruteForceProbs(dir, await tools.prompt(STATE, q), tools.codes(n));
    const onePass = softmax(raw.labelLogits);
    worst = Math.max(worst, maxAbsDiff(onePass, oracle));
    // The rounded answer too: 6 decimals, so within 1e-5 + 5e-7 of the oracle.
    const answer = scored!.answers.q!;
    worst = Math.max(worst, maxAbsDiff(q.options.map((o) => answer.probs[o.key]!), oracle) - 5e-7);
  }
  console.log(`${runtime.id}: one pass vs brute force, ${sizes.join(' and ')} options: max |p - p_oracle| = ${worst.toExponential(2)}`);
  return worst;
}

describe('more than 26 options on the tiny preset', () => {
  let dir: string;
  let packedDir: string;
  let forked: ModelRuntime;
  let packed: ModelRuntime;

  beforeAll(async () => {
    dir = await tinyModelDir();
    packedDir = await tinyModelDir({ segmentIds: true });
    forked = await ModelRuntime.load('tiny', dir);
    packed = await ModelRuntime.load('tiny-packed', packedDir, { engine: { packSuffixes: true } });
  });
  afterAll(() => {
    forked?.close();
    packed?.close();
  });

  it('the load-time check passes: every code is its letter and digit token after the prompt', async () => {
    const tools = await promptTools(dir);
    const ctx = tools.renderer.labelContext;
    const ctxIds = await tools.tokenizer.encode(ctx);
    const codes = tools.codes(255);
    for (const [k, code] of codeLabels(255).entries()) {
      const ids = Array.from(await tools.tokenizer.encode(ctx + code));
      expect(ids).toEqual([...ctxIds, codes.letterIds[Math.floor(k / 10)], codes.digitIds[k % 10]]);
    }
  });

  it('equals the brute-force oracle within 1e-5 (forked rows; the state computed, then cached)', async () => {
    expect(await oracleGap(forked, dir, [255, 27])).toBeLessThan(1e-5);
    // The same question again: now its whole prompt comes from the prefix cache.
    expect(await oracleGap(forked, dir, [255])).toBeLessThan(1e-5);
  });

  it('equals the brute-force oracle within 1e-5 (packed rows, the branches in the prefill row)', async () => {
    expect(packed.engine.info.packsSuffixes).toBe(true);
    expect(await oracleGap(packed, dir, [255, 27])).toBeLessThan(1e-5);
  });

  it('a question alone equals it inside a busier call within 1e-6', async () => {
    for (const runtime of [forked, packed]) {
      runtime.engine.clearPrefixCache();
      const [[alone]] = await probsByKey(runtime, [request(STATE, [choice('big', 255)])]);
      runtime.engine.clearPrefixCache();
      const small: NormalizedQuestion = { ...choice('few', 3) };
      const noul: NormalizedQuestion = { id: 'yn', type: 'noul', instructions: 'Is the card blocked?', options: [{ key: 'no', criteriaIndex: 0 }, { key: 'yes', criteriaIndex: 1 }] };
      const busy = await probsByKey(runtime, [
        request('Another state entirely.', [choice('other', 40), noul]),
        request(STATE, [small, choice('big', 255), noul, choice('mid', 100)]),
      ]);
      const inBatch = busy[1]![1]!;
      const keys = [...alone!.keys()];
      expect(maxAbsDiff(keys.map((k) => alone!.get(k)!), keys.map((k) => inBatch.get(k)!))).toBeLessThan(1e-6);
    }
  });

  it('26 options and fewer: the same group as before (letters, one suffix per question) and the same answers, bit for bit', async () => {
    const tools = await promptTools(dir);
    const letterIds = Int32Array.from(LETTERS, (l) => tools.tokenizer.tokenToId(l)!);
    for (const n of [2, 5, 26]) {
      const q = choice('q', n);
      const prepared: PreparedRequest = await forked.prepare(request(STATE, [q]));
      expect(prepared.codeGroups).toEqual([]);
      const prefix = await tools.tokenizer.encode(tools.renderer.renderPrefix(STATE));
      const suffix = await tools.tokenizer.encode(tools.renderer.renderSuffix(q, LETTERS.slice(0, n)));
      expect(tools.renderer.renderSuffix(q, LETTERS.slice(0, n))).toContain(`Answer with one of: ${LETTERS.slice(0, n).join(', ')}`);
      expect(prepared.group).toEqual({ prefix, suffixes: [{ tokens: suffix, labels: letterIds.slice(0, n) }], cacheScope: 0 });
      // The answer is the letters' softmax, as it was: the engine's logits straight into answerFromLogits.
      forked.engine.clearPrefixCache();
      const [[direct]] = await forked.engine.score([prepared.group]);
      forked.engine.clearPrefixCache();
      const [scored] = await forked.score([prepared]);
      expect(scored!.answers.q).toStrictEqual(answerFromLogits(q, direct!.labelLogits, 1));
      expect(scored!.raw[0]!.labelLogits).toStrictEqual(direct!.labelLogits);
    }
  });

  it('usage counts what the model read: the letters in use after a code question, two answer tokens for it', async () => {
    const tools = await promptTools(dir);
    const noul: NormalizedQuestion = { id: 'yn', type: 'noul', instructions: 'Is the card blocked?', options: [{ key: 'no', criteriaIndex: 0 }, { key: 'yes', criteriaIndex: 1 }] };
    const questions = [choice('big', 255), choice('few', 3), noul, choice('mid', 27)];
    const prepared = await forked.prepare(request(STATE, questions));
    const prefix = await tools.tokenizer.encode(tools.renderer.renderPrefix(STATE));
    let suffixTokens = 0;
    for (const [j, q] of questions.entries()) suffixTokens += (await tools.tokenizer.encode(tools.renderer.renderSuffix(q, prepared.labels[j]!))).length;
    // 255 codes use 26 letters (A..Z), 27 codes use 3 (A, B, C): each read after its question's prompt.
    expect(prepared.inputTokens).toBe(prefix.length + suffixTokens + 26 + 3);
    expect(prepared.outputTokens).toBe(2 + 1 + 1 + 2);
    const [scored] = await forked.score([prepared]);
    expect(scored).toMatchObject({ inputTokens: prepared.inputTokens, outputTokens: 6 });
  });

  it('label_mass of a code question is the probability mass of its codes', async () => {
    const prepared = await forked.prepare({ ...request(STATE, [choice('q', 30)]), labelMass: true });
    const [scored] = await forked.score([prepared]);
    const mass = scored!.answers.q!.label_mass!;
    const expected = Array.from(scored!.raw[0]!.labelLogits).reduce((s, l) => s + Math.exp(l), 0);
    expect(mass).toBeGreaterThan(0);
    expect(Math.abs(mass - Number(expected.toPrecision(6)))).toBeLessThan(1e-12);
  });

  it('a tokenizer that breaks a code: the model loads, serves 26 options, and refuses 27 naming the model and the code', async () => {
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'many-options-broken-'));
    try {
      const broken = path.join(scratch, 'tiny-broken');
      await cp(dir, broken, { recursive: true });
      // "B7" as an added token: the tokenizer then reads it as one token before any merge.
      const file = path.join(broken, 'tokenizer.json');
      const tokenizer = JSON.parse(await readFile(file, 'utf8')) as { added_tokens: Array<Record<string, unknown>> };
      tokenizer.added_tokens.push({ id: 300, content: 'B7', single_word: false, lstrip: false, rstrip: false, normalized: false, special: false });
      await writeFile(file, JSON.stringify(tokenizer));
      const runtime = await ModelRuntime.load('tiny-broken', broken);
      try {
        const [ok] = await runtime.score([await runtime.prepare(request(STATE, [choice('q', 26)]))]);
        expect(Object.keys(ok!.answers.q!.probs)).toHaveLength(26);
        const refused = runtime.prepare(request(STATE, [choice('q', 27)]));
        await expect(refused).rejects.toMatchObject({ code: 'ERR_INPUT' });
        await expect(refused).rejects.toThrow(/^questions\["q"\]: model tiny-broken takes at most 26 options per question: .*breaks the code "B7"/);
      } finally {
        runtime.close();
      }
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });

  it('reports the order sensitivity: the same options reversed (printed, not asserted)', async () => {
    const [[forward]] = await probsByKey(forked, [request(STATE, [choice('q', 255)])]);
    const [[reversed]] = await probsByKey(forked, [request(STATE, [choice('q', 255, 'reversed')])]);
    const keys = [...forward!.keys()];
    const gap = maxAbsDiff(keys.map((k) => forward!.get(k)!), keys.map((k) => reversed!.get(k)!));
    console.log(`order sensitivity (tiny preset, random weights, 255 options): max |p(option) - p(option reversed)| = ${gap.toExponential(3)}, uniform p = ${(1 / 255).toExponential(3)}`);
    expect(forward!.size).toBe(255);
  });
});

describe('more than 26 options on the small preset', () => {
  let scratch: string;
  let dir: string;
  let runtime: ModelRuntime;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'many-options-small-'));
    dir = path.join(scratch, 'small');
    await makeModel({ preset: 'small', outDir: dir, seed: 1 });
    runtime = await ModelRuntime.load('small', dir);
  }, 300_000);
  afterAll(async () => {
    runtime?.close();
    await releaseReferenceSessions();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  // A rendered 255-option prompt is over 1,300 tokens here, and its 27 fresh rows take minutes on
  // one core: the runtime path with its real prompt is checked at 27 options (4 fresh rows), and
  // all 255 codes through the same group layout after a shorter prompt of token ids.
  it('equals the brute-force oracle within 1e-5: 27 options with the real prompt, 255 codes after a short prompt', async () => {
    expect(await oracleGap(runtime, dir, [27])).toBeLessThan(1e-5);
    expect(await codeOracleGap(runtime.engine, dir, 40, 120)).toBeLessThan(1e-5);
  });
});

describe('more than 26 options on the transformers-made Qwen3 fixture (token ids, no tokenizer)', () => {
  let scratch: string;
  let dir: string;
  let engine: Engine;

  beforeAll(async () => {
    if (!existsSync(HF_QWEN3)) throw new Error(`the hf-tiny fixtures are expected at ${HF_QWEN3} (set DECIDE_HF_TINY_DIR to their folder)`);
    scratch = await mkdtemp(path.join(os.tmpdir(), 'many-options-hf-'));
    // Without segment ids: the engine forks rows on the CPU anyway, and the oracle runs this graph.
    dir = (await importModel({ hfDir: HF_QWEN3, outDir: path.join(scratch, 'qwen3'), segmentIds: false })).dir;
    engine = await Engine.load({ modelDir: dir });
  }, 120_000);
  afterAll(async () => {
    engine?.close();
    await releaseReferenceSessions();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('codeGroup + codeLogProbs equal the brute-force oracle within 1e-5 for 255 codes', async () => {
    expect(await codeOracleGap(engine, dir, 60, 700)).toBeLessThan(1e-5);
  });
});
