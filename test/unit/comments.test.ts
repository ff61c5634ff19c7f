/**
 * Comments and docs never point outside the repository: a reader of a clone (or of the published
 * package) has only what is in it. The design notes, GPU scripts and spec that sit beside a working
 * checkout are not theirs to open, so a tracked file under src/, native/, bench/, test/, console/,
 * scripts/, docs/ or the README that names that folder fails here with the file and line. What a
 * user needs from those notes goes into docs/ (wire formats: docs/compatibility.md; GPU hosts:
 * README, "GPU hosts"; measurements: docs/benchmark.md).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCOPE = ['src', 'native', 'bench', 'test', 'console', 'scripts', 'docs', 'README.md'];

// Spelled in pieces so that this file does not name them itself.
const OUTSIDE = 'shared';
const FORBIDDEN = [
  ['..', OUTSIDE].join('/'),
  ['', 'work', OUTSIDE].join('/'),
  ...['design', 'gpu', 'spec'].map((dir) => `${OUTSIDE}/${dir}/`),
];

function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--', ...SCOPE], { cwd: ROOT, encoding: 'utf8' });
  return out.split('\0').filter(Boolean);
}

/** `file:line: text` for every line of `text` that names one of `needles`. */
function outsidePointers(file: string, text: string, needles: readonly string[] = FORBIDDEN): string[] {
  const hits: string[] = [];
  text.split('\n').forEach((line, i) => {
    if (needles.some((needle) => line.includes(needle))) hits.push(`${file}:${i + 1}: ${line.trim()}`);
  });
  return hits;
}

describe('comments and docs stay inside the repository', () => {
  it('finds a pointer outside when there is one', () => {
    const text = ['// fine', `// see ${FORBIDDEN[0]}/design/notes.md`, `x = '${FORBIDDEN[1]}/gpu'`].join('\n');
    expect(outsidePointers('a.ts', text)).toEqual([
      `a.ts:2: // see ${FORBIDDEN[0]}/design/notes.md`,
      `a.ts:3: x = '${FORBIDDEN[1]}/gpu'`,
    ]);
  });

  it('no tracked file in scope names the folder beside the checkout', () => {
    const files = trackedFiles();
    // The scope is really read: the README, code and docs are in it.
    expect(files).toContain('README.md');
    expect(files).toContain('src/index.ts');
    expect(files).toContain('docs/compatibility.md');
    const hits = files.flatMap((file) => outsidePointers(file, readFileSync(path.join(ROOT, file), 'utf8')));
    expect(hits).toEqual([]);
  });
});
