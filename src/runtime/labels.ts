// One single-token label per option, so that one forward pass scores every option:
//   choice -> letters A..Z in option order
//   noul   -> the model's own no / yes tokens ("no"/"yes", else " no"/" yes")
//   score  -> the level keys themselves when each is one token, else letters
// "Single token" is checked in context: encode(context + label) must equal encode(context)
// followed by exactly one id, where context is the text every suffix ends with
// (PromptRenderer.labelContext). That id is what the model would write as its first token.
import type { QuestionType } from '../domain/decision.js';
import { EngineError } from '../errors/engine-error.js';

export const LETTERS: readonly string[] = Object.freeze('ABCDEFGHIJKLMNOPQRSTUVWXYZ'.split(''));

const NOUL_CANDIDATES: ReadonlyArray<readonly [string, string]> = [
  ['no', 'yes'],
  [' no', ' yes'],
];

const MAX_CACHED_LABELS = 4096;

export interface QuestionLabels {
  /** As shown in the prompt, one per option in option order. */
  labels: string[];
  /** The token id of each label, in option order. */
  labelIds: Int32Array;
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
  ) {}

  /** Checks that A..Z and no/yes are single tokens; throws naming the first label that is not. */
  static async build(tokenizer: LabelTokenizer, options: LabelSetOptions = {}): Promise<LabelSet> {
    const context = options.context ?? '';
    const contextIds = await tokenizer.encode(context);
    const probe = new LabelSet(tokenizer, context, contextIds, new Int32Array(0), { labels: [], labelIds: new Int32Array(0) });

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
    return new LabelSet(tokenizer, context, contextIds, letterIds, noul);
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
    if (n < 1 || n > LETTERS.length) throw new EngineError('ERR_RUNTIME', `labels: ${n} options; letters cover 1 to ${LETTERS.length}`);
    if (question.type === 'score') {
      const keys = question.options.map((o) => o.key);
      const ids = await Promise.all(keys.map((k) => this.singleTokenId(k)));
      if (ids.every((id) => id !== undefined) && new Set(ids).size === n) {
        return { labels: keys, labelIds: Int32Array.from(ids as number[]) };
      }
    }
    return { labels: LETTERS.slice(0, n), labelIds: this.letterIds.slice(0, n) };
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
