/**
 * The C++ tests of the engine's session-free parts (native/test/native_tests.cc: prefix cache, row
 * packing, pass planner, KV store over a counting fake device), built with the addon by
 * `npm run build:native` (the test setup builds it when native/ changed) and run here.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('native C++ unit tests', () => {
  it('all pass', () => {
    let output: string;
    try {
      output = execFileSync(path.join(ROOT, 'build', 'Release', 'decide_native_tests'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      throw new Error(`decide_native_tests failed:\n${e.stderr ?? ''}${e.stdout ?? ''}`);
    }
    const [, passed, failed] = /(\d+) passed, (\d+) failed/.exec(output) ?? [];
    expect(Number(failed)).toBe(0);
    expect(Number(passed)).toBeGreaterThanOrEqual(40);
  });
});
