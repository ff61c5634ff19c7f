/**
 * The engine's close paths under AddressSanitizer, on the CPU: a process loads two engines, scores
 * with both, closes them in either order (or not at all), and must exit cleanly with no memory
 * error. The addon is built a second time with -fsanitize=address into build-asan/ (when native/
 * changed since that build) and loaded through DECIDE_NATIVE_ADDON, with the ASan runtime
 * preloaded into node. Guards the release order a CUDA process died of at exit ("corrupted
 * double-linked list"): buffers, then the device, then the session, then the stream; ONNX
 * Runtime's environment is never released.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

import { nativeSourcesHash } from '../../scripts/native-stamp.mjs';
import { decideBin } from '../helpers/bin.js';
import { tinyModelDir } from '../helpers/tiny-model.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = path.join(ROOT, 'build-asan');
const ADDON = path.join(OUT, 'Release', 'decide_native.node');
const STAMP = path.join(OUT, 'Release', 'decide_native.sources-sha256');

/** The ASan runtime of the compiler that builds the addon, or undefined when it has none. */
function asanRuntime(): string | undefined {
  try {
    const file = execFileSync('c++', ['-print-file-name=libasan.so'], { encoding: 'utf8' }).trim();
    return path.isAbsolute(file) && existsSync(file) ? file : undefined;
  } catch {
    return undefined;
  }
}

const runtime = asanRuntime();

async function ensureSanitizedAddon(): Promise<void> {
  const want = nativeSourcesHash();
  if (existsSync(ADDON) && existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === want) return;
  const cmakeJs = createRequire(import.meta.url).resolve('cmake-js/bin/cmake-js');
  await promisify(execFile)(process.execPath, [cmakeJs, 'compile', '--out', OUT, '--CDCMAKE_BUILD_TYPE=Release', '--CDDECIDE_SANITIZE=address'], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  writeFileSync(STAMP, `${want}\n`);
}

describe.skipIf(!runtime)('close paths under AddressSanitizer', () => {
  let modelDir: string;

  beforeAll(async () => {
    await Promise.all([ensureSanitizedAddon(), decideBin()]);
    modelDir = await tinyModelDir({ segmentIds: true });
  }, 600_000);

  function run(body: string, preload = true): { status: number | null; signal: string | null; output: string } {
    const script =
      `const E = await import(${JSON.stringify(path.join(ROOT, 'dist/src/index.js'))});\n` +
      `const dir = ${JSON.stringify(modelDir)};\n` +
      `const g = [{ prefix: Int32Array.from([5, 6, 7, 8, 9]), suffixes: [{ tokens: Int32Array.from([9, 10]), labels: Int32Array.from([1, 2]) }, { tokens: Int32Array.from([11]), labels: Int32Array.from([3, 4]) }] }];\n` +
      body;
    const env = { ...process.env, DECIDE_NATIVE_ADDON: ADDON, ASAN_OPTIONS: 'detect_leaks=0', ...(preload ? { LD_PRELOAD: runtime } : {}) };
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env, timeout: 120_000 });
    return { status: r.status, signal: r.signal, output: `${r.stdout}\n${r.stderr}` };
  }

  it('the addon under test is the instrumented one (it refuses to load without the ASan runtime)', () => {
    const r = run(`await E.Engine.load({ modelDir: dir, threads: 1 }); console.log('loaded');`, false);
    expect(r.output).toMatch(/ASan runtime does not come first/);
  });

  it.each([
    ['first loaded, first closed', 'a.close(); b.close();'],
    ['last loaded, first closed', 'b.close(); a.close();'],
    ['closed while a call runs, twice', 'const p = a.score(g); a.close(); a.close(); await p; b.close();'],
    ['never closed', ''],
  ])('two engines, %s, then a clean exit', (_name, closing) => {
    const r = run(
      `const a = await E.Engine.load({ modelDir: dir, threads: 1, packSuffixes: true });
       const b = await E.Engine.load({ modelDir: dir, threads: 1, packSuffixes: false, prefixCacheBytes: 0 });
       await a.score(g); await b.score(g); await a.score(g);
       ${closing}
       console.log('done');`,
    );
    expect(r.output).not.toMatch(/AddressSanitizer|corrupted|double free|Segmentation fault/);
    expect(r.output).toContain('done');
    expect({ status: r.status, signal: r.signal }).toEqual({ status: 0, signal: null });
  });
});
