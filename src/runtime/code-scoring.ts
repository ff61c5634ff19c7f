// Scoring a question with more than 26 options (two-token codes A0..Z4, labels.ts) in the same
// engine call as every other question, with the Engine's ordinary groups:
//
//   prompt  = the state's prefix ++ the question's suffix (what a <= 26-option question reads)
//   group   = { prefix: prompt without its last token,
//               suffixes: [ [last]            -> labels: the letters in use,
//                           [last, letter_i]  -> labels: the digits of letter i   (one per letter) ] }
//
// The first suffix's logits are p(letter | prompt); suffix i's are p(digit | prompt, letter_i),
// each suffix being its own causal row after the group's prefix (forked, or a segment of its own
// in a packed row), so each sees exactly the prompt and itself. Then
//   log P(code) = log p(letter | prompt) + log p(digit | prompt, letter)
// and the answer is the softmax over the codes of these joint log-probabilities (calibrate.ts
// applies the version's temperature and label bias to them as to label logits). The prompt's
// prefix KV goes into the prefix cache like any state's, so the state part is found there again
// by the next call (longest common prefix).
import type { ScoreGroup, SuffixScore } from '../engine/engine.js';
import { DIGITS, type CodeIds } from './labels.js';

// The codes' layout (labels.ts): letter i holds codes i*10 .. i*10+9.
const DIGITS_PER_LETTER = DIGITS.length;

/** How many digits letter i uses among `count` codes. */
function digitsOf(letter: number, count: number): number {
  return Math.min(DIGITS_PER_LETTER, count - letter * DIGITS_PER_LETTER);
}

/**
 * The engine group that scores the codes of one question.
 * @example
 * const group = codeGroup(prefixIds, suffixIds, labels.codes!); // scored with the call's other groups
 */
export function codeGroup(prefix: Int32Array, suffix: Int32Array, codes: CodeIds, cacheScope = 0): ScoreGroup {
  if (suffix.length === 0) throw new Error('codeGroup: an empty question suffix');
  const head = new Int32Array(prefix.length + suffix.length - 1);
  head.set(prefix, 0);
  head.set(suffix.subarray(0, suffix.length - 1), prefix.length);
  const last = suffix[suffix.length - 1]!;
  const suffixes = [{ tokens: Int32Array.of(last), labels: codes.letterIds.slice() }];
  codes.letterIds.forEach((letter, i) => {
    suffixes.push({ tokens: Int32Array.of(last, letter), labels: codes.digitIds.slice(0, digitsOf(i, codes.count)) });
  });
  return { prefix: head, suffixes, cacheScope };
}

/**
 * The joint log-probability of every code, in option order, from the scores of codeGroup's
 * suffixes (in their order). These are log-probabilities over the whole vocabulary, so their
 * log-sum-exp is 0 and label_mass is the sum of their exponentials.
 */
export function codeLogProbs(scores: readonly SuffixScore[], codes: CodeIds): Float64Array {
  const letters = codes.letterIds.length;
  if (scores.length !== letters + 1) throw new Error(`codeLogProbs: ${scores.length} scores for ${letters} letters`);
  const first = scores[0]!;
  const out = new Float64Array(codes.count);
  for (let i = 0; i < letters; i++) {
    const letter = first.labelLogits[i]! - first.logSumExp;
    const branch = scores[i + 1]!;
    for (let d = 0; d < digitsOf(i, codes.count); d++) {
      out[i * DIGITS_PER_LETTER + d] = letter + (branch.labelLogits[d]! - branch.logSumExp);
    }
  }
  return out;
}
