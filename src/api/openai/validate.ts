// An OpenAI `POST /v1/decisions` body -> the domain request, or OpenAI's 400 naming the field in
// `param`. Every rule and limit is ours (src/api/validate.ts; the counts in QUESTION_LIMITS: 64
// questions, 2..255 choices, 2..10 score levels), instructions 1..4000 characters, descriptions up
// to 2000.
// Mapping (docs/compatibility.md has the table):
//   input   a string -> the state text as it is (the same state /v1/decide reads from a string);
//           one user message -> its content; several messages -> "role: content" blocks joined by
//           a blank line. Content parts: input_text as its text, input_json as compact JSON (one
//           user message with one input_json part reads exactly as /v1/decide's object state);
//           parts joined by a blank line. input_image, assistant messages, tool calls and tool
//           outputs: 400 saying this server scores text only.
//   predicate -> noul without criteria (P(yes) is the probability)
//   choice    -> options "0".."n-1" in the given order; the model reads each option's description,
//                else its value as text (true -> "true"), exactly as /v1/decide shows a criteria
//                entry's description, else its key
//   score     -> options "0".."n-1"; the model reads "label: description", or the label alone
//   question ids are the positions "0", "1", ... (names may repeat or be absent).
import { cutText, optionsReadAlike, optionText, type NormalizedDecideRequest, type NormalizedOption, type NormalizedQuestion } from '../../domain/decision.js';
import { QUESTION_LIMITS } from '../../domain/question-limits.js';
import { isApiError } from '../errors.js';
import type { DialectCall, DialectParse, ParseContext, WireError } from '../dialect.js';
import { isPlainObject, jsonType, shownValue } from '../json-value.js';
import { DEFAULT_VALIDATION_LIMITS, structuredText, type ValidationLimits } from '../validate.js';
import { invalidRequest, openAiError } from './errors.js';
import type { DecisionValue } from './schemas.js';

const REQUEST_FIELDS = ['model', 'input', 'questions', 'safety_identifier', 'prompt_cache_key', 'prompt_cache_options'];
const QUESTION_FIELDS: Record<string, string[]> = {
  predicate: ['type', 'instructions', 'name'],
  choice: ['type', 'instructions', 'name', 'choices'],
  score: ['type', 'instructions', 'name', 'levels'],
};
const TEXT_ROLES = ['user', 'system', 'developer'];

/** How to render each answer: the question's OpenAI type, name, and choice values or level labels. */
export interface DecisionsQuestion {
  type: 'predicate' | 'choice' | 'score';
  name: string | null;
  /** choice: the values in the given order (they keep their JSON type). */
  values?: DecisionValue[];
  /** score: the level labels in the given order. */
  labels?: string[];
}

export interface DecisionsCall extends DialectCall {
  /** In request order; question i is the domain question with id String(i). */
  questions: DecisionsQuestion[];
}

class Rejection {
  constructor(readonly error: WireError) {}
}

function reject(message: string, param: string | null): never {
  throw new Rejection(invalidRequest(`${param ? `${param}: ` : ''}${message}`, param));
}

function charLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** The fields of each content part we read; prompt_cache_breakpoint is accepted and ignored. */
const PART_FIELDS: Record<string, string[]> = {
  input_text: ['type', 'text', 'prompt_cache_breakpoint'],
  input_json: ['type', 'data', 'prompt_cache_breakpoint'],
};

/** The text of one content part (input_text, input_json); anything else is a 400 naming it. */
function partText(part: unknown, at: string, limits: Partial<ValidationLimits>): string {
  if (!isPlainObject(part)) reject(`must be a content part object, got ${jsonType(part)}`, at);
  const fields = typeof part.type === 'string' && Object.hasOwn(PART_FIELDS, part.type) ? PART_FIELDS[part.type]! : undefined;
  // A typo (prompt_cache_breakpont) is reported, as everywhere else in the request.
  for (const field of fields ? Object.keys(part) : []) if (!fields!.includes(field)) reject(`unknown field (allowed: ${fields!.join(', ')})`, `${at}.${field}`);
  switch (part.type) {
    case 'input_text':
      if (typeof part.text !== 'string') reject(`text must be a string, got ${jsonType(part.text)}`, `${at}.text`);
      return part.text;
    case 'input_json': {
      const data = part.data;
      if (!isPlainObject(data) && !Array.isArray(data)) reject(`data must be an object or an array, got ${jsonType(data)}`, `${at}.data`);
      return structuredText(data, { path: `${at}.data` }, limits);
    }
    case 'input_image':
      return reject('input_image parts are not supported: this server scores text only (input_text and input_json parts)', at);
    default:
      return reject(`unsupported content part type ${JSON.stringify(String(part.type)).slice(0, 80)} (supported: input_text, input_json)`, `${at}.type`);
  }
}

function contentText(content: unknown, at: string, limits: Partial<ValidationLimits>): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content) || content.length === 0) reject(`must be a string or a non-empty array of content parts, got ${jsonType(content)}`, at);
  return content.map((part, i) => partText(part, `${at}[${i}]`, limits)).join('\n\n');
}

/** The state text of `input`: see the file comment. */
function inputText(input: unknown, limits: Partial<ValidationLimits>): string {
  if (typeof input === 'string') return input;
  if (input === undefined) reject('required (a string or an array of messages)', 'input');
  if (!Array.isArray(input) || input.length === 0) reject(`must be a string or a non-empty array of messages, got ${jsonType(input)}`, 'input');
  const messages = input.map((m, i) => {
    const at = `input[${i}]`;
    if (!isPlainObject(m)) reject(`must be a message object, got ${jsonType(m)}`, at);
    if (m.type !== undefined && m.type !== 'message') {
      reject(`${JSON.stringify(String(m.type)).slice(0, 80)} items are not supported: this server scores text (user, system and developer messages)`, `${at}.type`);
    }
    if (m.role === undefined) reject(`required, one of ${TEXT_ROLES.join(', ')}`, `${at}.role`);
    if (typeof m.role !== 'string') reject(`must be one of ${TEXT_ROLES.join(', ')}, got ${jsonType(m.role)}`, `${at}.role`);
    if (!TEXT_ROLES.includes(m.role)) {
      reject(`role ${JSON.stringify(m.role).slice(0, 80)} is not supported (supported: ${TEXT_ROLES.join(', ')})`, `${at}.role`);
    }
    for (const field of Object.keys(m)) {
      if (!['role', 'content', 'type'].includes(field)) reject('unknown field (allowed: role, content, type)', `${at}.${field}`);
    }
    return { role: m.role, text: contentText(m.content, `${at}.content`, limits) };
  });
  if (messages.length === 1 && messages[0]!.role === 'user') return messages[0]!.text;
  return messages.map((m) => `${m.role}: ${m.text}`).join('\n\n');
}

function instructionsText(value: unknown, at: string, limits: ValidationLimits): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (Array.isArray(value) && value.length > 0) text = value.map((part, i) => partText(part, `${at}[${i}]`, limits)).join('\n\n');
  else return reject(`required, a non-empty string or array of input_text/input_json parts, got ${jsonType(value)}`, at);
  if (text.trim() === '') reject('must not be empty', at);
  if (charLength(text) > limits.maxInstructionsLength) reject(`longer than ${limits.maxInstructionsLength} characters`, at);
  return text;
}

function optionalDescription(item: Record<string, unknown>, at: string, limits: ValidationLimits): string | undefined {
  const d = item.description;
  if (d === undefined || d === null) return undefined;
  if (typeof d !== 'string') reject(`must be a string, got ${jsonType(d)}`, `${at}.description`);
  if (charLength(d) > limits.maxDescriptionLength) reject(`longer than ${limits.maxDescriptionLength} characters`, `${at}.description`);
  return d.trim() === '' ? undefined : d;
}

function listOf(value: unknown, at: string, what: string, min: number, max: number): unknown[] {
  if (!Array.isArray(value)) reject(`required, an array of ${min} to ${max} ${what}, got ${jsonType(value)}`, at);
  if (value.length > max) reject(`at most ${max} ${what} per question, got ${value.length}`, at);
  if (value.length < min) reject(`at least ${min} ${what} per question, got ${value.length}`, at);
  return value;
}

function choiceOptions(q: Record<string, unknown>, at: string, limits: ValidationLimits): { options: NormalizedOption[]; values: DecisionValue[] } {
  const items = listOf(q.choices, `${at}.choices`, 'choices', QUESTION_LIMITS.minOptions, QUESTION_LIMITS.maxOptions);
  const seen = new Map<string, number>();
  const values: DecisionValue[] = [];
  const options = items.map((item, i) => {
    const where = `${at}.choices[${i}]`;
    if (!isPlainObject(item)) reject(`must be an object {value, description?}, got ${jsonType(item)}`, where);
    for (const field of Object.keys(item)) if (field !== 'value' && field !== 'description') reject('unknown field (allowed: value, description)', `${where}.${field}`);
    const value = item.value;
    if (typeof value === 'string') {
      if (value.trim() === '') reject('must not be empty', `${where}.value`);
      if (charLength(value) > limits.maxKeyLength) reject(`longer than ${limits.maxKeyLength} characters`, `${where}.value`);
    } else if (typeof value !== 'boolean') {
      reject(`must be a string or a boolean, got ${jsonType(value)}`, `${where}.value`);
    }
    // Values are typed: "true" and true are distinct choices.
    const identity = `${typeof value}:${String(value)}`;
    const first = seen.get(identity);
    if (first !== undefined) reject(`duplicates choices[${first}].value; each choice must be unique`, `${where}.value`);
    seen.set(identity, i);
    values.push(value);
    return { key: String(i), description: optionalDescription(item, where, limits), criteriaIndex: i };
  });
  // Without a description the model reads the value as text. "true" and true are distinct choices,
  // so a string that reads as a boolean choice of the same question (as shown: "true " too) is
  // quoted: "true" vs true.
  const booleanTexts = new Set(values.filter((v) => typeof v === 'boolean').map(String));
  for (const [i, option] of options.entries()) {
    const value = values[i]!;
    option.description ??= typeof value === 'string' && booleanTexts.has(optionText({ key: value })) ? JSON.stringify(value) : String(value);
  }
  const alike = optionsReadAlike(options);
  if (alike) {
    const [first, second] = alike;
    reject(
      `reads the same to the model as choices[${first}] (${JSON.stringify(cutText(optionText(options[second]!), 60))}: a choice is shown as its description, else its value, on one line); give them different values or descriptions`,
      `${at}.choices[${second}]`,
    );
  }
  return { options, values };
}

function scoreOptions(q: Record<string, unknown>, at: string, limits: ValidationLimits): { options: NormalizedOption[]; labels: string[] } {
  const items = listOf(q.levels, `${at}.levels`, 'levels', QUESTION_LIMITS.minLevels, QUESTION_LIMITS.maxLevels);
  const labels: string[] = [];
  const options = items.map((item, i) => {
    const where = `${at}.levels[${i}]`;
    if (!isPlainObject(item)) reject(`must be an object {label, description?}, got ${jsonType(item)}`, where);
    for (const field of Object.keys(item)) if (field !== 'label' && field !== 'description') reject('unknown field (allowed: label, description)', `${where}.${field}`);
    const label = item.label;
    if (typeof label !== 'string' || label.trim() === '') reject(`required, a non-empty string, got ${typeof label === 'string' ? 'empty' : jsonType(label)}`, `${where}.label`);
    if (charLength(label) > limits.maxKeyLength) reject(`longer than ${limits.maxKeyLength} characters`, `${where}.label`);
    labels.push(label);
    const description = optionalDescription(item, where, limits);
    return { key: String(i), description: description === undefined ? label : `${label}: ${description}`, criteriaIndex: i };
  });
  return { options, labels };
}

function question(q: unknown, i: number, limits: ValidationLimits): { domain: NormalizedQuestion; wire: DecisionsQuestion } {
  const at = `questions[${i}]`;
  if (!isPlainObject(q)) reject(`must be a question object, got ${jsonType(q)}`, at);
  const type = q.type;
  if (typeof type !== 'string' || !Object.hasOwn(QUESTION_FIELDS, type)) {
    reject(`type must be one of predicate, choice, score, got ${typeof type === 'string' ? JSON.stringify(cutText(type, 60)) : jsonType(type)}`, `${at}.type`);
  }
  for (const field of Object.keys(q)) {
    if (!QUESTION_FIELDS[type]!.includes(field)) reject(`unknown field for a ${type} question (allowed: ${QUESTION_FIELDS[type]!.join(', ')})`, `${at}.${field}`);
  }
  const name = q.name ?? null;
  if (name !== null && typeof name !== 'string') reject(`must be a string, got ${jsonType(name)}`, `${at}.name`);
  const instructions = instructionsText(q.instructions, `${at}.instructions`, limits);
  const id = String(i);
  if (type === 'predicate') {
    const options = [{ key: 'no', criteriaIndex: 0 }, { key: 'yes', criteriaIndex: 1 }];
    return { domain: { id, type: 'noul', instructions, options }, wire: { type, name } };
  }
  if (type === 'choice') {
    const { options, values } = choiceOptions(q, at, limits);
    return { domain: { id, type: 'choice', instructions, options }, wire: { type, name, values } };
  }
  const { options, labels } = scoreOptions(q, at, limits);
  return { domain: { id, type: 'score', instructions, options }, wire: { type: 'score', name, labels } };
}

/**
 * `prompt_cache_options`, OpenAI's `{mode?: "implicit" | "explicit" | null, ttl?: "30m"}`: checked
 * as the SDK types it, then ignored (the engine's prefix cache needs no breakpoints).
 */
function promptCacheOptions(value: unknown): void {
  if (value === undefined || value === null) return;
  if (!isPlainObject(value)) reject(`must be an object, got ${jsonType(value)}`, 'prompt_cache_options');
  for (const [key, v] of Object.entries(value)) {
    const at = `prompt_cache_options.${cutText(key, 80)}`;
    if (key === 'mode') {
      if (v !== null && v !== 'implicit' && v !== 'explicit') reject(`must be 'implicit', 'explicit' or null, got ${shownValue(v)}`, at);
    } else if (key === 'ttl') {
      if (v !== null && v !== '30m') reject(`must be '30m' (the only value), got ${shownValue(v)}`, at);
    } else {
      reject('unknown field (allowed: mode, ttl)', at);
    }
  }
}

/**
 * Validates an OpenAI decisions body (already parsed JSON) into the domain request. Never throws.
 * @example
 * const parsed = parseDecisions({ model: 'svc-alpha', input: 'The screen arrived broken.',
 *   questions: [{ type: 'predicate', name: 'damaged', instructions: 'Is the item damaged?' }] });
 */
export function parseDecisions(body: unknown, context: ParseContext = {}): DialectParse<DecisionsCall> {
  const lim = { ...DEFAULT_VALIDATION_LIMITS, ...context.limits };
  try {
    if (!isPlainObject(body)) reject(`the request body must be a JSON object, got ${jsonType(body)}`, null);
    for (const field of Object.keys(body)) {
      if (!REQUEST_FIELDS.includes(field)) reject(`Unrecognized request argument supplied: ${cutText(field, 80)}`, cutText(field, 80));
    }
    const model = body.model;
    if (typeof model !== 'string' || model === '') reject(`required, a non-empty string, got ${model === undefined ? 'nothing' : model === '' ? 'an empty string' : jsonType(model)}`, 'model');
    for (const field of ['safety_identifier', 'prompt_cache_key']) {
      const v = body[field];
      if (v !== undefined && v !== null && typeof v !== 'string') reject(`must be a string, got ${jsonType(v)}`, field);
    }
    promptCacheOptions(body.prompt_cache_options);
    const stateText = inputText(body.input, lim);
    const questions = body.questions;
    if (!Array.isArray(questions)) reject(`required, an array of 1 to ${lim.maxQuestions} questions, got ${questions === undefined ? 'nothing' : jsonType(questions)}`, 'questions');
    if (questions.length === 0) reject('must contain at least 1 question', 'questions');
    if (questions.length > lim.maxQuestions) reject(`at most ${lim.maxQuestions} questions per request, got ${questions.length}`, 'questions');
    const parsed = questions.map((q, i) => question(q, i, lim));
    const request: NormalizedDecideRequest = { model, stateText, questions: parsed.map((p) => p.domain) };
    return { ok: true, call: { request, questions: parsed.map((p) => p.wire) } };
  } catch (err) {
    if (err instanceof Rejection) return { ok: false, error: err.error, code: 'invalid_question' };
    if (isApiError(err)) return { ok: false, error: openAiError(err), code: err.code };
    throw err;
  }
}
