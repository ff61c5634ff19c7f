/**
 * The calibration report's reliability diagram, written by hand (src/calibration/reliability-svg.ts):
 * every bin of both series is drawn where its confidence and accuracy put it, in order of confidence,
 * with its 95% interval as a bar from its low to its high end, with the diagonal, the axes and the
 * legend naming the bins and each series' ECE; the output is well-formed SVG.
 */
import { describe, expect, it } from 'vitest';

import { reliabilitySvg } from '../../src/calibration/reliability-svg.js';
import type { TypeReport } from '../../src/calibration/report-types.js';

const est = (value: number) => ({ value, ci: [value, value] as [number, number] });
const compared = (before: number, after: number) => ({ before: est(before), after: est(after), uniform: est(0.5) });

const report = {
  fit_observations: 80,
  held_out_observations: 40,
  temperature: 1.7,
  label_bias: null,
  kept: 'temperature',
  accuracy: compared(0.6, 0.6),
  nll: compared(0.9, 0.7),
  brier: compared(0.3, 0.25),
  ece: compared(0.213, 0.041),
  // Listed out of order on purpose: the figure sorts by confidence.
  reliability: {
    before: [
      { confidence: 0.95, accuracy: 0.7, count: 20, low: 0.481, high: 0.855 },
      { confidence: 0.55, accuracy: 0.5, count: 20, low: 0.299, high: 0.701 },
    ],
    after: [
      { confidence: 0.75, accuracy: 0.7, count: 21, low: 0.481, high: 0.855 },
      { confidence: 0.5, accuracy: 0.5, count: 20, low: 0.299, high: 0.701 },
    ],
  },
} as TypeReport;

/** The plot is 360 px square, its left edge at x = 56 and its top at y = 40 (see reliability-svg.ts). */
const at = (confidence: number, accuracy: number) => [56 + confidence * 360, 40 + (1 - accuracy) * 360];

describe('reliability diagram SVG', () => {
  const svg = reliabilitySvg('choice <&>', report);

  it('draws each bin of each series at its confidence and accuracy, in order of confidence, with its interval', () => {
    for (const series of ['before', 'after'] as const) {
      const sorted = [...report.reliability[series]].sort((a, b) => a.confidence - b.confidence);
      const circles = [...svg.matchAll(new RegExp(`<circle class="${series}" cx="([\\d.]+)" cy="([\\d.]+)"`, 'g'))].map((m) => [Number(m[1]), Number(m[2])]);
      const expected = sorted.map((b) => at(b.confidence, b.accuracy));
      const bars = [...svg.matchAll(new RegExp(`<g class="${series}-interval"[^>]*><line x1="([\\d.]+)" y1="([\\d.]+)" x2="([\\d.]+)" y2="([\\d.]+)"`, 'g'))].map((m) => m.slice(1).map(Number));
      expect(bars).toHaveLength(sorted.length);
      bars.forEach(([x1, top, x2, bottom], i) => {
        expect(x1).toBeCloseTo(expected[i]![0]!, 1);
        expect(x2).toBeCloseTo(expected[i]![0]!, 1);
        expect(top).toBeCloseTo(at(0, sorted[i]!.high)[1]!, 1);
        expect(bottom).toBeCloseTo(at(0, sorted[i]!.low)[1]!, 1);
      });
      expect(circles).toHaveLength(expected.length);
      circles.forEach(([cx, cy], i) => {
        expect(cx).toBeCloseTo(expected[i][0], 1);
        expect(cy).toBeCloseTo(expected[i][1], 1);
      });
      const line = svg.match(new RegExp(`<polyline class="${series}" points="([^"]+)"`))![1].split(' ').map((p) => p.split(',').map(Number));
      expect(line).toHaveLength(expected.length);
      line.forEach(([x, y], i) => {
        expect(x).toBeCloseTo(expected[i][0], 1);
        expect(y).toBeCloseTo(expected[i][1], 1);
      });
    }
  });

  it('has the title, both axes, the diagonal and a legend with each ECE, escaped', () => {
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(svg.trimEnd()).toMatch(/<\/svg>$/);
    expect(svg).toContain('choice &lt;&amp;&gt;: reliability on 40 held-out answers');
    expect(svg).toContain('confidence (mean top probability in the bin)');
    expect(svg).toContain('accuracy in the bin');
    expect(svg).toContain(`<line x1="56" y1="400" x2="416" y2="40" stroke="#999" stroke-dasharray="4 4"/>`);
    expect(svg).toContain('2 equal-mass bins of 20+ answers, 95% intervals');
    expect(svg).toContain('before (ECE 0.213)');
    expect(svg).toContain('after (ECE 0.041)');
  });

  it('is well-formed XML: every element opened is closed', () => {
    const stack: string[] = [];
    for (const m of svg.matchAll(/<(\/?)([a-z]+)[^>]*?(\/?)>/g)) {
      if (m[3]) continue;
      if (m[1]) expect(stack.pop()).toBe(m[2]);
      else stack.push(m[2]);
    }
    expect(stack).toEqual([]);
  });
});
