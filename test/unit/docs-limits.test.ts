/**
 * docs/compatibility.md states every count, length and size limit the dialect validators enforce: each
 * row of the two field tables below must name the number the validators use (read from their
 * constants, so a changed limit fails here until the page says so too).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { DEFAULT_VALIDATION_LIMITS } from '../../src/api/validate.js';
import { QUESTION_LIMITS } from '../../src/domain/question-limits.js';
import { ROOT } from '../helpers/bin.js';

const PAGE = readFileSync(path.join(ROOT, 'docs', 'compatibility.md'), 'utf8');
const { maxKeyLength, maxDescriptionLength, maxInstructionsLength, maxStateDepth, maxStateValues } = DEFAULT_VALIDATION_LIMITS;
const { maxQuestions, minOptions, maxOptions, minLevels, maxLevels } = QUESTION_LIMITS;
const shown = (n: number) => n.toLocaleString('en-US');

/** The "ours" cell of the row whose first cell is `field`, in the section titled `section`. */
function ours(section: string, field: string): string {
  const start = PAGE.indexOf(`## ${section}`);
  expect(start, section).toBeGreaterThanOrEqual(0);
  const end = PAGE.indexOf('\n## ', start + 1);
  const row = PAGE.slice(start, end === -1 ? undefined : end)
    .split('\n')
    .find((line) => line.startsWith(`| ${field} |`));
  expect(row, `${section}: a row for ${field}`).toBeDefined();
  return row!.split(' | ')[1]!;
}

describe('docs/compatibility.md names every limit the validators enforce', () => {
  it('/v1/decisions', () => {
    const section = '`/v1/decisions` field by field';
    expect(ours(section, '`questions`')).toMatch(new RegExp(`^1 to ${maxQuestions}$`));
    expect(ours(section, '`choices`')).toContain(`${minOptions} to ${maxOptions} `);
    expect(ours(section, '`levels`')).toContain(`${minLevels} to ${maxLevels},`);
    expect(ours(section, '`choices[].value`')).toContain(`1 to ${maxKeyLength} characters`);
    expect(ours(section, '`levels[].label`')).toContain(`1 to ${maxKeyLength} characters`);
    expect(ours(section, '`choices[].description`, `levels[].description`')).toContain(`up to ${shown(maxDescriptionLength)} characters`);
    expect(ours(section, 'question `instructions`')).toContain(`1 to ${shown(maxInstructionsLength)} characters`);
    const input = ours(section, '`input` limits');
    expect(input).toContain(`at most ${maxStateDepth} levels`);
    expect(input).toContain(`${shown(maxStateValues)} values`);
  });

  it('/v1/systemone', () => {
    const section = '`/v1/systemone` field by field';
    expect(ours(section, '`questions`')).toContain(`1 to ${maxQuestions},`);
    expect(ours(section, '`choice` options')).toContain(`${minOptions} to ${maxOptions} `);
    expect(ours(section, '`score` levels')).toMatch(new RegExp(`^${minLevels} to ${maxLevels}$`));
    const limitErrors = PAGE.split('\n').find((line) => line.startsWith('| over a limit |'));
    expect(limitErrors).toContain(`at most ${maxOptions} choices.`);
    expect(limitErrors).toContain(`at most ${maxLevels} levels.`);
    expect(limitErrors).toContain(`at most ${maxQuestions} questions.`);
    expect(ours(section, 'question ids, `choice` keys')).toContain(`1 to ${maxKeyLength} characters`);
    expect(ours(section, 'descriptions')).toContain(`up to ${shown(maxDescriptionLength)} characters`);
    expect(ours(section, '`instructions`')).toContain(`1 to ${shown(maxInstructionsLength)} characters`);
    const structured = ours(section, 'text given as an object or array (`state`, `instructions`, descriptions, levels)');
    expect(structured).toContain(`at most ${maxStateDepth} levels`);
    expect(structured).toContain(`${shown(maxStateValues)} values`);
  });
});
