// The calibration fit on simulated classifiers whose miscalibration is known: raw logits are
// T* * s + b*[label] + c (c: a per-row offset the softmax ignores), the true answer is drawn from
// softmax(s). The correct calibration is therefore exactly T = T*, bias = b*.
import { describe, expect, it } from 'vitest';

import { estimateLabelBias, fitTemperature, fitType } from '../../src/calibration/fit.js';
import { figures, figuresWithIntervals, reliabilityBinCount, reliabilityBins, wilsonInterval } from '../../src/calibration/metrics.js';
import { correctedProbs, IDENTITY, seededRandom, uniformProbs, type Observation } from '../../src/calibration/observations.js';

function normal(random: () => number): number {
  const u = Math.max(1e-12, random());
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

function draw(probs: ArrayLike<number>, random: () => number): number {
  let u = random();
  for (let i = 0; i < probs.length; i++) {
    u -= probs[i]!;
    if (u < 0) return i;
  }
  return probs.length - 1;
}

function simulate(options: { rows: number; labels: string[]; tStar: number; bStar: number[]; spread: number; seed: number }): Observation[] {
  const random = seededRandom(options.seed);
  const out: Observation[] = [];
  for (let r = 0; r < options.rows; r++) {
    const s = options.labels.map(() => options.spread * normal(random));
    const truth = correctedProbs({ type: 'choice', logits: s, labels: options.labels, expected: 0 }, IDENTITY);
    const offset = 10 * normal(random);
    const logits = s.map((v, i) => options.tStar * v + options.bStar[i]! + offset);
    out.push({ type: 'choice', logits, labels: options.labels, expected: draw(truth, random) });
  }
  return out;
}

const predictions = (obs: Observation[], correction = IDENTITY) => obs.map((o) => ({ probs: correctedProbs(o, correction), expected: o.expected }));

describe('fitType on a simulated classifier with known T* and b*', () => {
  const labels = ['A', 'B', 'C', 'D'];
  const tStar = 2.5;
  const bStar = [0.9, 0.2, -0.4, -0.7]; // centered: the softmax cannot see a common shift
  // A fairly sharp classifier: the plug-in ECE of even the TRUE calibration has a noise floor
  // (about 0.02 here on 2,000 rows, 0.04 for a classifier half as sharp), which the bound must clear.
  const data = simulate({ rows: 10_000, labels, tStar, bStar, spread: 3.5, seed: 7 });
  const fit = data.slice(0, 8_000);
  const heldOut = data.slice(8_000); // 2,000 held-out rows
  const result = fitType(fit, heldOut, { resamples: 200, seed: 3 });

  it('recovers T* and b* within their bootstrap 95% intervals', () => {
    const est = result.estimates.withLabelBias;
    expect(est.ci[0]).toBeLessThanOrEqual(tStar);
    expect(est.ci[1]).toBeGreaterThanOrEqual(tStar);
    expect(Math.abs(est.temperature - tStar)).toBeLessThan(0.15);
    labels.forEach((label, i) => {
      const b = est.labelBias[label]!;
      expect(b.ci[0], label).toBeLessThanOrEqual(bStar[i]!);
      expect(b.ci[1], label).toBeGreaterThanOrEqual(bStar[i]!);
      expect(Math.abs(b.value - bStar[i]!), label).toBeLessThan(0.1);
    });
  });

  it('keeps temperature and label bias because both improve held-out log-loss', () => {
    expect(result.chosen).toBe('temperature+label_bias');
    const nll = result.heldOutNll;
    expect(nll['temperature+label_bias']).toBeLessThan(nll.temperature!);
    expect(nll.temperature).toBeLessThan(nll.none!);
  });

  it('brings held-out ECE (15 equal-mass bins) to <= 0.03 on 2,000 rows, from far above', () => {
    const before = figures(predictions(heldOut));
    const after = figures(predictions(heldOut, result.correction));
    expect(before.ece).toBeGreaterThan(0.1);
    expect(after.ece).toBeLessThanOrEqual(0.03);
    expect(after.nll).toBeLessThan(before.nll);
    expect(after.brier).toBeLessThan(before.brier);
  });
});

describe('fitType keeps only what helps', () => {
  it("a calibrated base calibrated again on few rows: the base's own correction is a candidate, and what is kept never does worse on the held-out rows", () => {
    const labels = ['A', 'B', 'C', 'D'];
    const tStar = 2.5;
    const bStar = [0.9, 0.2, -0.4, -0.7];
    const truth = { temperature: tStar, labelBias: Object.fromEntries(labels.map((l, i) => [l, bStar[i]!])) };
    let keptBase = 0;
    for (let seed = 1; seed <= 20; seed++) {
      // 36 fit and 9 held-out rows: fits this small are often worse than the right correction.
      const data = simulate({ rows: 45, labels, tStar, bStar, spread: 3.5, seed });
      const result = fitType(data.slice(0, 36), data.slice(36), { resamples: 20, seed, base: truth });
      const nll = result.heldOutNll;
      expect(nll.base, `seed ${seed}`).toBeDefined();
      expect(nll[result.chosen]!, `seed ${seed}`).toBeLessThanOrEqual(nll.base!);
      if (result.chosen === 'base') {
        keptBase += 1;
        expect(result.correction).toEqual(truth);
      }
    }
    // The base's correction is the truth here, so it must win on some splits (a fitted candidate beat it on the others).
    expect(keptBase).toBeGreaterThan(0);
    // An uncalibrated base has nothing of its own to keep: it is `none`.
    const plain = fitType(simulate({ rows: 45, labels, tStar, bStar, spread: 3.5, seed: 1 }).slice(0, 36), [], { resamples: 5, base: IDENTITY });
    expect(plain.heldOutNll).not.toHaveProperty('base');
  });

  it('a calibrated yes/no model on a mostly-"yes" set: no label bias (it would erase the real base rate), T ~ 1', () => {
    const random = seededRandom(11);
    const obs: Observation[] = [];
    for (let r = 0; r < 3_000; r++) {
      const s = [0, 1.4 + 1.2 * normal(random)]; // mostly yes
      const p = correctedProbs({ type: 'noul', logits: s, labels: ['no', 'yes'], expected: 0 }, IDENTITY);
      obs.push({ type: 'noul', logits: s.map((v) => v - 3), labels: ['no', 'yes'], expected: draw(p, random) });
    }
    const result = fitType(obs.slice(0, 2_400), obs.slice(2_400), { resamples: 100 });
    expect(result.chosen === 'none' || result.chosen === 'temperature').toBe(true);
    expect(result.correction.labelBias).toBeUndefined();
    const t = result.estimates.temperatureOnly;
    expect(t.ci[0]).toBeLessThanOrEqual(1);
    expect(t.ci[1]).toBeGreaterThanOrEqual(1);
    // The label-free estimate really is wrong here: it sees the base rate as a bias toward "yes".
    expect(estimateLabelBias(obs).yes!).toBeGreaterThan(0.5);
  });

  it('recovers an under-confident temperature (T* < 1) and a wide one', () => {
    for (const tStar of [0.5, 4]) {
      const data = simulate({ rows: 4_000, labels: ['0', '1', '2'], tStar, bStar: [0, 0, 0], spread: 2, seed: 5 });
      const t = fitTemperature(data);
      expect(Math.abs(t - tStar) / tStar).toBeLessThan(0.08);
    }
  });

  it('fitTemperature stays inside [0.02, 50] on separable data', () => {
    const obs: Observation[] = Array.from({ length: 50 }, (_, i) => ({
      type: 'noul',
      logits: i % 2 ? [0, 1] : [1, 0],
      labels: ['no', 'yes'],
      expected: i % 2,
    }));
    expect(fitTemperature(obs)).toBeCloseTo(0.02, 6);
  });
});

describe('figures', () => {
  it('ECE uses 15 equal-mass bins: |accuracy - confidence| weighted by bin size', () => {
    // 30 predictions: confidence 0.6 for 14 (all right), 0.9 for 16 (all wrong). 15 bins of 2:
    // 7 bins hold only the first group, 8 only the second.
    const preds = [
      ...Array.from({ length: 14 }, () => ({ probs: [0.6, 0.4], expected: 0 })),
      ...Array.from({ length: 16 }, () => ({ probs: [0.9, 0.1], expected: 1 })),
    ];
    const f = figures(preds);
    expect(f.ece).toBeCloseTo((14 * 0.4 + 16 * 0.9) / 30, 12);
    expect(f.accuracy).toBeCloseTo(14 / 30, 12);
    expect(f.nll).toBeCloseTo((14 * -Math.log(0.6) + 16 * -Math.log(0.1)) / 30, 12);
    expect(f.brier).toBeCloseTo((14 * (0.16 + 0.16) + 16 * (0.81 + 0.81)) / 30, 12);
    expect(reliabilityBins(preds, 15)).toHaveLength(15);
  });

  it('the reliability diagram draws as many bins as hold 20 answers each (1 to 10), each with its Wilson 95% interval', () => {
    expect([1, 19, 30, 39, 40, 59, 60, 199, 200, 5000].map(reliabilityBinCount)).toEqual([1, 1, 1, 1, 2, 2, 3, 9, 10, 10]);
    // 30 held-out answers (the case that drew 15 bins of two): one bin of all 30.
    const thirty = [
      ...Array.from({ length: 14 }, () => ({ probs: [0.6, 0.4], expected: 0 })),
      ...Array.from({ length: 16 }, () => ({ probs: [0.9, 0.1], expected: 1 })),
    ];
    const [only, ...rest] = reliabilityBins(thirty);
    expect(rest).toEqual([]);
    expect(only).toMatchObject({ count: 30, accuracy: 14 / 30 });
    expect(only!.confidence).toBeCloseTo((14 * 0.6 + 16 * 0.9) / 30, 12);
    expect(only!.low).toBeLessThan(only!.accuracy);
    expect(only!.high).toBeGreaterThan(only!.accuracy);

    // 100 answers: five bins of 20 in order of confidence, each interval around its accuracy.
    const random = seededRandom(3);
    const hundred = Array.from({ length: 100 }, () => {
      const p = 0.5 + random() / 2;
      return { probs: [p, 1 - p], expected: random() < p ? 0 : 1 };
    });
    const bins = reliabilityBins(hundred);
    expect(bins.map((b) => b.count)).toEqual([20, 20, 20, 20, 20]);
    for (let i = 1; i < bins.length; i++) expect(bins[i]!.confidence).toBeGreaterThanOrEqual(bins[i - 1]!.confidence);
    for (const b of bins) expect([b.low, b.high]).toEqual(wilsonInterval(b.accuracy * b.count, b.count));

    // Wilson's interval: published values, inside [0, 1] and not zero-width at the ends.
    const [low5, high5] = wilsonInterval(5, 10);
    expect(low5).toBeCloseTo(0.2366, 4);
    expect(high5).toBeCloseTo(0.7634, 4);
    const [low0, high0] = wilsonInterval(0, 10);
    expect(low0).toBe(0);
    expect(high0).toBeCloseTo(0.2775, 4);
    const [low20, high20] = wilsonInterval(20, 20);
    expect(low20).toBeCloseTo(0.8389, 4);
    expect(high20).toBe(1);
    // Every point inside its own interval, the ends exactly 0 and 1 (rounding put 30 of 30 at a high of 0.9999999999999999).
    for (let n = 1; n <= 300; n++) {
      for (const k of [0, 1, Math.floor(n / 3), n - 1, n]) {
        const [low, high] = wilsonInterval(k, n);
        expect(low, `${k}/${n}`).toBeLessThanOrEqual(k / n);
        expect(high, `${k}/${n}`).toBeGreaterThanOrEqual(k / n);
      }
      expect(wilsonInterval(n, n)[1]).toBe(1);
      expect(wilsonInterval(0, n)[0]).toBe(0);
    }
  });

  it('the uniform predictor: accuracy 1/k, log-loss log k, Brier 1 - 1/k, ECE 0', () => {
    const obs = simulate({ rows: 500, labels: ['A', 'B', 'C', 'D', 'E'], tStar: 1, bStar: [0, 0, 0, 0, 0], spread: 1, seed: 2 });
    const f = figuresWithIntervals(obs.map((o) => ({ probs: uniformProbs(o), expected: o.expected })), { resamples: 50 });
    expect(f.accuracy.value).toBeCloseTo(0.2, 12);
    expect(f.nll.value).toBeCloseTo(Math.log(5), 12);
    expect(f.brier.value).toBeCloseTo(0.8, 12);
    expect(f.ece.value).toBeCloseTo(0, 12);
  });

  it('bootstrap intervals bracket the point value and narrow with more rows', () => {
    // (Not ECE: the plug-in ECE is biased upward, more so on resamples, so its interval can sit
    // above the point value on a well calibrated model.)
    const obs = simulate({ rows: 4_000, labels: ['A', 'B'], tStar: 1, bStar: [0, 0], spread: 1, seed: 9 });
    const small = figuresWithIntervals(predictions(obs.slice(0, 200)), { resamples: 300 });
    const large = figuresWithIntervals(predictions(obs), { resamples: 300 });
    for (const f of [small, large]) {
      for (const e of [f.accuracy, f.nll, f.brier]) {
        expect(e.ci[0]).toBeLessThanOrEqual(e.value + 1e-9);
        expect(e.ci[1]).toBeGreaterThanOrEqual(e.value - 1e-9);
      }
    }
    expect(large.nll.ci[1] - large.nll.ci[0]).toBeLessThan((small.nll.ci[1] - small.nll.ci[0]) / 2);
  });

  it('resamples data rows, not answers: a row asking the same question four times gives the intervals of the row asked once', () => {
    const obs = simulate({ rows: 300, labels: ['A', 'B', 'C'], tStar: 2, bStar: [0, 0, 0], spread: 1, seed: 4 });
    const once = obs.map((o, row) => ({ ...o, row }));
    const fourTimes = once.flatMap((o) => [o, o, o, o]);
    const asPredictions = (list: Observation[]) => list.map((o) => ({ probs: correctedProbs(o, IDENTITY), expected: o.expected, row: o.row }));
    const a = figuresWithIntervals(asPredictions(once), { resamples: 200 });
    const b = figuresWithIntervals(asPredictions(fourTimes), { resamples: 200 });
    for (const key of ['accuracy', 'nll', 'brier'] as const) {
      expect(b[key].value).toBeCloseTo(a[key].value, 12);
      expect(b[key].ci[0]).toBeCloseTo(a[key].ci[0], 12);
      expect(b[key].ci[1]).toBeCloseTo(a[key].ci[1], 12);
    }
    // Answers drawn one by one would take the copies for new evidence: half the width.
    const loose = figuresWithIntervals(asPredictions(fourTimes.map(({ row: _, ...o }) => o)), { resamples: 200 });
    expect(loose.nll.ci[1] - loose.nll.ci[0]).toBeLessThan(0.7 * (a.nll.ci[1] - a.nll.ci[0]));

    const fitOnce = fitType(once, [], { resamples: 100 }).estimates.temperatureOnly;
    const fitFour = fitType(fourTimes, [], { resamples: 100 }).estimates.temperatureOnly;
    expect(fitFour.temperature).toBeCloseTo(fitOnce.temperature, 6);
    expect(fitFour.ci[0]).toBeCloseTo(fitOnce.ci[0], 6);
    expect(fitFour.ci[1]).toBeCloseTo(fitOnce.ci[1], 6);
  });
});
