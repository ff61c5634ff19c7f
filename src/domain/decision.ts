/**
 * Domain types of a decision, shared by every layer: the runtime scores them, the service passes
 * them along, and each wire dialect in api/ maps its own request shape onto them (api/ re-exports
 * them). No wire schema, no I/O: plain types and one formatting helper.
 */

export const QUESTION_TYPES = ['noul', 'choice', 'score'] as const;
export type QuestionType = (typeof QUESTION_TYPES)[number];

export interface NormalizedOption {
  /** The caller's option key; `probs` uses it. */
  key: string;
  /** The caller's description; absent for noul without criteria. */
  description?: string;
  /** Position of the key in criteria order (noul: no = 0, yes = 1); lower wins ties for `top`. */
  criteriaIndex: number;
}

/**
 * The text of an option as the prompt lists it: its description where one is given (not blank),
 * else its key, on one line (line breaks and the space around them as one space, trimmed).
 */
export function optionText(option: Pick<NormalizedOption, 'key' | 'description'>): string {
  const text = option.description !== undefined && option.description.trim() !== '' ? option.description : option.key;
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/**
 * The first two options (indexes, in order) whose texts as the prompt lists them are the same, or
 * the same once composed (NFC: "café" written with its accent apart, which tokenizers normalise):
 * the model could tell them apart by position only, so a choice question refuses them.
 */
export function optionsReadAlike(options: ReadonlyArray<Pick<NormalizedOption, 'key' | 'description'>>): [number, number] | undefined {
  const seen = new Map<string, number>();
  for (const [i, option] of options.entries()) {
    const text = optionText(option).normalize('NFC');
    const first = seen.get(text);
    if (first !== undefined) return [first, i];
    seen.set(text, i);
  }
  return undefined;
}

export interface NormalizedQuestion {
  id: string;
  type: QuestionType;
  instructions: string;
  /** In presentation order: noul [no, yes], choice criteria order, score ascending level. */
  options: NormalizedOption[];
}

export interface NormalizedDecideRequest {
  model: string;
  /** The state as the model reads it: the string itself, or an object as compact JSON. */
  stateText: string;
  /** In the caller's order of question ids. */
  questions: NormalizedQuestion[];
  /** The caller asked for `label_mass` on every answer (opt-in diagnostics). */
  labelMass?: boolean;
}

/** One scored question: every option's probability, the top option and its probability. */
export interface DecisionAnswer {
  type: QuestionType;
  /** Option key -> probability (6 decimals, sum 1 within 1e-6). */
  probs: Record<string, number>;
  /** The most probable option; ties go to the lower criteriaIndex. */
  top: string;
  /** probs[top]. */
  confidence: number;
  /** Only when the request asked for it: the share of next-token probability on the labels. */
  label_mass?: number;
}

/**
 * What the service returns for one scored request, before any wire dialect shapes it: each door
 * (`/v1/decide`, `/v1/systemone`, `/v1/decisions`, a batch line) renders it in its own body.
 */
export interface DecisionResult {
  /** The decision id (`dec_<ulid>`; the HTTP request's id when there is one). */
  id: string;
  /** The dated model id that answered (an alias resolved). */
  model: string;
  /** Answers by question id, keys in the caller's order of questions (key-order.ts). */
  answers: Record<string, DecisionAnswer>;
  /** State and question tokens the model read for this request. */
  inputTokens: number;
  /** Of those, the tokens served from the prefix cache. */
  cachedTokens: number;
  /** The answer tokens read: one a question (its label), two for a question of more than 26 options (its code). */
  outputTokens: number;
}

/**
 * `text` cut to at most `max` UTF-16 units, never between the two halves of a character (an emoji):
 * half a character is not valid Unicode, and a strict client cannot print the message.
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const high = text.charCodeAt(max - 1);
  return text.slice(0, high >= 0xd800 && high <= 0xdbff ? max - 1 : max);
}

/** A key as a message quotes it: JSON-quoted, cut to 60 characters. */
export function quote(key: string): string {
  const cut = key.length > 60 ? `${cutText(key, 60)}...` : key;
  return JSON.stringify(cut);
}
