// One single-token label per option, so that one forward pass scores every option:
//   choice -> letters A..Z in option order
//   noul   -> the model's own no / yes tokens ("no"/"yes", else " no"/" yes")
//   score  -> the level keys themselves when each is one token, else letters
// Past 26 options (choice, or score levels that are not single tokens), two-token CODES: a letter
// then a digit, A0..A9, B0, ... (option k -> letter k / 10, digit k % 10; 260 codes, 255 used at
// most). Fixed length, so no code is a token-prefix of another and no end token is read; letter
// and digit fall into separate pretokens in the Qwen2/3, Llama 3 and GPT-2 tokenizers.
// P(code) = p(letter | prompt) x p(digit | prompt, letter): see code-scoring.ts.
// "Single token" is checked in context: encode(context + label) must equal encode(context)
// followed by exactly one id, where context is the text every suffix ends with
// (PromptRenderer.labelContext). That id is what the model would write as its first token.
import type { QuestionType } from '../domain/decision.js';
import { QUESTION_LIMITS } from '../domain/question-limits.js';
import { EngineError } from '../errors/engine-error.js';

export const LETTERS: readonly string[] = Object.freeze('ABCDEFGHIJKLMNOPQRSTUVWXYZ'.split(''));
export const DIGITS: readonly string[] = Object.freeze('0123456789'.split(''));
/** The most options a question may have (260 codes exist). */
const MAX_OPTIONS = QUESTION_LIMITS.maxOptions;

/** The codes of `n` options (27..255): A0, A1, ..., A9, B0, ... */
export function codeLabels(n: number): string[] {
  return Array.from({ length: n }, (_, k) => LETTERS[Math.floor(k / DIGITS.length)]! + DIGITS[k % DIGITS.length]!);
}

const NOUL_CANDIDATES: ReadonlyArray<readonly [string, string]> = [
  ['no', 'yes'],
  [' no', ' yes'],
];

const MAX_CACHED_LABELS = 4096;

export interface QuestionLabels {
  /** As shown in the prompt, one per option in option order. */
  labels: string[];
  /** The token id of each label, in option order (a code question: each code's letter). */
  labelIds: Int32Array;
  /** Only for more than 26 options: the two-token codes' letter and digit ids (labels are the codes). */
  codes?: CodeIds;
}

/**
 * The token ids of the codes of one question: option k is letterIds[k / 10] then digitIds[k % 10].
 * @example
 * const { letterIds, digitIds } = (await labels.forQuestion(q)).codes!;
 */
export interface CodeIds {
  /** The ids of the letters in use, A first (ceil(options / 10) of them). */
  letterIds: Int32Array;
  /** The ids of 0..9 after a letter. */
  digitIds: Int32Array;
  /** How many options (codes) the question has. */
  count: number;
}

export interface LabelTokenizer {
  encode(text: string): Promise<Int32Array>;
}

export interface LabelQuestion {
  type: QuestionType;
  options: ReadonlyArray<{ key: string }>;
}

export interface LabelSetOptions {
  /** The text right before the label (PromptRenderer.labelContext); default ''. */
  context?: string;
}

/**
 * The labels of one model, checked once at model load.
 *
 * @example
 * const labels = await LabelSet.build(tokenizer, { context: renderer.labelContext });
 * const { labels: shown, labelIds } = await labels.forQuestion(question);
 */
export class LabelSet {
  private readonly cache = new Map<string, Promise<number | undefined>>();

  private constructor(
    private readonly tokenizer: LabelTokenizer,
    private readonly context: string,
    private readonly contextIds: Int32Array,
    /** Ids of A..Z. */
    readonly letterIds: Int32Array,
    /** The noul labels: shown as "no", "yes"; ids of the variant that is one token each. */
    readonly noul: Readonly<QuestionLabels>,
    /** Ids of 0..9 read after a letter; undefined when codes are unusable (see codeProblem). */
    private readonly digitIds: Int32Array | undefined,
    /**
     * Why this tokenizer cannot read the two-token codes (naming the first code that breaks), or
     * undefined when every code A0..Z9 is exactly its letter and digit token after the prompt.
     * Such a model serves up to 26 options; more is refused with this reason.
     */
    readonly codeProblem: string | undefined,
  ) {}

  /**
   * Checks that A..Z and no/yes are single tokens (throws naming the first label that is not), and
   * that every code A0..Z9 encodes after the context as its letter's token then one digit token,
   * the same digit token after every letter (else codeProblem says which code breaks).
   */
  static async build(tokenizer: LabelTokenizer, options: LabelSetOptions = {}): Promise<LabelSet> {
    const context = options.context ?? '';
    const contextIds = await tokenizer.encode(context);
    const probe = new LabelSet(tokenizer, context, contextIds, new Int32Array(0), { labels: [], labelIds: new Int32Array(0) }, undefined, undefined);

    const letterIds = new Int32Array(LETTERS.length);
    for (const [i, letter] of LETTERS.entries()) {
      const id = await probe.singleTokenId(letter);
      if (id === undefined) {
        throw new EngineError('ERR_MODEL_LOAD', `labels: the label "${letter}" is not a single token for this tokenizer; choice questions need A..Z as single tokens`);
      }
      letterIds[i] = id;
    }
    if (new Set(letterIds).size !== LETTERS.length) throw new EngineError('ERR_MODEL_LOAD', 'labels: two letters A..Z share one token id');

    let noul: QuestionLabels | undefined;
    for (const [no, yes] of NOUL_CANDIDATES) {
      const noId = await probe.singleTokenId(no);
      const yesId = await probe.singleTokenId(yes);
      if (noId !== undefined && yesId !== undefined && noId !== yesId) {
        noul = { labels: ['no', 'yes'], labelIds: Int32Array.of(noId, yesId) };
        break;
      }
    }
    if (!noul) {
      const bad = (await probe.singleTokenId('no')) === undefined ? 'no' : 'yes';
      throw new EngineError('ERR_MODEL_LOAD', `labels: the label "${bad}" is not a single token for this tokenizer (tried "${bad}" and " ${bad}")`);
    }
    const codes = await checkCodes(tokenizer, context, contextIds, letterIds);
    return new LabelSet(tokenizer, context, contextIds, letterIds, noul, codes.digitIds, codes.problem);
  }

  /** Labels and their token ids for one question, in option order. */
  async forQuestion(question: LabelQuestion): Promise<QuestionLabels> {
    const n = question.options.length;
    if (question.type === 'noul') {
      if (n !== 2 || question.options[0]!.key !== 'no' || question.options[1]!.key !== 'yes') {
        throw new EngineError('ERR_RUNTIME', 'labels: a noul question must have the options [no, yes]');
      }
      return { labels: [...this.noul.labels], labelIds: this.noul.labelIds.slice() };
    }
    if (n < 1 || n > MAX_OPTIONS) throw new EngineError('ERR_RUNTIME', `labels: ${n} options; labels cover 1 to ${MAX_OPTIONS}`);
    if (question.type === 'score') {
      const keys = question.options.map((o) => o.key);
      const ids = await Promise.all(keys.map((k) => this.singleTokenId(k)));
      if (ids.every((id) => id !== undefined) && new Set(ids).size === n) {
        return { labels: keys, labelIds: Int32Array.from(ids as number[]) };
      }
    }
    if (n <= LETTERS.length) return { labels: LETTERS.slice(0, n), labelIds: this.letterIds.slice(0, n) };
    if (!this.digitIds) throw new EngineError('ERR_INPUT', `${n} options: ${this.codeProblem}`);
    const letters = Math.ceil(n / DIGITS.length);
    const labelIds = Int32Array.from({ length: n }, (_, k) => this.letterIds[Math.floor(k / DIGITS.length)]!);
    return { labels: codeLabels(n), labelIds, codes: { letterIds: this.letterIds.slice(0, letters), digitIds: this.digitIds.slice(), count: n } };
  }

  /** The id `label` encodes to as the one token after the context, or undefined when it is not one token. */
  singleTokenId(label: string): Promise<number | undefined> {
    let p = this.cache.get(label);
    if (!p) {
      // Score keys come from callers: keep the memo bounded.
      if (this.cache.size >= MAX_CACHED_LABELS) this.cache.clear();
      p = this.computeSingleTokenId(label);
      this.cache.set(label, p);
    }
    return p;
  }

  private async computeSingleTokenId(label: string): Promise<number | undefined> {
    if (label === '') return undefined;
    const ids = await this.tokenizer.encode(this.context + label);
    const base = this.contextIds;
    if (ids.length !== base.length + 1) return undefined;
    for (let i = 0; i < base.length; i++) if (ids[i] !== base[i]) return undefined;
    return ids[base.length];
  }
}

/**
 * The load-time check of the codes: encode(context + code) must be encode(context) followed by
 * exactly the letter's id (as read for A..Z) and then one digit id, and each digit must be the same
 * id after every letter (the scorer reads p(digit) at the letter with one set of digit ids).
 */
async function checkCodes(
  tokenizer: LabelTokenizer,
  context: string,
  contextIds: Int32Array,
  letterIds: Int32Array,
): Promise<{ digitIds?: Int32Array; problem?: string }> {
  const base = contextIds.length;
  const digitIds = new Int32Array(DIGITS.length).fill(-1);
  for (const [l, letter] of LETTERS.entries()) {
    for (const [d, digit] of DIGITS.entries()) {
      const code = letter + digit;
      const ids = await tokenizer.encode(context + code);
      const prefixKept = ids.length >= base && contextIds.every((id, i) => ids[i] === id);
      const got = prefixKept ? Array.from(ids.subarray(base)) : undefined;
      const broken = (why: string) => ({
        problem: `more than ${LETTERS.length} options need the two-token codes A0..Z9, and this model's tokenizer breaks the code "${code}": ${why}`,
      });
      if (!got) return broken('it changes the tokens of the prompt before it');
      if (got.length !== 2) return broken(`it encodes to ${got.length} tokens after the prompt (${got.join(', ')}), not a letter token and a digit token`);
      if (got[0] !== letterIds[l]) return broken(`its first token ${got[0]} is not the token of "${letter}" (${letterIds[l]})`);
      if (digitIds[d] === -1) digitIds[d] = got[1]!;
      else if (digitIds[d] !== got[1]) return broken(`its digit is token ${got[1]}, but "${digit}" is token ${digitIds[d]} after "A"`);
    }
  }
  if (new Set(digitIds).size !== DIGITS.length) return { problem: `more than ${LETTERS.length} options need the two-token codes A0..Z9, and two digits 0..9 share one token id for this tokenizer` };
  return { digitIds };
}
