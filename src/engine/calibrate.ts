// From label-token logits to an answer: probs = softmax(logits / T), rounded to 6 decimals so
// that they still sum to 1, plus top and confidence. T is the calibration temperature of the model
// version for the question type (decision.json), so a pinned model gives reproducible answers.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { QUESTION_TYPES, type Answer, type QuestionType } from '../api/schemas.js';
import { EngineError } from '../errors/engine-error.js';

/** Probabilities are integers of this many units: 6 decimals. */
const UNITS = 1_000_000;

export interface CalibrationQuestion {
  type: QuestionType;
  /** In option order (the order of `labelLogits`). */
  options: ReadonlyArray<{ key: string; criteriaIndex: number }>;
}

/**
 * The answer for one question from the logits of its label tokens (one per option, in option order).
 *
 * - softmax(logits / temperature) in float64 with the maximum subtracted first;
 * - rounded by largest remainder to multiples of 1e-6 that sum to exactly 1,000,000 units, so every
 *   value is in [0, 1] and within 1e-6 of the exact probability, and the sum is 1;
 * - `top` is the largest rounded value, ties going to the lowest `criteriaIndex`; `confidence === probs[top]`.
 *
 * @example
 * answerFromLogits({ type: 'noul', options: [{ key: 'no', criteriaIndex: 0 }, { key: 'yes', criteriaIndex: 1 }] },
 *   Float32Array.of(1.5, 3.0), 1);
 * // { type: 'noul', probs: { no: 0.182426, yes: 0.817574 }, top: 'yes', confidence: 0.817574 }
 */
export function answerFromLogits(
  question: CalibrationQuestion,
  labelLogits: ArrayLike<number>,
  temperature: number,
): Answer {
  const { options } = question;
  const n = options.length;
  if (n === 0) throw new EngineError('ERR_RUNTIME', 'calibrate: a question without options');
  if (labelLogits.length !== n) throw new EngineError('ERR_RUNTIME', `calibrate: ${labelLogits.length} logits for ${n} options`);
  if (!(Number.isFinite(temperature) && temperature > 0)) {
    throw new EngineError('ERR_RUNTIME', `calibrate: temperature must be a positive finite number, got ${temperature}`);
  }

  const z = new Float64Array(n);
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const l = labelLogits[i]!;
    // -Infinity is a label the model rules out; NaN or +Infinity means a broken forward pass.
    if (Number.isNaN(l) || l === Infinity) throw new EngineError('ERR_RUNTIME', `calibrate: logit ${i} is ${l}`);
    z[i] = l / temperature;
    if (z[i]! > max) max = z[i]!;
  }
  if (max === -Infinity) throw new EngineError('ERR_RUNTIME', 'calibrate: every label logit is -Infinity');

  const e = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    e[i] = Math.exp(z[i]! - max); // max entry is exp(0) = 1, so 1 <= sum <= n
    sum += e[i]!;
  }

  // Largest-remainder rounding: floor every scaled value, then give the missing units one each to
  // the largest fractional parts (ties: criteria order). Order between options never inverts.
  const units = new Array<number>(n);
  const frac = new Float64Array(n);
  let assigned = 0;
  for (let i = 0; i < n; i++) {
    const scaled = (e[i]! / sum) * UNITS;
    units[i] = Math.min(UNITS, Math.floor(scaled));
    frac[i] = scaled - units[i]!;
    assigned += units[i]!;
  }
  const byRemainder = [...Array(n).keys()].sort(
    (a, b) => frac[b]! - frac[a]! || options[a]!.criteriaIndex - options[b]!.criteriaIndex,
  );
  for (let r = UNITS - assigned, k = 0; r > 0 && k < n; r--, k++) units[byRemainder[k]!]! += 1;

  let top = 0;
  for (let i = 1; i < n; i++) {
    if (units[i]! > units[top]! || (units[i] === units[top] && options[i]!.criteriaIndex < options[top]!.criteriaIndex)) {
      top = i;
    }
  }
  const probs = Object.fromEntries(options.map((o, i) => [o.key, units[i]! / UNITS]));
  return { type: question.type, probs, top: options[top]!.key, confidence: units[top]! / UNITS };
}

export interface Calibration {
  /** Softmax temperature per question type (1 = the model's raw distribution). */
  temperature: Readonly<Record<QuestionType, number>>;
}

export const DEFAULT_CALIBRATION: Readonly<Calibration> = Object.freeze({
  temperature: Object.freeze({ noul: 1, choice: 1, score: 1 }),
});

/**
 * Reads `calibration.temperature.{noul,choice,score}` from `<modelDir>/decision.json`.
 * A missing file, section or entry means 1. Anything else that is not a positive finite number,
 * or an unknown question type under `temperature`, is an error naming the field.
 *
 * @example
 * // decision.json: { "calibration": { "temperature": { "choice": 1.3 } } }
 * const cal = await loadCalibration(modelDir); // { temperature: { noul: 1, choice: 1.3, score: 1 } }
 */
export async function loadCalibration(modelDir: string): Promise<Calibration> {
  const path = join(modelDir, 'decision.json');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return DEFAULT_CALIBRATION;
    throw new EngineError('ERR_MODEL_LOAD', `calibration: cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new EngineError('ERR_MODEL_LOAD', `calibration: ${path} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  return parseCalibration(json, path);
}

/** The calibration section of a parsed decision.json (see loadCalibration). */
export function parseCalibration(decision: unknown, source = 'decision.json'): Calibration {
  const bad = (field: string, rule: string): never => {
    throw new EngineError('ERR_MODEL_LOAD', `calibration: ${source}: ${field} ${rule}`);
  };
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);

  if (!isObject(decision)) bad('the file', 'must hold a JSON object');
  const d = decision as Record<string, unknown>;
  if (d.calibration === undefined) return DEFAULT_CALIBRATION;
  if (!isObject(d.calibration)) bad('calibration', 'must be an object');
  const t = (d.calibration as Record<string, unknown>).temperature;
  if (t === undefined) return DEFAULT_CALIBRATION;
  if (!isObject(t)) bad('calibration.temperature', 'must be an object with keys noul, choice, score');
  const temps = t as Record<string, unknown>;
  for (const k of Object.keys(temps)) {
    if (!(QUESTION_TYPES as readonly string[]).includes(k)) {
      bad(`calibration.temperature.${k}`, `is not a question type (use ${QUESTION_TYPES.join(', ')})`);
    }
  }
  const temperature = { ...DEFAULT_CALIBRATION.temperature };
  for (const type of QUESTION_TYPES) {
    const v = temps[type];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
      bad(`calibration.temperature.${type}`, `must be a positive finite number, got ${JSON.stringify(v)}`);
    }
    temperature[type] = v as number;
  }
  return { temperature: Object.freeze(temperature) };
}
