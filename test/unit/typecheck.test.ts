/**
 * The tests are type-checked too, with src/ and bench/ (test/tsconfig.json): vitest strips types
 * without checking them, so a test calling an API with the wrong shape would otherwise run (and
 * perhaps pass) unnoticed.
 */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

it('test/, src/ and bench/ type-check: tsc --noEmit -p test/tsconfig.json', async () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = await promisify(execFile)(process.execPath, [tsc, '--noEmit', '--pretty', 'false', '-p', 'test/tsconfig.json'], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, output: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
  );
  expect(result.output.trim()).toBe('');
  expect(result.code).toBe(0);
}, 300_000);
