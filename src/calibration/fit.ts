/**
 * Fitting a calibration for one question type from observations with known answers.
 *
 * Two corrections, both applied as probs = softmax((logits - bias[label]) / T):
 * - temperature T: maximum likelihood on the fit rows. The negative log-likelihood is convex in
 *   1/T, so a safeguarded Newton search on 1/T finds the optimum (T is kept in [0.02, 50]).
 * - label bias: the model's prior for each label token ("A", "yes", "3"), estimated WITHOUT the
 *   answers, in the spirit of PriDe (Zheng et al., ICLR 2024): with option contents that are
 *   exchangeable across positions, a label's logit minus the row's mean label logit averages to
 *   the label's own offset, so bias[label] = mean over rows of (logit[label] - mean row logit).
 *   Not using the answers keeps the class balance of the calibration file out of the correction.
 *   When contents are not exchangeable (a yes/no set that is mostly "yes") the estimate is wrong
 *   and the held-out check below drops it.
 *
 * Held-out selection: the base version's own correction (when it has one: a calibrated version
 * calibrated again) and four fitted candidates (none, T, bias, T + bias) are scored by log-loss on
 * the held-out rows; the best is kept, the base's correction and then a simpler one winning ties.
 * So the answers change only where that improved held-out log-loss over what the base answers
 * today (a fit on a few rows never replaces a better correction the base already has).
 *
 * Uncertainty: the parameters are refitted on bootstrap resamples of the fit rows (percentile 95%).
 */
import { DEFAULT_RESAMPLES, RowResampler } from './bootstrap.js';
import { quantile } from './metrics.js';
import { correctedProbs, IDENTITY, seededRandom, type Observation, type TypeCorrection } from './observations.js';

export const TEMPERATURE_RANGE: readonly [number, number] = [0.02, 50];

/** Centered label logits of one observation: logit - bias[label] (bias 0 when absent). */
function shifted(obs: Observation, labelBias?: Readonly<Record<string, number>>): Float64Array {
  const a = Float64Array.from(obs.logits as ArrayLike<number>);
  if (labelBias) for (let i = 0; i < a.length; i++) a[i] = a[i]! - (labelBias[obs.labels[i]!] ?? 0);
  return a;
}

/** Gradient and curvature of the total NLL with respect to theta = 1/T. */
function nllDerivatives(rows: readonly Float64Array[], expected: readonly number[], theta: number): [number, number] {
  let grad = 0;
  let hess = 0;
  for (let r = 0; r < rows.length; r++) {
    const a = rows[r]!;
    let max = -Infinity;
    for (let i = 0; i < a.length; i++) if (theta * a[i]! > max) max = theta * a[i]!;
    let sum = 0;
    let mean = 0;
    let second = 0;
    for (let i = 0; i < a.length; i++) {
      const e = Math.exp(theta * a[i]! - max);
      sum += e;
      mean += e * a[i]!;
      second += e * a[i]! * a[i]!;
    }
    mean /= sum;
    second /= sum;
    grad += mean - a[expected[r]!]!;
    hess += second - mean * mean;
  }
  return [grad, hess];
}

/** Maximum-likelihood temperature of `observations` after subtracting `labelBias`. */
export function fitTemperature(observations: readonly Observation[], labelBias?: Readonly<Record<string, number>>): number {
  if (observations.length === 0) return 1;
  const rows = observations.map((o) => shifted(o, labelBias));
  const expected = observations.map((o) => o.expected);
  let lo = 1 / TEMPERATURE_RANGE[1];
  let hi = 1 / TEMPERATURE_RANGE[0];
  // The NLL is convex in theta: its derivative is increasing. Bracket the root, Newton inside it.
  const [gLo] = nllDerivatives(rows, expected, lo);
  if (gLo >= 0) return 1 / lo;
  const [gHi] = nllDerivatives(rows, expected, hi);
  if (gHi <= 0) return 1 / hi;
  let theta = 1;
  for (let iter = 0; iter < 100; iter++) {
    const [g, h] = nllDerivatives(rows, expected, theta);
    if (g > 0) hi = theta;
    else lo = theta;
    const newton = theta - g / h;
    const next = h > 0 && newton > lo && newton < hi ? newton : (lo + hi) / 2;
    if (Math.abs(next - theta) < 1e-10 * Math.max(1, theta)) {
      theta = next;
      break;
    }
    theta = next;
  }
  return 1 / theta;
}

/** The label-free label bias (see the file comment), centered to mean 0 over the labels seen. */
export function estimateLabelBias(observations: readonly Observation[]): Record<string, number> {
  const sums = new Map<string, { sum: number; count: number }>();
  for (const o of observations) {
    const n = o.logits.length;
    let mean = 0;
    for (let i = 0; i < n; i++) mean += o.logits[i]!;
    mean /= n;
    for (let i = 0; i < n; i++) {
      const s = sums.get(o.labels[i]!) ?? { sum: 0, count: 0 };
      s.sum += o.logits[i]! - mean;
      s.count += 1;
      sums.set(o.labels[i]!, s);
    }
  }
  const means = [...sums].map(([label, s]) => [label, s.sum / s.count] as const);
  const center = means.reduce((acc, [, m]) => acc + m, 0) / Math.max(1, means.length);
  return Object.fromEntries(means.map(([label, m]) => [label, m - center]));
}

/** Whether `c` changes nothing: temperature 1 and no label bias other than zeros. */
export function isIdentity(c: TypeCorrection): boolean {
  return c.temperature === 1 && Object.values(c.labelBias ?? {}).every((b) => b === 0);
}

/** Mean negative log-likelihood of the expected options under a correction. */
export function meanNll(observations: readonly Observation[], correction: TypeCorrection): number {
  let total = 0;
  for (const o of observations) total += -Math.log(Math.max(1e-12, correctedProbs(o, correction)[o.expected]!));
  return total / observations.length;
}

/** `base`: the base version's correction, unchanged. */
export type CandidateName = 'base' | 'none' | 'temperature' | 'label_bias' | 'temperature+label_bias';

export interface TypeFit {
  /** The correction kept (the best held-out candidate). */
  correction: TypeCorrection;
  chosen: CandidateName;
  /** Held-out mean NLL of each candidate (`base` only where the base has a correction). */
  heldOutNll: Partial<Record<CandidateName, number>>;
  /** The fitted parameters of each structure with bootstrap 95% intervals (whether kept or not). */
  estimates: {
    temperatureOnly: { temperature: number; ci: [number, number] };
    withLabelBias: {
      temperature: number;
      ci: [number, number];
      labelBias: Record<string, { value: number; ci: [number, number] }>;
    };
  };
}

export interface FitOptions {
  /** Bootstrap resamples for the parameter intervals; default DEFAULT_RESAMPLES.parameters. */
  resamples?: number;
  seed?: number;
  /** The base version's correction for this type; absent or the identity: none (it is `none`). */
  base?: TypeCorrection;
}

function fitBoth(observations: readonly Observation[]) {
  const temperatureOnly = fitTemperature(observations);
  const labelBias = estimateLabelBias(observations);
  return { temperatureOnly, labelBias, temperatureWithBias: fitTemperature(observations, labelBias) };
}

/** Fits one question type on `fit` and picks what to keep by log-loss on `heldOut` (see the file comment). */
export function fitType(fit: readonly Observation[], heldOut: readonly Observation[], options: FitOptions = {}): TypeFit {
  if (fit.length === 0) throw new Error('fit: no observations to fit on');
  const point = fitBoth(fit);
  const candidates: Array<[CandidateName, TypeCorrection]> = [
    ...(options.base && !isIdentity(options.base) ? [['base', options.base] as [CandidateName, TypeCorrection]] : []),
    ['none', IDENTITY],
    ['temperature', { temperature: point.temperatureOnly }],
    ['label_bias', { temperature: 1, labelBias: point.labelBias }],
    ['temperature+label_bias', { temperature: point.temperatureWithBias, labelBias: point.labelBias }],
  ];
  const heldOutNll: Partial<Record<CandidateName, number>> = Object.fromEntries(
    candidates.map(([name, c]) => [name, heldOut.length ? meanNll(heldOut, c) : NaN]),
  );
  let best = 0;
  for (let i = 1; i < candidates.length; i++) {
    // Strictly better only: on a tie (or without held-out rows: NaN) the earlier candidate stays.
    if (heldOutNll[candidates[i]![0]]! < heldOutNll[candidates[best]![0]]!) best = i;
  }

  const resamples = options.resamples ?? DEFAULT_RESAMPLES.parameters;
  const random = seededRandom(options.seed ?? 1);
  const tOnly = new Float64Array(resamples);
  const tBias = new Float64Array(resamples);
  const biasDraws = new Map<string, number[]>(Object.keys(point.labelBias).map((l) => [l, []]));
  const resampler = new RowResampler(fit, (o) => o.row);
  for (let r = 0; r < resamples; r++) {
    const b = fitBoth(resampler.draw(random));
    tOnly[r] = b.temperatureOnly;
    tBias[r] = b.temperatureWithBias;
    for (const [label, draws] of biasDraws) if (label in b.labelBias) draws.push(b.labelBias[label]!);
  }
  const interval = (draws: ArrayLike<number>): [number, number] => {
    const sorted = Float64Array.from(draws).sort();
    return [quantile(sorted, 0.025), quantile(sorted, 0.975)];
  };
  return {
    correction: candidates[best]![1],
    chosen: candidates[best]![0],
    heldOutNll,
    estimates: {
      temperatureOnly: { temperature: point.temperatureOnly, ci: interval(tOnly) },
      withLabelBias: {
        temperature: point.temperatureWithBias,
        ci: interval(tBias),
        labelBias: Object.fromEntries(
          Object.entries(point.labelBias).map(([label, value]) => [label, { value, ci: interval(biasDraws.get(label)!) }]),
        ),
      },
    },
  };
}
