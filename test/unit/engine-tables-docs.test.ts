/**
 * The docs' tables of engine options (README, Configuration) and engine counters (docs/api.md,
 * metrics) are generated from ENGINE_OPTIONS and ENGINE_COUNTERS: this test renders them and fails
 * when the docs differ. `DECIDE_WRITE_DOCS=1 npx vitest run test/unit/engine-tables-docs.test.ts`
 * writes the rendered tables into the docs between their markers.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

import { defaultOf } from '../../src/cli/engine-flags.js';
import { ENGINE_COUNTERS, ENGINE_GAUGES } from '../../src/engine/engine-counters.js';
import { ENGINE_OPTION_NAMES, ENGINE_OPTIONS } from '../../src/engine/engine-options.js';
import { ruleOf } from '../../src/engine/option-checks.js';
import { engineSeries } from '../../src/server/metrics.js';

const cell = (text: string) => text.replaceAll('|', '\\|');

function optionsTable(): string {
  const rows = ENGINE_OPTION_NAMES.map((name) => {
    const spec = ENGINE_OPTIONS[name];
    const rule = spec.check.kind === 'boolean' ? 'on or off (`Engine.load`: true or false)' : ruleOf(spec.check);
    return `| \`${name}\` | \`${spec.flag}\` | \`${spec.env}\` | ${cell(rule)} | ${cell(defaultOf(spec))} | ${cell(spec.help)} |`;
  });
  return ['| option (`Engine.load`) | flag | variable | value | default | what it does |', '|---|---|---|---|---|---|', ...rows].join('\n');
}

function countersTable(): string {
  const rows = [
    ...ENGINE_COUNTERS.map((c) => ({ spec: c, series: engineSeries(c, 'counter') })),
    ...ENGINE_GAUGES.map((g) => ({ spec: g, series: engineSeries(g, 'gauge') })),
  ].map(({ spec, series }) => `| \`${spec.name}\` | \`${series.name}\` | ${series.type} | ${spec.unit} | ${cell(spec.help)} |`);
  return ['| `engine.counters()` | `/metrics` series (`{model}`) | type | unit | what it counts |', '|---|---|---|---|---|', ...rows].join('\n');
}

const DOCS = [
  { file: 'README.md', marker: 'engine-options', render: optionsTable },
  { file: 'docs/api.md', marker: 'engine-counters', render: countersTable },
];

describe('the docs show the engine tables as the code declares them', () => {
  it.each(DOCS)('$file: the $marker table', async ({ file, marker, render }) => {
    const url = new URL(`../../${file}`, import.meta.url);
    const text = await readFile(url, 'utf8');
    const start = `<!-- ${marker}: generated from the code by test/unit/engine-tables-docs.test.ts -->\n`;
    const end = `\n<!-- /${marker} -->`;
    const from = text.indexOf(start);
    const to = text.indexOf(end, from);
    expect(from, `${file} has no ${start.trim()} ... ${end.trim()} block`).toBeGreaterThanOrEqual(0);
    expect(to).toBeGreaterThan(from);
    const expected = render();
    if (process.env.DECIDE_WRITE_DOCS === '1') {
      await writeFile(url, text.slice(0, from + start.length) + expected + text.slice(to));
      return;
    }
    expect(text.slice(from + start.length, to), `${file} differs from the table in the code: rerun with DECIDE_WRITE_DOCS=1`).toBe(expected);
  });
});
