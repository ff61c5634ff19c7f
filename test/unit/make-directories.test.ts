/**
 * Folders a command makes at a path the user gave (src/models/make-directories.ts), and the check
 * `decide serve` runs on its folder flags before anything else (src/cli/dir-options.ts): a path
 * through a file, a link to nothing usable and a loop of links are each a refusal naming the
 * path, never a raw system error thrown later.
 */
import { mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';

import { folderProblem } from '../../src/cli/dir-options.js';
import { DirectoryError, directoryProblem, makeDirectories } from '../../src/models/make-directories.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'make-dirs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const at = (name: string) => path.join(root, name);

writeFileSync(at('afile'), 'x');
symlinkSync(at('afile/x'), at('through-file'));
symlinkSync(at('nothing'), at('dangling'));
symlinkSync('loop', at('loop'));

it('makes missing levels, and a folder that exists is fine', () => {
  makeDirectories(at('a/b/c'));
  expect(statSync(at('a/b/c')).isDirectory()).toBe(true);
  makeDirectories(at('a/b/c'));
  expect(directoryProblem(at('a/b/c'))).toBeUndefined();
});

it.each([
  ['a path through a file', 'afile/x/y', /afile is not a folder/],
  ['a link that leads through a file', 'through-file', /through-file is a link that leads to no folder/],
  ['a dangling link', 'dangling', /dangling is a link that leads to no folder/],
  ['a folder under a dangling link', 'dangling/sub', /dangling is a link that leads to no folder/],
  ['a loop of links', 'loop/x', /loop\/x: ELOOP/],
])('%s: refused by name', (_what, name, message) => {
  expect(() => makeDirectories(at(name))).toThrow(DirectoryError);
  expect(() => makeDirectories(at(name))).toThrow(message);
  expect(directoryProblem(at(name))).toMatch(message);
  expect(folderProblem(at(name), '--models-dir')).toMatch(/^--models-dir: /);
});
