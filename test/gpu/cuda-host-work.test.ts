/**
 * The host's work on CUDA (needs a GPU host, as cuda-engine.test.ts; skipped elsewhere):
 *   - ONNX Runtime places no Memcpy nodes: every input the engine binds is where the session runs
 *     (read from the session's own log, at warning level), also with the engine's own kernels
 *     (a node of theirs placed on the CPU would add them);
 *   - KV moves in a few batched copies per pass, and the vocabulary stays on the device (the same
 *     counter invariants as test/native/engine-counters.test.ts, on the card);
 *   - a process that loads two CUDA engines and closes them, in either order, exits cleanly.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { counterWorkload as workload } from '../helpers/random-groups.js';
import { decideBin } from '../helpers/bin.js';
import { tinyModelDir } from '../helpers/tiny-model.js';
import { cudaAvailable as hasCuda } from '../helpers/cuda-available.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const packedDir = await tinyModelDir({ segmentIds: true });
const cudaAvailable = await hasCuda(packedDir);

/** Runs `body` (an ES module) in a fresh node process with the package's dist/ importable as `E`. */
function runScript(body: string, env: Record<string, string> = {}): { status: number | null; signal: string | null; output: string } {
  const script = `const E = await import(${JSON.stringify(path.join(ROOT, 'dist/src/index.js'))});\n${body}`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 180_000 });
  return { status: r.status, signal: r.signal, output: `${r.stdout}\n${r.stderr}` };
}

describe.skipIf(!cudaAvailable)('host work on CUDA', () => {
  it('ONNX Runtime adds no Memcpy nodes to the scoring graph', async () => {
    await decideBin();
    const r = runScript(
      `const e = await E.Engine.load({ modelDir: ${JSON.stringify(packedDir)}, provider: 'cuda', packSuffixes: true });
       await e.score([{ prefix: Int32Array.from([5, 6, 7, 8]), suffixes: [{ tokens: Int32Array.from([9, 10]), labels: Int32Array.from([1, 2]) }] }]);
       e.close(); console.log('scored');`,
      { DECIDE_ORT_LOG_LEVEL: '1' },
    );
    expect(r.output).toContain('scored');
    expect(r.output).not.toMatch(/Memcpy nodes are added/);
  });

  it("ONNX Runtime adds no Memcpy nodes with the engine's own kernels either (their CUDA kernels ran, not the CPU ones)", async () => {
    await decideBin();
    const r = runScript(
      `const D = await import(${JSON.stringify(path.join(ROOT, 'dist/src/entry/engine.js'))});
       const e = await D.Engine.load({ modelDir: ${JSON.stringify(packedDir)}, provider: 'cuda', packSuffixes: true, fusedAttention: 'on', ownKernels: true, graphDeriver: D.deriveFusedGraph });
       console.log('attention', JSON.stringify(e.info.attention));
       await e.score([{ prefix: Int32Array.from([5, 6, 7, 8]), suffixes: [{ tokens: Int32Array.from([9, 10]), labels: Int32Array.from([1, 2]) }] }]);
       e.close(); console.log('scored');`,
      { DECIDE_ORT_LOG_LEVEL: '1' },
    );
    expect(r.output).toContain('scored');
    expect(r.output).toContain('"ownKernels":true');
    expect(r.output).not.toMatch(/Memcpy nodes are added/);
  });

  it.each([false, true])('copies per pass do not grow with the rows, and only labels come back (packSuffixes %s)', async (packSuffixes) => {
    const engine = await Engine.load({ modelDir: packedDir, provider: 'cuda', prefixCacheBytes: 0, packSuffixes, tokenBudget: 1 << 16, passOverheadTokens: Infinity });
    try {
      expect(engine.info.hasLabelHead).toBe(true);
      const small = await engine.scoreBatch(workload(8, 8));
      const large = await engine.scoreBatch(workload(64, 64));
      for (const { counters } of [small, large]) expect(counters.deviceCopies).toBeLessThanOrEqual(3 * counters.forwardPasses);
      expect(large.counters.deviceCopies).toBe(small.counters.deviceCopies);
      const groups = workload(64, 64);
      const { counters } = await engine.scoreBatch(groups);
      const labels = groups.reduce((n, g) => n + g.suffixes.reduce((m, s) => m + s.labels.length, 0), 0);
      const positions = groups.reduce((n, g) => n + g.suffixes.length, 0);
      expect(counters.deviceToHostBytes).toBeLessThanOrEqual(8 * labels + 8 * positions + 8 * counters.forwardPasses);
    } finally {
      engine.close();
    }
  });

  it.each([
    ['first loaded, first closed', 'a.close(); b.close();'],
    ['last loaded, first closed', 'b.close(); a.close();'],
    ['never closed', ''],
  ])('two CUDA engines, %s, then a clean exit', async (_name, closing) => {
    await decideBin();
    const r = runScript(
      `const dir = ${JSON.stringify(packedDir)};
       const a = await E.Engine.load({ modelDir: dir, provider: 'cuda' });
       const b = await E.Engine.load({ modelDir: dir, provider: 'cuda', packSuffixes: false });
       const g = [{ prefix: Int32Array.from([5, 6, 7, 8]), suffixes: [{ tokens: Int32Array.from([9, 10]), labels: Int32Array.from([1, 2]) }] }];
       await a.score(g); await b.score(g);
       ${closing}
       console.log('done');`,
    );
    expect(r.output).toContain('done');
    expect(r.output).not.toMatch(/corrupted|double free|Segmentation|Aborted/i);
    expect({ status: r.status, signal: r.signal }).toEqual({ status: 0, signal: null });
  });
});
