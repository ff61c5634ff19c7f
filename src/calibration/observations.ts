/**
 * What calibration works on: one answered question with a known right option. Everything in
 * src/calibration/ is pure arithmetic on these (no engine), so fits and figures are unit-tested on
 * simulated classifiers.
 */
import type { QuestionType } from '../api/schemas.js';

export interface Observation {
  type: QuestionType;
  /** The engine's raw label-token logits, in option order (uncalibrated). */
  logits: ArrayLike<number>;
  /** The label the model was shown for each option ("A", "yes", "3"), in option order. */
  labels: readonly string[];
  /** Index of the expected option. */
  expected: number;
  /** The data row it came from: bootstrap intervals draw a row's answers together (bootstrap.ts). */
  row?: number;
}

/** A correction for one question type: probs = softmax((logits - bias[label]) / temperature). */
export interface TypeCorrection {
  temperature: number;
  /** Label -> logit offset; absent: no bias correction. */
  labelBias?: Readonly<Record<string, number>>;
}

export const IDENTITY: Readonly<TypeCorrection> = Object.freeze({ temperature: 1 });

/** Calibrated probabilities of one observation in float64 (no rounding: the figures use these). */
export function correctedProbs(obs: Observation, correction: TypeCorrection): Float64Array {
  const n = obs.logits.length;
  const z = new Float64Array(n);
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const bias = correction.labelBias ? (correction.labelBias[obs.labels[i]!] ?? 0) : 0;
    z[i] = (obs.logits[i]! - bias) / correction.temperature;
    if (z[i]! > max) max = z[i]!;
  }
  let sum = 0;
  for (let i = 0; i < n; i++) {
    z[i] = Math.exp(z[i]! - max);
    sum += z[i]!;
  }
  for (let i = 0; i < n; i++) z[i] = z[i]! / sum;
  return z;
}

/** The probabilities a predictor that knows nothing gives: 1/k each. */
export function uniformProbs(obs: Observation): Float64Array {
  return new Float64Array(obs.logits.length).fill(1 / obs.logits.length);
}

/** Deterministic PRNG (mulberry32): the split and the bootstrap are reproducible from a seed. */
export function seededRandom(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
