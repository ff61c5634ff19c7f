// From label-token logits to an answer: probs = softmax((logits - bias) / T), rounded to 6
// decimals so that they still sum to 1, plus top and confidence. T (a temperature) and bias (a
// logit offset per label token, the model's prior for that label) are the calibration of the model
// version for the question type, read from its decision.json (written by `decide calibrate`,
// src/calibration/), so a pinned model gives reproducible answers.
import { join } from 'node:path';
import { isPlainObject } from '../api/json-value.js';
import { QUESTION_TYPES, type DecisionAnswer, type QuestionType } from '../domain/decision.js';
import { objectInOrder } from '../domain/key-order.js';
import { EngineError } from '../errors/engine-error.js';
import { MODEL_FILES, readDecisionFile, type DecisionFile } from '../engine/model-dir.js';

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
 * - softmax((logits - bias) / temperature) in float64 with the maximum subtracted before the
 *   temperature divides, so any positive temperature and finite bias give finite probabilities;
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
  /** Subtracted from each logit before the temperature, in option order; default none. */
  labelBias?: ArrayLike<number>,
): DecisionAnswer {
  const { options } = question;
  const n = options.length;
  if (n === 0) throw new EngineError('ERR_RUNTIME', 'calibrate: a question without options');
  if (labelLogits.length !== n) throw new EngineError('ERR_RUNTIME', `calibrate: ${labelLogits.length} logits for ${n} options`);
  if (!(Number.isFinite(temperature) && temperature > 0)) {
    throw new EngineError('ERR_RUNTIME', `calibrate: temperature must be a positive finite number, got ${temperature}`);
  }
  if (labelBias && labelBias.length !== n) throw new EngineError('ERR_RUNTIME', `calibrate: ${labelBias.length} label biases for ${n} options`);

  // The biased logits first, their maximum subtracted before the temperature divides: dividing
  // first overflows to Infinity (a tiny T, or a huge bias), and Infinity - Infinity is NaN. After
  // the subtraction every z is <= 0, so z / T is <= 0 or -Infinity, and exp of it is in [0, 1].
  const d = new Float64Array(n);
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const l = labelLogits[i]!;
    // -Infinity is a label the model rules out; NaN or +Infinity means a broken forward pass.
    if (Number.isNaN(l) || l === Infinity) throw new EngineError('ERR_RUNTIME', `calibrate: logit ${i} is ${l}`);
    const bias = labelBias ? labelBias[i]! : 0;
    if (!Number.isFinite(bias)) throw new EngineError('ERR_RUNTIME', `calibrate: label bias ${i} is ${bias}`);
    d[i] = l - bias;
    // Two finite numbers can still sum past the largest double.
    if (d[i] === Infinity) throw new EngineError('ERR_RUNTIME', `calibrate: logit ${i} (${l}) minus its bias (${bias}) overflows`);
    if (d[i]! > max) max = d[i]!;
  }
  if (max === -Infinity) throw new EngineError('ERR_RUNTIME', 'calibrate: every label logit is -Infinity');

  const e = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    e[i] = Math.exp((d[i]! - max) / temperature); // max entry is exp(0) = 1, so 1 <= sum <= n
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
  // In option order, integer-like keys included, when written as JSON (jsonInOrder).
  const probs = objectInOrder(options.map((o, i) => [o.key, units[i]! / UNITS] as const));
  return { type: question.type, probs, top: options[top]!.key, confidence: units[top]! / UNITS };
}

export interface Calibration {
  /** Softmax temperature per question type (1 = the model's raw distribution). */
  temperature: Readonly<Record<QuestionType, number>>;
  /**
   * Per question type, label shown to the model ("A", "yes", "3") -> logit offset subtracted before
   * the temperature. A label without an entry gets 0; a type without a map is not corrected.
   */
  labelBias: Readonly<Partial<Record<QuestionType, Readonly<Record<string, number>>>>>;
}

/**
 * The temperatures and label biases a decision.json may hold. `decide calibrate` fits T in
 * [0.02, 50] and biases of a few logit units; these bounds leave a wide margin for hand-written
 * values, and refuse what can only be a slip (1e-320 for 1e-3, -1.7e308): past them a temperature
 * makes every answer one-hot or uniform to 6 decimals, and a bias outweighs any logit.
 */
export const TEMPERATURE_BOUNDS: readonly [number, number] = [1e-4, 1e4];
export const MAX_ABS_LABEL_BIAS = 1e4;

export const DEFAULT_CALIBRATION: Readonly<Calibration> = Object.freeze({
  temperature: Object.freeze({ noul: 1, choice: 1, score: 1 }),
  labelBias: Object.freeze({}),
});

/** The bias of each label of a question under `calibration`, or undefined when none applies. */
export function labelBiasFor(calibration: Calibration, type: QuestionType, labels: readonly string[]): Float64Array | undefined {
  const map = calibration.labelBias[type];
  if (!map) return undefined;
  return Float64Array.from(labels, (l) => (Object.hasOwn(map, l) ? map[l]! : 0));
}

/**
 * Reads `calibration.temperature.{noul,choice,score}` and `calibration.label_bias.{type}.{label}`
 * from `<modelDir>/decision.json`. A missing file, section or entry means 1 (temperature) or 0
 * (bias). Anything else that is not a temperature within TEMPERATURE_BOUNDS or a bias within
 * ±MAX_ABS_LABEL_BIAS, or an unknown question type, is an error naming the field (the version is
 * then listed as broken). Other keys (`calibration.fit`, the provenance
 * `decide calibrate` writes; anything other tools add) are ignored here.
 *
 * @example
 * // decision.json: { "calibration": { "temperature": { "choice": 1.3 }, "label_bias": { "choice": { "A": 0.4, "B": -0.4 } } } }
 * const cal = await loadCalibration(modelDir);
 * // { temperature: { noul: 1, choice: 1.3, score: 1 }, labelBias: { choice: { A: 0.4, B: -0.4 } } }
 */
export async function loadCalibration(modelDir: string): Promise<Calibration> {
  let decision: DecisionFile | undefined;
  try {
    decision = readDecisionFile(modelDir);
  } catch (err) {
    throw new EngineError('ERR_MODEL_LOAD', `calibration: ${(err as Error).message}`, { cause: err });
  }
  return decision === undefined ? DEFAULT_CALIBRATION : parseCalibration(decision, join(modelDir, MODEL_FILES.decision));
}

/** The calibration section of a parsed decision.json (see loadCalibration). */
export function parseCalibration(decision: unknown, source: string = MODEL_FILES.decision): Calibration {
  const bad = (field: string, rule: string): never => {
    throw new EngineError('ERR_MODEL_LOAD', `calibration: ${source}: ${field} ${rule}`);
  };
  if (!isPlainObject(decision)) bad('the file', 'must hold a JSON object');
  const d = decision as Record<string, unknown>;
  if (d.calibration === undefined) return DEFAULT_CALIBRATION;
  if (!isPlainObject(d.calibration)) bad('calibration', 'must be an object');
  const section = d.calibration as Record<string, unknown>;
  const checkTypes = (obj: Record<string, unknown>, field: string): void => {
    for (const k of Object.keys(obj)) {
      if (!(QUESTION_TYPES as readonly string[]).includes(k)) {
        bad(`${field}.${k}`, `is not a question type (use ${QUESTION_TYPES.join(', ')})`);
      }
    }
  };

  const temperature = { ...DEFAULT_CALIBRATION.temperature };
  const t = section.temperature;
  if (t !== undefined) {
    if (!isPlainObject(t)) bad('calibration.temperature', 'must be an object with keys noul, choice, score');
    const temps = t as Record<string, unknown>;
    checkTypes(temps, 'calibration.temperature');
    for (const type of QUESTION_TYPES) {
      const v = temps[type];
      if (v === undefined) continue;
      if (typeof v !== 'number' || !(v >= TEMPERATURE_BOUNDS[0] && v <= TEMPERATURE_BOUNDS[1])) {
        bad(`calibration.temperature.${type}`, `must be a number from ${TEMPERATURE_BOUNDS[0]} to ${TEMPERATURE_BOUNDS[1]}, got ${JSON.stringify(v)}`);
      }
      temperature[type] = v as number;
    }
  }

  const labelBias: Partial<Record<QuestionType, Readonly<Record<string, number>>>> = {};
  const b = section.label_bias;
  if (b !== undefined && b !== null) {
    if (!isPlainObject(b)) bad('calibration.label_bias', 'must be an object with keys noul, choice, score');
    const biases = b as Record<string, unknown>;
    checkTypes(biases, 'calibration.label_bias');
    for (const type of QUESTION_TYPES) {
      const m = biases[type];
      if (m === undefined || m === null) continue;
      if (!isPlainObject(m)) bad(`calibration.label_bias.${type}`, 'must be an object from label to number');
      const map: Record<string, number> = Object.create(null);
      for (const [label, v] of Object.entries(m as Record<string, unknown>)) {
        if (typeof v !== 'number' || !(Math.abs(v) <= MAX_ABS_LABEL_BIAS)) {
          bad(`calibration.label_bias.${type}.${label}`, `must be a number from -${MAX_ABS_LABEL_BIAS} to ${MAX_ABS_LABEL_BIAS}, got ${JSON.stringify(v)}`);
        }
        map[label] = v as number;
      }
      labelBias[type] = Object.freeze(map);
    }
  }
  return { temperature: Object.freeze(temperature), labelBias: Object.freeze(labelBias) };
}
