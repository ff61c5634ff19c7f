/**
 * Calibration figures over a set of predictions with known answers: accuracy, log-loss (mean
 * negative log-likelihood of the right option), Brier score (summed over options) and ECE with
 * equal-mass bins, each with a percentile bootstrap 95% interval.
 *
 * ECE: predictions sorted by confidence (the top probability) are cut into `bins` groups of equal
 * size (sizes differ by at most one); ECE = sum over groups of (group size / N) * |accuracy -
 * mean confidence|. Equal-mass bins keep every bin populated, so the figure is not dominated by a
 * few sparse high-confidence bins.
 */
import { seededRandom } from './observations.js';

/** One prediction: probabilities in option order and the index of the right option. */
export interface Prediction {
  probs: ArrayLike<number>;
  expected: number;
}

export interface Figures {
  accuracy: number;
  nll: number;
  brier: number;
  ece: number;
}

export interface Estimate {
  value: number;
  /** Percentile bootstrap 95% interval [2.5%, 97.5%]. */
  ci: [number, number];
}

export type FiguresWithIntervals = Record<keyof Figures, Estimate>;

export const ECE_BINS = 15;
/** Probabilities are clipped here for the log-loss so that one confident miss is large, not infinite. */
const MIN_PROB = 1e-12;

interface Row {
  confidence: number;
  correct: number;
  nll: number;
  brier: number;
}

function rowOf(p: Prediction): Row {
  const n = p.probs.length;
  let top = 0;
  let brier = 0;
  for (let i = 0; i < n; i++) {
    // Ties go to the first option, as `top` does in answers.
    if (p.probs[i]! > p.probs[top]!) top = i;
    const d = p.probs[i]! - (i === p.expected ? 1 : 0);
    brier += d * d;
  }
  // A predictor with every option equally likely guesses: its expected accuracy is 1/k.
  const allTied = Array.from(p.probs).every((v) => v === p.probs[0]);
  return {
    confidence: p.probs[top]!,
    correct: allTied ? 1 / n : top === p.expected ? 1 : 0,
    nll: -Math.log(Math.max(MIN_PROB, p.probs[p.expected]!)),
    brier,
  };
}

/** Equal-mass bins of the rows by confidence: per bin its summed confidence and correctness, and its size. */
function equalMassBins(rows: readonly Row[], bins: number): Array<{ confidence: number; correct: number; count: number }> {
  const sorted = [...rows].sort((a, b) => a.confidence - b.confidence);
  const n = sorted.length;
  const k = Math.min(bins, n);
  const out: Array<{ confidence: number; correct: number; count: number }> = [];
  for (let b = 0; b < k; b++) {
    const from = Math.floor((b * n) / k);
    const to = Math.floor(((b + 1) * n) / k);
    let confidence = 0;
    let correct = 0;
    for (let i = from; i < to; i++) {
      confidence += sorted[i]!.confidence;
      correct += sorted[i]!.correct;
    }
    out.push({ confidence, correct, count: to - from });
  }
  return out;
}

function eceOf(rows: readonly Row[], bins: number): number {
  const n = rows.length;
  if (n === 0) return NaN;
  let ece = 0;
  for (const bin of equalMassBins(rows, bins)) ece += Math.abs(bin.correct - bin.confidence) / n;
  return ece;
}

function figuresOf(rows: readonly Row[], bins: number): Figures {
  const n = rows.length;
  let accuracy = 0;
  let nll = 0;
  let brier = 0;
  for (const r of rows) {
    accuracy += r.correct;
    nll += r.nll;
    brier += r.brier;
  }
  return { accuracy: accuracy / n, nll: nll / n, brier: brier / n, ece: eceOf(rows, bins) };
}

/** The four figures of a set of predictions (NaN for an empty set). */
export function figures(predictions: readonly Prediction[], bins = ECE_BINS): Figures {
  return figuresOf(predictions.map(rowOf), bins);
}

/** Value at quantile q of sorted values (linear interpolation). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return NaN;
  const at = q * (sorted.length - 1);
  const lo = Math.floor(at);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

/** The four figures with percentile bootstrap 95% intervals (resampling predictions, seeded). */
export function figuresWithIntervals(
  predictions: readonly Prediction[],
  options: { resamples?: number; seed?: number; bins?: number } = {},
): FiguresWithIntervals {
  const bins = options.bins ?? ECE_BINS;
  const rows = predictions.map(rowOf);
  const point = figuresOf(rows, bins);
  const resamples = options.resamples ?? 1000;
  const random = seededRandom(options.seed ?? 1);
  const draws: Record<keyof Figures, Float64Array> = {
    accuracy: new Float64Array(resamples),
    nll: new Float64Array(resamples),
    brier: new Float64Array(resamples),
    ece: new Float64Array(resamples),
  };
  const sample = new Array<Row>(rows.length);
  for (let r = 0; r < resamples && rows.length > 0; r++) {
    for (let i = 0; i < rows.length; i++) sample[i] = rows[Math.floor(random() * rows.length)]!;
    const f = figuresOf(sample, bins);
    for (const key of Object.keys(draws) as Array<keyof Figures>) draws[key][r] = f[key];
  }
  const out = {} as FiguresWithIntervals;
  for (const key of Object.keys(draws) as Array<keyof Figures>) {
    const sorted = draws[key].sort();
    out[key] = { value: point[key], ci: rows.length > 0 ? [quantile(sorted, 0.025), quantile(sorted, 0.975)] : [NaN, NaN] };
  }
  return out;
}

/** Points of a reliability diagram: per equal-mass bin, mean confidence, accuracy and size. */
export function reliabilityBins(predictions: readonly Prediction[], bins = ECE_BINS): Array<{ confidence: number; accuracy: number; count: number }> {
  return equalMassBins(predictions.map(rowOf), bins).map((bin) => ({
    confidence: bin.confidence / bin.count,
    accuracy: bin.correct / bin.count,
    count: bin.count,
  }));
}
