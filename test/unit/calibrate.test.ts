import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Value } from '@sinclair/typebox/value';
import { AnswerSchema } from '../../src/api/schemas.js';
import { answerFromLogits, DEFAULT_CALIBRATION, labelBiasFor, loadCalibration, parseCalibration, type CalibrationQuestion } from '../../src/runtime/calibrate.js';

/** Deterministic PRNG (mulberry32) so failures reproduce. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function choiceQuestion(n: number, criteriaOrder?: number[]): CalibrationQuestion {
  return {
    type: 'choice',
    options: Array.from({ length: n }, (_, i) => ({ key: `opt${i}`, criteriaIndex: criteriaOrder ? criteriaOrder[i]! : i })),
  };
}

function shuffled(n: number, rand: () => number): number[] {
  const a = [...Array(n).keys()];
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

const noul: CalibrationQuestion = {
  type: 'noul',
  options: [
    { key: 'no', criteriaIndex: 0 },
    { key: 'yes', criteriaIndex: 1 },
  ],
};

function exactSoftmax(logits: number[], t: number): number[] {
  const m = Math.max(...logits.map((l) => l / t));
  const e = logits.map((l) => Math.exp(l / t - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

/** Every rule an answer must keep; returns the broken ones (one expect per call keeps 3,000 trials fast). */
function problems(q: CalibrationQuestion, logits: number[], t: number): string[] {
  const out: string[] = [];
  const a = answerFromLogits(q, Float32Array.from(logits), t);
  const values = q.options.map((o) => a.probs[o.key]!);
  if (JSON.stringify(Object.keys(a.probs)) !== JSON.stringify(q.options.map((o) => o.key))) out.push('keys');
  const exact = exactSoftmax(Array.from(Float32Array.from(logits)), t);
  let sum = 0;
  values.forEach((v, i) => {
    if (!Number.isFinite(v) || v < 0 || v > 1) out.push(`value ${i} = ${v} outside [0, 1]`);
    if (Math.abs(v * 1e6 - Math.round(v * 1e6)) > 1e-6 || String(v).replace(/^0\.|^1$/, '').length > 6) {
      out.push(`value ${i} = ${v} has more than 6 decimals`);
    }
    // Rounding stays within one unit of the exact value.
    if (Math.abs(v - exact[i]!) > 1.0000001e-6) out.push(`value ${i} = ${v} is far from ${exact[i]}`);
    sum += v;
  });
  if (Math.abs(sum - 1) > 1e-6) out.push(`sum ${sum}`);
  // top is the largest value, the first in criteria order among equals; confidence is its value.
  const max = Math.max(...values);
  const tied = q.options.filter((o) => a.probs[o.key] === max);
  const expectedTop = tied.reduce((best, o) => (o.criteriaIndex < best.criteriaIndex ? o : best));
  if (a.top !== expectedTop.key) out.push(`top ${a.top}, expected ${expectedTop.key}`);
  if (a.confidence !== a.probs[a.top]) out.push('confidence is not probs[top]');
  if (a.type !== q.type) out.push('type');
  if (!Value.Check(AnswerSchema, a)) out.push('does not match AnswerSchema');
  return out.length ? [...out, `logits ${JSON.stringify(logits)} T=${t}`] : out;
}

function checkAnswer(q: CalibrationQuestion, logits: number[], t: number): void {
  expect(problems(q, logits, t)).toEqual([]);
}

describe('answerFromLogits', () => {
  it('keeps the sum rule and [0, 1] over many random logits, huge and tiny included', () => {
    const rand = rng(42);
    const scales = [1e-30, 1e-6, 0.01, 1, 10, 100, 1e4, 1e30, 3e38];
    for (let trial = 0; trial < 3000; trial++) {
      const n = 2 + Math.floor(rand() * 25);
      const scale = scales[trial % scales.length]!;
      const logits = Array.from({ length: n }, () => (rand() * 2 - 1) * scale);
      const t = [0.05, 0.5, 1, 1.7, 20][trial % 5]!;
      checkAnswer(choiceQuestion(n, shuffled(n, rand)), logits, t);
    }
  });

  it('handles 26 options with equal, near-equal and extreme logits', () => {
    checkAnswer(choiceQuestion(26), new Array(26).fill(0), 1);
    checkAnswer(choiceQuestion(26), new Array(26).fill(-3e38), 1);
    checkAnswer(choiceQuestion(26), Array.from({ length: 26 }, (_, i) => i * 1e-7), 1);
    checkAnswer(choiceQuestion(26), Array.from({ length: 26 }, (_, i) => (i === 13 ? 3e38 : -3e38)), 1);
    // Ties between many equal values, in a shuffled criteria order.
    const rand = rng(7);
    for (let trial = 0; trial < 200; trial++) {
      const n = 2 + Math.floor(rand() * 25);
      const levels = [0, 1, 2].map(() => Math.round(rand() * 4));
      checkAnswer(choiceQuestion(n, shuffled(n, rand)), Array.from({ length: n }, () => levels[Math.floor(rand() * 3)]!), 1);
    }
    // 1/3 each: the one missing unit goes to the first option.
    const thirds = answerFromLogits(choiceQuestion(3), Float32Array.of(0, 0, 0), 1);
    expect(thirds.probs).toEqual({ opt0: 0.333334, opt1: 0.333333, opt2: 0.333333 });
  });

  it('gives 0 to a -Infinity logit and rejects NaN, +Infinity and all -Infinity', () => {
    const a = answerFromLogits(noul, Float32Array.of(-Infinity, 0), 1);
    expect(a).toEqual({ type: 'noul', probs: { no: 0, yes: 1 }, top: 'yes', confidence: 1 });
    expect(() => answerFromLogits(noul, Float32Array.of(NaN, 0), 1)).toThrow(/logit 0 is NaN/);
    expect(() => answerFromLogits(noul, Float32Array.of(0, Infinity), 1)).toThrow(/logit 1 is Infinity/);
    expect(() => answerFromLogits(noul, Float32Array.of(-Infinity, -Infinity), 1)).toThrow(/-Infinity/);
  });

  it('breaks ties by criteria order, on the rounded values', () => {
    expect(answerFromLogits(noul, Float32Array.of(2, 2), 1)).toEqual({
      type: 'noul', probs: { no: 0.5, yes: 0.5 }, top: 'no', confidence: 0.5,
    });
    // Options presented in ascending level order, but criteria order puts "2" first.
    const score: CalibrationQuestion = {
      type: 'score',
      options: [
        { key: '0', criteriaIndex: 1 },
        { key: '1', criteriaIndex: 2 },
        { key: '2', criteriaIndex: 0 },
      ],
    };
    expect(answerFromLogits(score, Float32Array.of(1, -5, 1), 1).top).toBe('2');
    // True probabilities differ by less than half a unit: equal after rounding, so criteria order decides.
    const near = answerFromLogits(choiceQuestion(2), Float64Array.of(0, 1e-9), 1);
    expect(near.probs).toEqual({ opt0: 0.5, opt1: 0.5 });
    expect(near.top).toBe('opt0');
  });

  it('applies the temperature', () => {
    const logits = Float32Array.of(0, 1, 2);
    const p = (t: number) => answerFromLogits(choiceQuestion(3), logits, t).probs.opt2!;
    expect(p(1)).toBeCloseTo(exactSoftmax([0, 1, 2], 1)[2]!, 6);
    expect(p(0.5)).toBeGreaterThan(p(1));
    expect(p(2)).toBeLessThan(p(1));
    expect(p(1e-3)).toBe(1);
    expect(p(1e6)).toBeCloseTo(1 / 3, 5);
    expect(() => answerFromLogits(noul, Float32Array.of(0, 1), 0)).toThrow(/temperature/);
    expect(() => answerFromLogits(noul, Float32Array.of(0, 1), NaN)).toThrow(/temperature/);
    expect(() => answerFromLogits(noul, Float32Array.of(0, 1), -1)).toThrow(/temperature/);
  });

  it('gives finite probabilities summing to 1 for any positive temperature and finite bias (no overflow to NaN)', () => {
    const valid = (a: ReturnType<typeof answerFromLogits>) => {
      const units = Object.values(a.probs).map((v) => Math.round(v * 1e6));
      expect(units.every((u) => Number.isInteger(u) && u >= 0 && u <= 1e6)).toBe(true);
      expect(units.reduce((x, y) => x + y, 0)).toBe(1e6);
      expect(a.confidence).toBe(a.probs[a.top]);
    };
    const q = choiceQuestion(3);
    // A subnormal temperature: (l - max) / T is 0 for the top label and -Infinity for the others.
    const tiny = answerFromLogits(q, Float32Array.of(0.5, 2, -1), 1e-320);
    valid(tiny);
    expect(tiny.probs).toEqual({ opt0: 0, opt1: 1, opt2: 0 });
    // A bias near the largest double, under a temperature below 1: dividing first overflowed.
    const huge = answerFromLogits(q, Float32Array.of(0.5, 2, -1), 0.5, Float64Array.of(-1.7e308, -1.7e308, 0));
    valid(huge);
    // 0.5 and 2 vanish beside 1.7e308: the two biased labels tie, the third is ruled out.
    expect(huge.probs).toEqual({ opt0: 0.5, opt1: 0.5, opt2: 0 });
    valid(answerFromLogits(q, Float32Array.of(3e38, -3e38, -Infinity), 1e-300, Float64Array.of(-1e308, 1e308, 0)));
    valid(answerFromLogits(q, Float32Array.of(0, 1, 2), Number.MAX_VALUE));
    expect(() => answerFromLogits(q, Float64Array.of(1e308, 0, 0), 1, Float64Array.of(-1e308, 0, 0))).toThrow(/overflows/);
    expect(() => answerFromLogits(q, Float32Array.of(0, 1, 2), 1, Float64Array.of(0, NaN, 0))).toThrow(/label bias 1 is NaN/);
  });

  it('matches the documented example', () => {
    expect(answerFromLogits(noul, Float32Array.of(1.5, 3.0), 1)).toEqual({
      type: 'noul', probs: { no: 0.182426, yes: 0.817574 }, top: 'yes', confidence: 0.817574,
    });
  });

  it('rejects a logit count that does not match the options', () => {
    expect(() => answerFromLogits(noul, Float32Array.of(1), 1)).toThrow(/1 logits for 2 options/);
  });
});

describe('loadCalibration', () => {
  const dirs: string[] = [];
  async function dirWith(decision?: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'decision-cal-'));
    dirs.push(dir);
    if (decision !== undefined) await writeFile(join(dir, 'decision.json'), decision);
    return dir;
  }
  afterAll(async () => {
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('defaults to 1 without a file, section or entry', async () => {
    expect(await loadCalibration(await dirWith())).toEqual(DEFAULT_CALIBRATION);
    expect(await loadCalibration(await dirWith('{"id":"svc-alpha-2026-10"}'))).toEqual(DEFAULT_CALIBRATION);
    expect(await loadCalibration(await dirWith('{"calibration":{}}'))).toEqual(DEFAULT_CALIBRATION);
  });

  it('reads per-type temperatures', async () => {
    const cal = await loadCalibration(await dirWith('{"calibration":{"temperature":{"choice":1.3,"score":0.8}}}'));
    expect(cal.temperature).toEqual({ noul: 1, choice: 1.3, score: 0.8 });
  });

  it('reads per-type label biases next to the temperatures and ignores the fit provenance', async () => {
    const cal = await loadCalibration(
      await dirWith(
        JSON.stringify({
          calibration: {
            temperature: { choice: 2 },
            label_bias: { choice: { A: 0.5, B: -0.5 }, noul: { no: 0.1, yes: -0.1 } },
            fit: { data_sha256: 'ab', rows: 10 },
          },
        }),
      ),
    );
    expect(cal.temperature).toEqual({ noul: 1, choice: 2, score: 1 });
    expect(cal.labelBias.choice).toEqual({ A: 0.5, B: -0.5 });
    expect(cal.labelBias.score).toBeUndefined();
    expect(Array.from(labelBiasFor(cal, 'choice', ['A', 'B', 'C'])!)).toEqual([0.5, -0.5, 0]);
    expect(labelBiasFor(cal, 'score', ['0', '1'])).toBeUndefined();
  });

  it('applies the bias before the temperature: softmax((logits - bias) / T)', () => {
    const q = choiceQuestion(3);
    const a = answerFromLogits(q, Float32Array.of(2, 1, 0), 2, Float64Array.of(1, 0, -1));
    const exact = exactSoftmax([0.5, 0.5, 0.5], 1);
    expect(Object.values(a.probs).map((v) => Math.abs(v - exact[0]!) <= 1e-6)).toEqual([true, true, true]);
    // Without a bias the answer is what it always was.
    expect(answerFromLogits(q, Float32Array.of(2, 1, 0), 2)).toEqual(answerFromLogits(q, Float32Array.of(2, 1, 0), 2, Float64Array.of(0, 0, 0)));
    expect(() => answerFromLogits(q, Float32Array.of(2, 1, 0), 1, Float64Array.of(1))).toThrow(/1 label biases for 3 options/);
  });

  it('rejects bad values with a message naming the field', async () => {
    await expect(loadCalibration(await dirWith('{not json'))).rejects.toThrow(/decision\.json: not valid JSON/);
    const bad = (d: unknown) => () => parseCalibration(d);
    expect(bad([])).toThrow(/must hold a JSON object/);
    expect(bad({ calibration: 3 })).toThrow(/calibration must be an object/);
    expect(bad({ calibration: { temperature: 2 } })).toThrow(/calibration\.temperature must be an object/);
    expect(bad({ calibration: { temperature: { noul: 0 } } })).toThrow(/calibration\.temperature\.noul must be a number from 0\.0001 to 10000, got 0/);
    expect(bad({ calibration: { temperature: { choice: -1 } } })).toThrow(/temperature\.choice .*got -1/);
    expect(bad({ calibration: { temperature: { score: '1' } } })).toThrow(/temperature\.score .*got "1"/);
    expect(bad({ calibration: { temperature: { score: null } } })).toThrow(/temperature\.score .*got null/);
    expect(bad({ calibration: { temperature: { choise: 2 } } })).toThrow(/temperature\.choise is not a question type/);
    expect(bad({ calibration: { label_bias: [] } })).toThrow(/calibration\.label_bias must be an object/);
    expect(bad({ calibration: { label_bias: { yesno: {} } } })).toThrow(/label_bias\.yesno is not a question type/);
    expect(bad({ calibration: { label_bias: { choice: 1 } } })).toThrow(/label_bias\.choice must be an object from label to number/);
    expect(bad({ calibration: { label_bias: { choice: { A: 'x' } } } })).toThrow(/label_bias\.choice\.A must be a number from -10000 to 10000, got "x"/);
    // Past the bounds: values that can only be slips, refused rather than answered as one-hot or NaN.
    expect(bad({ calibration: { temperature: { noul: 1e-320 } } })).toThrow(/temperature\.noul must be a number from 0\.0001 to 10000, got 1e-320/);
    expect(bad({ calibration: { temperature: { choice: 5e-5 } } })).toThrow(/temperature\.choice .*got 0\.00005/);
    expect(bad({ calibration: { temperature: { score: 1e9 } } })).toThrow(/temperature\.score .*got 1000000000/);
    expect(bad({ calibration: { label_bias: { choice: { A: -1.7e308 } } } })).toThrow(/label_bias\.choice\.A must be a number from -10000 to 10000, got -1\.7e\+308/);
    expect(bad({ calibration: { label_bias: { noul: { yes: 10001 } } } })).toThrow(/label_bias\.noul\.yes .*got 10001/);
    // The bounds themselves load.
    expect(parseCalibration({ calibration: { temperature: { noul: 1e-4, choice: 1e4 }, label_bias: { choice: { A: -1e4, B: 1e4 } } } }).temperature)
      .toEqual({ noul: 1e-4, choice: 1e4, score: 1 });
  });
});
