/**
 * Calibration figures over a set of predictions with known answers: accuracy, log-loss (mean
 * negative log-likelihood of the right option), Brier score (summed over options) and ECE with
 * equal-mass bins, each with a percentile bootstrap 95% interval.
 *
 * ECE: predictions sorted by confidence (the top probability) are cut into `bins` groups of equal
 * size (sizes differ by at most one); ECE = sum over groups of (group size / N) * |accuracy -
 * mean confidence|. Equal-mass bins keep every bin populated, so the figure is not dominated by a
 * few sparse high-confidence bins.
 *
 * The reliability diagram uses the same equal-mass cut, but only as many bins as the rows support
 * (at least RELIABILITY_MIN_BIN_ROWS answers each, at most RELIABILITY_MAX_BINS bins): 15 bins of 30
 * held-out answers hold two each, and their accuracies can only be 0, 0.5 or 1. Each point carries
 * the Wilson 95% interval of its accuracy, so a reader sees how little a small bin says.
 */
import { DEFAULT_RESAMPLES, RowResampler } from './bootstrap.js';
import { seededRandom } from './observations.js';

/** One prediction: probabilities in option order and the index of the right option. */
export interface Prediction {
  probs: ArrayLike<number>;
  expected: number;
  /** The data row it came from: the bootstrap draws a row's answers together (bootstrap.ts). */
  row?: number;
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
/** Fewest answers a reliability diagram's bin holds (when there are that many at all). */
export const RELIABILITY_MIN_BIN_ROWS = 20;
/** Most bins a reliability diagram draws. */
export const RELIABILITY_MAX_BINS = 10;
/** The normal quantile of a two-sided 95% interval. */
const Z95 = 1.959963984540054;
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

/** The four figures with percentile bootstrap 95% intervals (resampling data rows, seeded). */
export function figuresWithIntervals(
  predictions: readonly Prediction[],
  options: { resamples?: number; seed?: number; bins?: number } = {},
): FiguresWithIntervals {
  const bins = options.bins ?? ECE_BINS;
  const rows = predictions.map(rowOf);
  const point = figuresOf(rows, bins);
  const resamples = options.resamples ?? DEFAULT_RESAMPLES.figures;
  const random = seededRandom(options.seed ?? 1);
  const draws: Record<keyof Figures, Float64Array> = {
    accuracy: new Float64Array(resamples),
    nll: new Float64Array(resamples),
    brier: new Float64Array(resamples),
    ece: new Float64Array(resamples),
  };
  const resampler = new RowResampler(rows, (_, i) => predictions[i]!.row);
  for (let r = 0; r < resamples && rows.length > 0; r++) {
    const f = figuresOf(resampler.draw(random), bins);
    for (const key of Object.keys(draws) as Array<keyof Figures>) draws[key][r] = f[key];
  }
  const out = {} as FiguresWithIntervals;
  for (const key of Object.keys(draws) as Array<keyof Figures>) {
    const sorted = draws[key].sort();
    out[key] = { value: point[key], ci: rows.length > 0 ? [quantile(sorted, 0.025), quantile(sorted, 0.975)] : [NaN, NaN] };
  }
  return out;
}

/** One point of a reliability diagram: an equal-mass bin's mean confidence, its accuracy with a 95% interval, and its size. */
export interface ReliabilityPoint {
  confidence: number;
  accuracy: number;
  count: number;
  /** Wilson 95% interval of the accuracy. */
  low: number;
  high: number;
}

/** Bins a reliability diagram of `rows` answers draws: as many as hold RELIABILITY_MIN_BIN_ROWS each, 1 to RELIABILITY_MAX_BINS. */
export function reliabilityBinCount(rows: number): number {
  return Math.max(1, Math.min(RELIABILITY_MAX_BINS, Math.floor(rows / RELIABILITY_MIN_BIN_ROWS)));
}

/**
 * The Wilson score 95% interval of a proportion `successes / n` (successes may be fractional: a
 * prediction with every option tied counts 1/k). Unlike p ± 1.96·se it stays inside [0, 1] and is
 * not zero-width at 0 or 1, which small bins reach often.
 */
export function wilsonInterval(successes: number, n: number): [number, number] {
  if (n <= 0) return [0, 1];
  const p = successes / n;
  const z2 = Z95 * Z95;
  const denominator = 1 + z2 / n;
  const center = (p + z2 / (2 * n)) / denominator;
  const half = (Z95 * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denominator;
  // The interval holds p in exact arithmetic; rounding can put an end past it at p = 0 or 1 (a
  // high of 0.9999999999999999 for 30 of 30), and a point must lie inside its own interval.
  return [Math.max(0, Math.min(p, center - half)), Math.min(1, Math.max(p, center + half))];
}

/** The points of a reliability diagram, in order of confidence (see reliabilityBinCount for how many). */
export function reliabilityBins(predictions: readonly Prediction[], bins = reliabilityBinCount(predictions.length)): ReliabilityPoint[] {
  return equalMassBins(predictions.map(rowOf), bins).map((bin) => {
    const [low, high] = wilsonInterval(bin.correct, bin.count);
    return { confidence: bin.confidence / bin.count, accuracy: bin.correct / bin.count, count: bin.count, low, high };
  });
}
