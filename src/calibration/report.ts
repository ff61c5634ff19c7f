/**
 * `decide calibrate --report DIR`: one reliability diagram per question type as SVG (drawn by
 * reliability-svg.ts), and index.html with the held-out figures and the diagrams. The data behind
 * every point is in report.json beside them.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

import { makeDirectories } from '../models/make-directories.js';
import { reliabilitySvg } from './reliability-svg.js';
import type { CalibrationReport } from './report-types.js';

const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const fmt = (e: { value: number; ci: [number, number] }) => `${e.value.toFixed(4)} <small>[${e.ci[0].toFixed(4)}, ${e.ci[1].toFixed(4)}]</small>`;

function html(report: CalibrationReport, images: Record<string, string>): string {
  const sections = Object.entries(report.types).map(([type, r]) => {
    const rows = (['accuracy', 'nll', 'brier', 'ece'] as const)
      .map((k) => `<tr><th>${k}</th><td>${fmt(r[k].before)}</td><td>${fmt(r[k].after)}</td><td>${fmt(r[k].uniform)}</td></tr>`)
      .join('\n');
    const bias = r.label_bias ? Object.entries(r.label_bias).map(([l, b]) => `${escapeHtml(l)}: ${b.toFixed(3)}`).join(', ') : 'none';
    return `<section><h2>${type}</h2>
<p>${r.fit_observations} fit and ${r.held_out_observations} held-out answers. Kept: <b>${r.kept}</b>; temperature ${r.temperature.toFixed(4)}; label bias ${bias}.${r.not_fitted ? ` Not fitted: ${escapeHtml(r.not_fitted)}.` : ''}</p>
<table><tr><th></th><th>before</th><th>after</th><th>uniform predictor</th></tr>
${rows}
</table>
${images[type] ? `<img src="${images[type]}" alt="reliability diagram for ${type}">` : ''}
</section>`;
  });
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Calibration of ${escapeHtml(report.model)}</title>
<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}small{color:#666}</style>
</head><body>
<h1>${escapeHtml(report.model)}: calibrated from ${escapeHtml(report.base_model)}</h1>
<p>${report.date}. Data ${escapeHtml(path.basename(report.data.file))} (sha256 ${report.data.sha256.slice(0, 16)}…): ${report.data.rows} rows,
${report.data.observations} labelled answers; seed ${report.split.seed}: ${report.split.fit_rows} rows to fit, ${report.split.held_out_rows} held out.
Figures are on the held-out rows with bootstrap 95% intervals; ECE uses 15 equal-mass bins; log-loss is nll.
${report.unusable.length} expected labels were not options and were left out; ${report.data.failed_rows.length} rows failed to score.</p>
${sections.join('\n')}
</body></html>
`;
}

/** Writes reliability-<type>.svg, index.html and report.json into `dir`; returns their paths. */
export async function writeReport(dir: string, report: CalibrationReport): Promise<string[]> {
  makeDirectories(dir);
  const written: string[] = [];
  const images: Record<string, string> = {};
  for (const [type, r] of Object.entries(report.types)) {
    if (r.held_out_observations === 0) continue;
    const name = `reliability-${type}.svg`;
    await writeFile(path.join(dir, name), reliabilitySvg(type, r));
    images[type] = name;
    written.push(path.join(dir, name));
  }
  await writeFile(path.join(dir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  written.push(path.join(dir, 'report.json'));
  await writeFile(path.join(dir, 'index.html'), html(report, images));
  written.push(path.join(dir, 'index.html'));
  return written;
}
