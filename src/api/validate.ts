// Validation and normalization of a decide request: every rule of the spec and of the choices
// listed in docs/api.md, as pure functions. Errors are ApiError('invalid_question')
// with a message that starts with the path of the offending field and states the rule.
// Every limit and field list is read from the TypeBox schemas (schemas.ts), the one definition
// of the contract; this file adds the spec's messages and the rules JSON Schema cannot say.
//
// Decisions taken here (the docs repeat them):
// - Unknown fields are rejected, at the top level and inside a question, so a misspelt field
//   (e.g. "critera" on a noul question) is never silently ignored.
// - `instructions` that are only whitespace count as empty.
// - A question id or option key "__proto__" is rejected (reserved).
// - Lengths are counted in characters (Unicode code points), as JSON Schema's maxLength does.
// - Score levels: optional "-", digits, optionally "." and digits ("0", "01", "2.5", "-1").
//   No "+", no exponent ("1e3"), no surrounding spaces, no ".5" or "1.". Values are compared as
//   float64, so "1", "01" and "1.0" are duplicates.
// - Option order: noul [no, yes]; choice in criteria order; score by ascending level. "Criteria
//   order" is the order the client wrote the keys in (JSON text parsed by json-text.ts keeps it,
//   integer-like keys such as "0" or "12" included; an object built in JavaScript lists them as
//   JavaScript does); it decides ties for `top`. Question ids keep the written order too.
// - `state` may be an empty string. An object state must be JSON data (plain objects, arrays,
//   strings, finite numbers, booleans, null; `undefined` is dropped as JSON.stringify drops it),
//   at most 64 levels deep; it becomes compact JSON (no spaces, keys in written order).
// - An object state with more values than `maxStateValues` is 413 state_too_long (it could only
//   exceed the token limit anyway); this also bounds objects that share sub-objects.
import { cutText, optionsReadAlike, optionText, quote, type NormalizedDecideRequest, type NormalizedOption, type NormalizedQuestion } from '../domain/decision.js';
import { hasWrittenForm, jsonInOrder, keysInOrder, writtenNumberText } from '../domain/key-order.js';
import { ApiError } from './errors.js';
import { hasLoneSurrogate, isPlainObject } from './json-value.js';
import {
  CriteriaSchema,
  DecideRequestSchema,
  KeyNameSchema,
  OptionDescriptionSchema,
  QUESTION_TYPES,
  QuestionSchema,
  type QuestionType,
} from './schemas.js';

export interface ValidationLimits {
  maxQuestions: number;
  maxKeyLength: number;
  maxDescriptionLength: number;
  maxInstructionsLength: number;
  maxStateDepth: number;
  maxStateValues: number;
}

/** The limits as the schemas in schemas.ts state them; state depth and size are not schema rules. */
export const DEFAULT_VALIDATION_LIMITS: Readonly<ValidationLimits> = Object.freeze({
  maxQuestions: DecideRequestSchema.properties.questions.maxProperties!,
  maxKeyLength: KeyNameSchema.maxLength!,
  maxDescriptionLength: OptionDescriptionSchema.maxLength!,
  maxInstructionsLength: QuestionSchema.properties.instructions.maxLength!,
  maxStateDepth: 64,
  maxStateValues: 1_000_000,
});

/**
 * The values each limit may be set to (DecisionService.open's `validation`): whole numbers, at
 * least 1 (0 would refuse every request). maxStateDepth stops at 1,000: the text the model reads
 * is written recursively (JSON.stringify, jsonInOrder), which overflows the stack at a few thousand
 * levels.
 */
export const VALIDATION_LIMIT_RANGES: Readonly<Record<keyof ValidationLimits, { min: number; max: number }>> = Object.freeze({
  maxQuestions: { min: 1, max: Number.MAX_SAFE_INTEGER },
  maxKeyLength: { min: 1, max: Number.MAX_SAFE_INTEGER },
  maxDescriptionLength: { min: 1, max: Number.MAX_SAFE_INTEGER },
  maxInstructionsLength: { min: 1, max: Number.MAX_SAFE_INTEGER },
  maxStateDepth: { min: 1, max: 1000 },
  maxStateValues: { min: 1, max: Number.MAX_SAFE_INTEGER },
});

export type { NormalizedOption, NormalizedQuestion, NormalizedDecideRequest } from '../domain/decision.js';
export { quote } from '../domain/decision.js';

const REQUEST_FIELDS = Object.keys(DecideRequestSchema.properties);
const QUESTION_FIELDS = Object.keys(QuestionSchema.properties);
const MIN_OPTIONS = CriteriaSchema.minProperties!;
const MAX_OPTIONS = CriteriaSchema.maxProperties!;
const SCORE_LEVEL = /^-?[0-9]+(?:\.[0-9]+)?$/;
const RESERVED_KEY = '__proto__';

function fail(message: string): never {
  throw new ApiError('invalid_question', message);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') {
    const name = (Object.getPrototypeOf(v) as { constructor?: { name?: string } } | null)?.constructor?.name;
    return name && name !== 'Object' ? name : 'object';
  }
  return typeof v;
}

/** Length in code points when over `cap` (counting no further than `cap + 1`); else an upper bound <= cap. */
function charLength(s: string, cap: number): number {
  if (s.length <= cap) return s.length;
  let n = 0;
  for (const _ of s) if (++n > cap) break;
  return n;
}

/**
 * Refuses an option description over the limit, named by `where` as the caller's dialect writes
 * the field (`questions["q"].criteria["yes"]` here, `questions["q"].criteria.true` in System One's).
 */
export function checkDescriptionLength(description: string, where: string, limits: Partial<ValidationLimits> = {}): void {
  const max = limits.maxDescriptionLength ?? DEFAULT_VALIDATION_LIMITS.maxDescriptionLength;
  if (charLength(description, max) > max) fail(`${where}: the description is longer than ${max} characters`);
}

/**
 * A string the HTTP doors refuse already as they read the JSON text (json-text.ts); a library
 * caller's objects are checked here, so the two agree.
 */
const NOT_UNICODE = 'holds a lone surrogate (\\ud800-\\udfff without its pair): not Unicode text, and not writable as UTF-8';

function checkUnicode(s: string, where: string): void {
  if (hasLoneSurrogate(s)) fail(`${where}: ${NOT_UNICODE}`);
}

function has(obj: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(obj, key);
}

function checkKey(key: string, where: string, what: string, limits: ValidationLimits): void {
  const len = charLength(key, limits.maxKeyLength);
  if (len === 0 || len > limits.maxKeyLength) {
    fail(`${where}: ${what} ${quote(key)} must be 1 to ${limits.maxKeyLength} characters`);
  }
  if (key === RESERVED_KEY) fail(`${where}: ${what} "__proto__" is reserved`);
  checkUnicode(key, `${where}: ${what} ${quote(key)}`);
}

function rejectUnknown(obj: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) {
      fail(`${where}${where ? '.' : ''}${quote(k).slice(1, -1)}: unknown field (allowed: ${allowed.join(', ')})`);
    }
  }
}

/**
 * Checks `state` and returns the text the model reads.
 * Strings are returned unchanged; plain objects become compact JSON.
 */
export function normalizeState(state: unknown, limits: Partial<ValidationLimits> = {}): string {
  if (typeof state === 'string') {
    checkUnicode(state, 'state');
    return state;
  }
  if (state === undefined) fail('state: required (a string or a JSON object)');
  if (!isPlainObject(state)) fail(`state: must be a string or a JSON object, got ${describe(state)}`);
  return structuredText(state, STATE, limits);
}

/** Where a JSON value sits in a request, for messages: its path, and a noun for the depth message. */
export interface JsonPlace {
  path: string;
  noun?: string;
}

const STATE: JsonPlace = { path: 'state', noun: 'state' };

/**
 * The compact JSON text the model reads for structured text (an object or an array: a state, or a
 * dialect's instructions, descriptions and levels given as JSON), after the checks a state gets
 * (depth, value count, finite numbers). JSON.stringify alone would overflow the stack on a value
 * nested a few thousand levels deep (a 500); here it is a 400 that names `place.path`.
 */
export function structuredText(value: object, place: JsonPlace, limits: Partial<ValidationLimits> = {}): string {
  const ordered = checkJsonData(value, { ...DEFAULT_VALIDATION_LIMITS, ...limits }, place);
  // JSON.stringify writes the same text, faster, when no object has an order JavaScript would not keep.
  return ordered ? jsonInOrder(value) : JSON.stringify(value);
}

interface Frame {
  value: unknown;
  depth: number;
  parent: Frame | undefined;
  key: string | number;
}

function framePath(f: Frame, root: string): string {
  const parts: string[] = [];
  for (let p: Frame | undefined = f; p?.parent; p = p.parent) {
    parts.push(typeof p.key === 'number' ? `[${p.key}]` : `[${quote(p.key)}]`);
  }
  return `${root}${parts.reverse().join('')}`;
}

// Iterative so that no input can exhaust the call stack; the depth bound also stops cycles and
// the value budget stops shared sub-objects from multiplying the work. Returns whether an object
// or array in it has a recorded written form (a key order, a number's text: key-order.ts).
function checkJsonData(root: object, lim: ValidationLimits, place: JsonPlace): boolean {
  let ordered = false;
  const framePathOf = (f: Frame) => framePath(f, place.path);
  const stack: Frame[] = [{ value: root, depth: 1, parent: undefined, key: '' }];
  let values = 0;
  while (stack.length > 0) {
    const f = stack.pop()!;
    if (++values > lim.maxStateValues) {
      throw new ApiError(
        'state_too_long',
        `${place.path}: more than ${lim.maxStateValues} values; trim it or split it across requests`,
      );
    }
    const v = f.value;
    switch (typeof v) {
      case 'string':
        checkUnicode(v, framePathOf(f));
        continue;
      case 'boolean':
      case 'undefined':
        continue;
      case 'number':
        // 1e400 in JSON text parses to Infinity; it reaches the model as written (its text is kept).
        if (!Number.isFinite(v) && !(f.parent && writtenNumberText(f.parent.value as object, String(f.key)) !== undefined)) {
          fail(`${framePathOf(f)}: numbers must be finite, got ${String(v)}`);
        }
        continue;
      case 'object':
        break;
      default:
        fail(`${framePathOf(f)}: must be JSON data, got ${describe(v)}`);
    }
    if (v === null) continue;
    if (f.depth > lim.maxStateDepth) {
      fail(`${framePathOf(f)}: ${place.noun ? `${place.noun} is nested` : 'nested'} deeper than ${lim.maxStateDepth} levels`);
    }
    if (!ordered && hasWrittenForm(v)) ordered = true;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], depth: f.depth + 1, parent: f, key: i });
    } else if (isPlainObject(v)) {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i]!;
        checkUnicode(k, `${framePathOf(f)}: the key ${quote(k)}`);
        stack.push({ value: v[k], depth: f.depth + 1, parent: f, key: k });
      }
    } else {
      fail(`${framePathOf(f)}: must be JSON data (object, array, string, number, boolean or null), got ${describe(v)}`);
    }
  }
  return ordered;
}

/** Checks the `questions` map and returns the questions in the caller's order. */
export function normalizeQuestions(
  questions: unknown,
  limits: Partial<ValidationLimits> = {},
): NormalizedQuestion[] {
  const lim = { ...DEFAULT_VALIDATION_LIMITS, ...limits };
  if (questions === undefined) fail('questions: required (an object mapping question ids to questions)');
  if (!isPlainObject(questions)) {
    fail(`questions: must be an object mapping question ids to questions, got ${describe(questions)}`);
  }
  const ids = keysInOrder(questions);
  if (ids.length === 0) fail('questions: must contain at least 1 question');
  if (ids.length > lim.maxQuestions) {
    fail(`questions: at most ${lim.maxQuestions} questions per request, got ${ids.length}`);
  }
  return ids.map((id) => normalizeQuestion(id, questions[id], lim));
}

function normalizeQuestion(id: string, q: unknown, lim: ValidationLimits): NormalizedQuestion {
  checkKey(id, 'questions', 'question id', lim);
  const at = `questions[${quote(id)}]`;
  if (!isPlainObject(q)) fail(`${at}: must be an object, got ${describe(q)}`);
  rejectUnknown(q, QUESTION_FIELDS, at);

  const type = q.type;
  if (typeof type !== 'string' || !(QUESTION_TYPES as readonly string[]).includes(type)) {
    const got = type === undefined ? 'missing' : typeof type === 'string' ? quote(type) : describe(type);
    fail(`${at}.type: must be one of ${QUESTION_TYPES.join(', ')}, got ${got}`);
  }
  const qtype = type as QuestionType;

  const instructions = q.instructions;
  if (typeof instructions !== 'string' || instructions.trim() === '') {
    const got = instructions === undefined ? 'missing' : typeof instructions === 'string' ? 'empty' : describe(instructions);
    fail(`${at}.instructions: required, a non-empty string (got ${got})`);
  }
  if (charLength(instructions, lim.maxInstructionsLength) > lim.maxInstructionsLength) {
    fail(`${at}.instructions: longer than ${lim.maxInstructionsLength} characters`);
  }
  checkUnicode(instructions, `${at}.instructions`);

  const hasCriteria = has(q, 'criteria');
  if (!hasCriteria) {
    if (qtype !== 'noul') fail(`${at}.criteria: required for type ${qtype} (an object with ${MIN_OPTIONS} to ${MAX_OPTIONS} options)`);
    return { id, type: qtype, instructions, options: [{ key: 'no', criteriaIndex: 0 }, { key: 'yes', criteriaIndex: 1 }] };
  }
  const criteria = q.criteria;
  if (!isPlainObject(criteria)) {
    fail(`${at}.criteria: must be an object mapping option keys to descriptions, got ${describe(criteria)}`);
  }
  const keys = keysInOrder(criteria);

  if (qtype === 'noul') {
    if (keys.length !== 2 || !has(criteria, 'no') || !has(criteria, 'yes')) {
      const got = keys.length === 0 ? 'none' : keys.slice(0, 5).map(quote).join(', ') + (keys.length > 5 ? ', ...' : '');
      fail(`${at}.criteria: for type noul the keys must be exactly "no" and "yes" (got ${got})`);
    }
  } else if (keys.length < MIN_OPTIONS || keys.length > MAX_OPTIONS) {
    fail(`${at}.criteria: must have ${MIN_OPTIONS} to ${MAX_OPTIONS} options, got ${keys.length}`);
  }

  const options: NormalizedOption[] = keys.map((key, criteriaIndex) => {
    checkKey(key, `${at}.criteria`, 'option key', lim);
    const description = criteria[key];
    const where = `${at}.criteria[${quote(key)}]`;
    if (typeof description !== 'string') fail(`${where}: the description must be a string, got ${describe(description)}`);
    checkDescriptionLength(description, where, lim);
    checkUnicode(description, where);
    return { key, description, criteriaIndex };
  });

  if (qtype === 'noul') {
    const no = options.find((o) => o.key === 'no')!;
    const yes = options.find((o) => o.key === 'yes')!;
    return {
      id,
      type: qtype,
      instructions,
      options: [
        { key: 'no', description: no.description!, criteriaIndex: 0 },
        { key: 'yes', description: yes.description!, criteriaIndex: 1 },
      ],
    };
  }
  if (qtype === 'score') return { id, type: qtype, instructions, options: orderScoreLevels(options, at) };
  const alike = optionsReadAlike(options);
  if (alike) {
    const [a, b] = alike.map((i) => options[i]!);
    fail(
      `${at}.criteria: options ${quote(a!.key)} and ${quote(b!.key)} read the same to the model (${quote(cutText(optionText(a!), 60))}: ` +
        'an option is shown as its description, else its key, on one line); give them different keys or descriptions',
    );
  }
  return { id, type: qtype, instructions, options };
}

/**
 * A score key as an exact decimal (it matched SCORE_LEVEL): no leading zeros in the whole part, no
 * trailing zeros in the fraction, "-0" as "0". Keys are compared as written, never through a
 * double, so that "99999999999999999999" and "99999999999999999998" stay two levels.
 */
function exactLevel(key: string): { negative: boolean; whole: string; fraction: string; text: string } {
  const negative = key.startsWith('-');
  const [wholeDigits, fractionDigits = ''] = (negative ? key.slice(1) : key).split('.');
  const whole = wholeDigits!.replace(/^0+(?=\d)/, '');
  const fraction = fractionDigits.replace(/0+$/, '');
  const zero = whole === '0' && fraction === '';
  return { negative: negative && !zero, whole, fraction, text: `${negative && !zero ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}` };
}

/**
 * The exact value of a score level as /v1/decide compares levels ("2.50" and "2.5" are one level,
 * "100000000000000000001" and "100000000000000000000" two), or undefined for a spelling it refuses
 * as a score key ("+2", "0x3", "1e0", " 3"). Two spellings name the same level exactly when their
 * values are equal strings.
 */
export function scoreLevelValue(spelling: string): string | undefined {
  return SCORE_LEVEL.test(spelling) ? exactLevel(spelling).text : undefined;
}

/** Orders two exact levels as numbers. */
function compareLevels(a: ReturnType<typeof exactLevel>, b: ReturnType<typeof exactLevel>): number {
  if (a.negative !== b.negative) return a.negative ? -1 : 1;
  const sign = a.negative ? -1 : 1;
  if (a.whole.length !== b.whole.length) return sign * (a.whole.length - b.whole.length);
  if (a.whole !== b.whole) return sign * (a.whole < b.whole ? -1 : 1);
  const width = Math.max(a.fraction.length, b.fraction.length);
  const fa = a.fraction.padEnd(width, '0');
  const fb = b.fraction.padEnd(width, '0');
  return fa === fb ? 0 : sign * (fa < fb ? -1 : 1);
}

function orderScoreLevels(options: NormalizedOption[], at: string): NormalizedOption[] {
  const seen = new Map<string, string>();
  const levels = options.map((o) => {
    const text = scoreLevelValue(o.key);
    if (text === undefined) {
      fail(
        `${at}.criteria[${quote(o.key)}]: score keys must be numeric levels written as strings, ` +
          'such as "0", "2.5" or "-1" (no spaces, "+" or exponent)',
      );
    }
    const prev = seen.get(text);
    if (prev !== undefined) {
      fail(`${at}.criteria: score levels ${quote(prev)} and ${quote(o.key)} have the same value`);
    }
    seen.set(text, o.key);
    return { o, value: exactLevel(o.key) };
  });
  levels.sort((a, b) => compareLevels(a.value, b.value));
  return levels.map((l) => l.o);
}

/**
 * Validates a decide request body (already parsed JSON) and normalizes it.
 *
 * @throws ApiError `invalid_question` (400) naming the field and the rule; `state_too_long` (413)
 *   for an object state with more values than `limits.maxStateValues`.
 * @example
 * const req = validateDecideRequest({
 *   model: 'svc-alpha',
 *   state: { ticket: 'My card was charged twice' },
 *   questions: { refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' } },
 * });
 * // req.stateText === '{"ticket":"My card was charged twice"}'
 */
export function validateDecideRequest(
  body: unknown,
  limits: Partial<ValidationLimits> = {},
): NormalizedDecideRequest {
  if (!isPlainObject(body)) fail(`request body: must be a JSON object, got ${describe(body)}`);
  const model = body.model;
  if (model === undefined) fail('model: required (a model id string)');
  if (typeof model !== 'string' || model === '') {
    fail(`model: must be a non-empty string, got ${typeof model === 'string' ? 'empty' : describe(model)}`);
  }
  const stateText = normalizeState(body.state, limits);
  const questions = normalizeQuestions(body.questions, limits);
  rejectUnknown(body, REQUEST_FIELDS, '');
  const labelMass = body.label_mass;
  if (labelMass !== undefined && typeof labelMass !== 'boolean') fail(`label_mass: must be true or false, got ${describe(labelMass)}`);
  return labelMass ? { model, stateText, questions, labelMass } : { model, stateText, questions };
}
