// A System One request body -> the domain request, or System One's error. Two passes, in the
// vendor's order (docs/compatibility.md, the errors of /v1/systemone):
//   1. shape (422, a Pydantic-style list of every problem, `loc` from "body"): the body is an
//      object, `model` a non-empty string, `state` a string/object/array, `questions` a non-empty
//      object of objects, each with a string `type`, and for a known type criteria of the right
//      JSON type (choice: object, score: array, noul: object with only "true"/"false");
//   2. rules (400): unknown fields, an unknown type and our limits (QUESTION_LIMITS: 64 questions,
//      2..255 choices, 2..10 score levels; a bare-string detail naming the limit, as the vendor words it), then
//      every rule of /v1/decide through the same normalizer (src/api/validate.ts), so a question
//      asked here becomes exactly the domain question /v1/decide would make of it.
// Mapping (one question type at a time; docs/compatibility.md has the table):
//   noul   criteria {true, false} -> options no/yes with those descriptions (absent: none)
//   choice criteria {key: desc|null} -> options in criteria order; null -> no description (the
//          model reads the key, as /v1/decide does for an empty description)
//   score  criteria [level0, level1, ...] -> options "0", "1", ... with the levels as descriptions
//   instructions, descriptions, levels given as objects or arrays -> their compact JSON text;
//   an array state -> its compact JSON text (an object state as /v1/decide renders it).
import { quote, type NormalizedDecideRequest, type QuestionType } from '../../domain/decision.js';
import { entriesInOrder, keysInOrder, objectInOrder } from '../../domain/key-order.js';
import { QUESTION_LIMITS } from '../../domain/question-limits.js';
import { isApiError } from '../errors.js';
import type { DialectCall, DialectParse, ParseContext, WireError } from '../dialect.js';
import { isPlainObject, jsonType } from '../json-value.js';
import { checkDescriptionLength, normalizeQuestions, normalizeState, structuredText, DEFAULT_VALIDATION_LIMITS, type ValidationLimits } from '../validate.js';
import { limitError, systemOneError, unprocessable, usageError } from './errors.js';
import type { SystemOneProblem } from './schemas.js';

const REQUEST_FIELDS = ['model', 'state', 'questions'] as const;
const QUESTION_FIELDS = ['type', 'instructions', 'criteria'] as const;
const TYPES: readonly QuestionType[] = ['noul', 'choice', 'score'];

/** A parsed System One request: the domain request plus each score question's levels as given (the legend). */
export interface SystemOneCall extends DialectCall {
  /** Score question id -> its criteria array as the caller gave it (legend values keep their JSON type). */
  legends: Map<string, unknown[]>;
}

type Loc = Array<string | number>;

const isText = (v: unknown) => typeof v === 'string' || isPlainObject(v) || Array.isArray(v);

/** Pass 1: every shape problem of the body, in body order. */
function shapeProblems(body: unknown): SystemOneProblem[] {
  const problems: SystemOneProblem[] = [];
  const add = (type: string, loc: Loc, msg: string) => problems.push({ type, loc: ['body', ...loc], msg });
  if (!isPlainObject(body)) {
    add('model_attributes_type', [], `Input should be a valid dictionary or object to extract fields from, got ${jsonType(body)}`);
    return problems;
  }
  if (!Object.hasOwn(body, 'model')) add('missing', ['model'], 'Field required');
  else if (typeof body.model !== 'string') add('string_type', ['model'], 'Input should be a valid string');
  else if (body.model === '') add('string_too_short', ['model'], 'String should have at least 1 character');

  if (!Object.hasOwn(body, 'state')) add('missing', ['state'], 'Field required');
  else if (!isText(body.state)) add('union_type', ['state'], `Input should be a string, an object or an array, got ${jsonType(body.state)}`);

  const questions = body.questions;
  if (!Object.hasOwn(body, 'questions')) add('missing', ['questions'], 'Field required');
  else if (!isPlainObject(questions)) add('dict_type', ['questions'], 'Input should be a valid dictionary');
  else if (Object.keys(questions).length === 0) add('too_short', ['questions'], 'Dictionary should have at least 1 item after validation, not 0');
  else {
    for (const [id, q] of entriesInOrder(questions)) questionShape(id, q, add);
  }
  return problems;
}

function questionShape(id: string, q: unknown, add: (type: string, loc: Loc, msg: string) => void): void {
  const at: Loc = ['questions', id];
  if (!isPlainObject(q)) return add('model_attributes_type', at, 'Input should be a valid dictionary or object to extract fields from');
  if (!Object.hasOwn(q, 'type')) add('missing', [...at, 'type'], 'Field required');
  else if (typeof q.type !== 'string') add('string_type', [...at, 'type'], 'Input should be a valid string');
  const instructions = q.instructions;
  if (instructions !== undefined && instructions !== null && !isText(instructions)) {
    add('string_type', [...at, 'instructions'], 'Input should be a string, an object or an array');
  }
  const criteria = q.criteria;
  const hasCriteria = criteria !== undefined && criteria !== null;
  switch (q.type) {
    case 'noul':
      if (!hasCriteria) break;
      if (!isPlainObject(criteria)) add('dict_type', [...at, 'criteria'], 'Input should be a valid dictionary with the keys "true" and "false"');
      else {
        for (const [key, value] of entriesInOrder(criteria)) {
          if (key !== 'true' && key !== 'false') add('extra_forbidden', [...at, 'criteria', key], 'Extra inputs are not permitted (noul criteria take "true" and "false")');
          else if (value !== null && !isText(value)) add('string_type', [...at, 'criteria', key], 'Input should be a string, an object or an array');
        }
      }
      break;
    case 'choice':
      if (!hasCriteria) add('missing', [...at, 'criteria'], 'Field required');
      else if (!isPlainObject(criteria)) add('dict_type', [...at, 'criteria'], 'Input should be a valid dictionary of option -> description');
      else {
        for (const [key, value] of entriesInOrder(criteria)) {
          if (value !== null && !isText(value)) add('string_type', [...at, 'criteria', key], 'Input should be a string, an object, an array or null');
        }
      }
      break;
    case 'score':
      if (!hasCriteria) add('missing', [...at, 'criteria'], 'Field required');
      else if (!Array.isArray(criteria)) add('list_type', [...at, 'criteria'], 'Input should be a valid list of levels');
      else {
        // An empty list is no shape problem: like a single level, it is pass 2's 400 "Too few score levels".
        criteria.forEach((level, i) => {
          if (!isText(level)) add('string_type', [...at, 'criteria', i], 'Input should be a string, an object or an array');
        });
      }
      break;
    default:
      // An unknown type is a 400 (pass 2), as the vendor answers it.
      break;
  }
}

class Rejection {
  constructor(readonly error: WireError) {}
}

function reject(error: WireError): never {
  throw new Rejection(error);
}

/** Text as the model reads it: a string as it is, an object or array (pass 1 checked) as compact JSON. */
function textAt(value: unknown, path: string, limits: Partial<ValidationLimits>): string {
  return typeof value === 'string' ? value : structuredText(value as object, { path }, limits);
}

/** An option's description (a criteria value or a score level), its length checked where the caller wrote it. */
function descriptionAt(value: unknown, path: string, limits: Partial<ValidationLimits>): string {
  const text = textAt(value, path, limits);
  checkDescriptionLength(text, path, limits);
  return text;
}

/** Pass 2 on a body that passed pass 1: our rules, then the decide-shaped question map. */
function toDecideQuestions(questions: Record<string, Record<string, unknown>>, limits: Partial<ValidationLimits>) {
  const maxQuestions = limits.maxQuestions ?? DEFAULT_VALIDATION_LIMITS.maxQuestions;
  const ids = keysInOrder(questions);
  if (ids.length > maxQuestions) reject(limitError(`Too many questions. Must have at most ${maxQuestions} questions.`));
  const legends = new Map<string, unknown[]>();
  // In the caller's order; a question id "__proto__" stays a key (normalizeQuestions then rejects it by name).
  const decide: Array<[string, unknown]> = [];
  for (const id of ids) {
    const q = questions[id]!;
    const at = `questions[${quote(id)}]`;
    for (const field of Object.keys(q)) {
      if (!(QUESTION_FIELDS as readonly string[]).includes(field)) {
        reject(usageError(`Invalid request: ${at}.${field} is not a question field (allowed: ${QUESTION_FIELDS.join(', ')}).`));
      }
    }
    const type = q.type as string;
    if (!(TYPES as readonly string[]).includes(type)) {
      reject(usageError(`Invalid request: ${at}.type must be one of ${TYPES.join(', ')}, got ${quote(type)}.`));
    }
    const instructions = q.instructions === undefined || q.instructions === null ? q.instructions : textAt(q.instructions, `${at}.instructions`, limits);
    const criteria = q.criteria ?? undefined;
    const out: Record<string, unknown> = { type, instructions };
    if (type === 'noul' && criteria !== undefined) {
      const c = criteria as Record<string, unknown>;
      // Both or neither: /v1/decide's noul criteria name both options; a missing side reads as its key.
      if (c.true != null || c.false != null) {
        out.criteria = {
          no: c.false == null ? '' : descriptionAt(c.false, `${at}.criteria.false`, limits),
          yes: c.true == null ? '' : descriptionAt(c.true, `${at}.criteria.true`, limits),
        };
      }
    } else if (type === 'choice') {
      const c = criteria as Record<string, unknown>;
      const n = keysInOrder(c).length;
      if (n > QUESTION_LIMITS.maxOptions) reject(limitError(`Too many choices. Must have at most ${QUESTION_LIMITS.maxOptions} choices.`));
      if (n < QUESTION_LIMITS.minOptions) reject(limitError(`Too few choices. Must have at least ${QUESTION_LIMITS.minOptions} choices.`));
      out.criteria = objectInOrder(entriesInOrder(c).map(([key, d]) => [key, d === null ? '' : descriptionAt(d, `${at}.criteria[${quote(key)}]`, limits)]));
    } else if (type === 'score') {
      const levels = criteria as unknown[];
      if (levels.length > QUESTION_LIMITS.maxLevels) reject(limitError(`Too many score levels. Must have at most ${QUESTION_LIMITS.maxLevels} levels.`));
      if (levels.length < QUESTION_LIMITS.minLevels) reject(limitError(`Too few score levels. Must have at least ${QUESTION_LIMITS.minLevels} levels.`));
      out.criteria = Object.fromEntries(levels.map((level, i) => [String(i), descriptionAt(level, `${at}.criteria[${i}]`, limits)]));
      legends.set(id, levels);
    }
    decide.push([id, out]);
  }
  return { decide: objectInOrder(decide), legends };
}

/** The state as the model reads it: a string as it is, an object or array as compact JSON. */
function stateText(state: unknown, limits: Partial<ValidationLimits>): string {
  // /v1/decide's state is a string or an object; an array gets the same checks as an object.
  return Array.isArray(state) ? structuredText(state, { path: 'state', noun: 'state' }, limits) : normalizeState(state, limits);
}

/**
 * Validates a System One body (already parsed JSON) into the domain request. Never throws.
 * @example
 * const parsed = parseSystemOne({ model: 'svc-alpha', state: 'Where is my parcel?',
 *   questions: { late: { type: 'noul', instructions: 'Is the parcel late?' } } });
 * if (parsed.ok) await service.decideNormalized(parsed.call.request);
 */
export function parseSystemOne(body: unknown, context: ParseContext = {}): DialectParse<SystemOneCall> {
  const limits = context.limits ?? {};
  const problems = shapeProblems(body);
  if (problems.length > 0) return { ok: false, error: unprocessable(problems), code: 'invalid_question' };
  const b = body as Record<string, unknown>;
  try {
    for (const field of Object.keys(b)) {
      if (!(REQUEST_FIELDS as readonly string[]).includes(field)) {
        reject(usageError(`Invalid request: ${quote(field)} is not a request field (a System One request has ${REQUEST_FIELDS.join(', ')}).`));
      }
    }
    const { decide, legends } = toDecideQuestions(b.questions as Record<string, Record<string, unknown>>, limits);
    const request: NormalizedDecideRequest = {
      model: b.model as string,
      stateText: stateText(b.state, limits),
      questions: normalizeQuestions(decide, limits),
    };
    return { ok: true, call: { request, legends } };
  } catch (err) {
    if (err instanceof Rejection) return { ok: false, error: err.error, code: 'invalid_question' };
    if (isApiError(err)) return { ok: false, error: systemOneError(err), code: err.code };
    throw err;
  }
}
