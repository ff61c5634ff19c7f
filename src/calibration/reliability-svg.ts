/**
 * One reliability diagram as a standalone SVG, written by hand: accuracy against confidence per
 * equal-mass bin (as many as the answers support, metrics.ts reliabilityBins), each with its 95%
 * interval, drawn in order of confidence, before and after the correction, with the diagonal of
 * perfect calibration. The figure is a few lines, circles and text, so it needs no plotting library
 * (a charting library such as Vega would bring 11 MB of dependencies: docs/dependencies.md).
 */
import type { TypeReport } from './report-types.js';

const PLOT = 360;
const MARGIN = { top: 40, right: 16, bottom: 48, left: 56 };
const WIDTH = MARGIN.left + PLOT + MARGIN.right;
const HEIGHT = MARGIN.top + PLOT + MARGIN.bottom;
const TICKS = [0, 0.2, 0.4, 0.6, 0.8, 1];
const SERIES = [
  { key: 'before', color: '#d62728' },
  { key: 'after', color: '#1f77b4' },
] as const;

const escapeXml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
/** Coordinates rounded to 0.1 px: exact enough, and the file stays small and stable. */
const px = (v: number) => String(Math.round(v * 10) / 10);
const x = (confidence: number) => px(MARGIN.left + Math.min(1, Math.max(0, confidence)) * PLOT);
const y = (accuracy: number) => px(MARGIN.top + (1 - Math.min(1, Math.max(0, accuracy))) * PLOT);

/** What the points are: "4 equal-mass bins of 20+ answers, 95% intervals". */
export function binsLegend(bins: ReadonlyArray<{ count: number; low?: number }>): string {
  if (bins.length === 0) return 'no held-out answers';
  const fewest = Math.min(...bins.map((b) => b.count));
  const what = `${bins.length} equal-mass bin${bins.length === 1 ? '' : 's'} of ${fewest}+ answers`;
  return bins.every((b) => b.low !== undefined) ? `${what}, 95% intervals` : what;
}

/** The SVG of `type`'s reliability diagram from its report (held-out bins, ECE before and after). */
export function reliabilitySvg(type: string, report: TypeReport): string {
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="11">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#fff"/>`,
    `<text x="${WIDTH / 2}" y="20" text-anchor="middle" font-size="13" font-weight="bold">${escapeXml(
      `${type}: reliability on ${report.held_out_observations} held-out answers`,
    )}</text>`,
  );
  // Grid, ticks and tick labels on both axes.
  for (const t of TICKS) {
    out.push(
      `<line x1="${x(t)}" y1="${y(0)}" x2="${x(t)}" y2="${y(1)}" stroke="#ddd"/>`,
      `<line x1="${x(0)}" y1="${y(t)}" x2="${x(1)}" y2="${y(t)}" stroke="#ddd"/>`,
      `<text x="${x(t)}" y="${px(MARGIN.top + PLOT + 16)}" text-anchor="middle">${t.toFixed(1)}</text>`,
      `<text x="${px(MARGIN.left - 6)}" y="${px(Number(y(t)) + 4)}" text-anchor="end">${t.toFixed(1)}</text>`,
    );
  }
  out.push(
    `<rect x="${x(0)}" y="${y(1)}" width="${PLOT}" height="${PLOT}" fill="none" stroke="#888"/>`,
    `<text x="${px(MARGIN.left + PLOT / 2)}" y="${px(HEIGHT - 10)}" text-anchor="middle" font-weight="bold">confidence (mean top probability in the bin)</text>`,
    `<text transform="translate(16 ${px(MARGIN.top + PLOT / 2)}) rotate(-90)" text-anchor="middle" font-weight="bold">accuracy in the bin</text>`,
    // Perfect calibration.
    `<line x1="${x(0)}" y1="${y(0)}" x2="${x(1)}" y2="${y(1)}" stroke="#999" stroke-dasharray="4 4"/>`,
  );
  for (const { key, color } of SERIES) {
    // In order of confidence, so the line joins neighbours whatever order the report lists them in.
    const bins = [...report.reliability[key]].sort((a, b) => a.confidence - b.confidence);
    if (bins.length > 0) {
      const points = bins.map((b) => `${x(b.confidence)},${y(b.accuracy)}`).join(' ');
      out.push(`<polyline class="${key}" points="${points}" fill="none" stroke="${color}" stroke-width="2"/>`);
    }
    for (const b of bins) {
      const interval = b.low === undefined || b.high === undefined ? '' : `, 95% interval ${b.low.toFixed(3)} to ${b.high.toFixed(3)}`;
      if (interval) {
        // The interval of the bin's accuracy: a vertical bar with short caps.
        const cap = (v: number) => `<line x1="${px(Number(x(b.confidence)) - 3)}" y1="${y(v)}" x2="${px(Number(x(b.confidence)) + 3)}" y2="${y(v)}" stroke="${color}"/>`;
        out.push(
          `<g class="${key}-interval" opacity="0.6"><line x1="${x(b.confidence)}" y1="${y(b.high!)}" x2="${x(b.confidence)}" y2="${y(b.low!)}" stroke="${color}" stroke-width="1.5"/>${cap(b.low!)}${cap(b.high!)}</g>`,
        );
      }
      out.push(
        `<circle class="${key}" cx="${x(b.confidence)}" cy="${y(b.accuracy)}" r="3.6" fill="${color}"><title>${escapeXml(
          `${key}: confidence ${b.confidence.toFixed(3)}, accuracy ${b.accuracy.toFixed(3)}${interval}, ${b.count} answers`,
        )}</title></circle>`,
      );
    }
  }
  // Legend, top left inside the plot.
  const lx = MARGIN.left + 10;
  const ly = MARGIN.top + 16;
  out.push(`<text x="${lx}" y="${ly}" font-weight="bold">${escapeXml(binsLegend(report.reliability.after))}</text>`);
  SERIES.forEach(({ key, color }, i) => {
    const rowY = ly + 16 * (i + 1);
    out.push(
      `<circle cx="${lx + 5}" cy="${rowY - 4}" r="4" fill="${color}"/>`,
      `<text x="${lx + 14}" y="${rowY}">${escapeXml(`${key} (ECE ${report.ece[key].value.toFixed(3)})`)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
