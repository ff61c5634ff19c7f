/**
 * Scoring an imported model through the Engine the way the service does (a prefix, then a suffix
 * whose last position gives every vocabulary logit), so importer tests compare whole logit rows
 * against an oracle at several prefix / suffix splits.
 */
import { expect } from 'vitest';

import { Engine } from '../../src/engine/engine.js';
import { referenceLastLogits } from './reference.js';

/** Prefix lengths to split a sequence of n tokens at (prefix and suffix both non-empty). */
export function splitPoints(n: number): number[] {
  return [...new Set([1, 2, Math.floor(n / 3), Math.floor(n / 2), n - 3, n - 1])].filter((k) => k >= 1 && k <= n - 1);
}

/**
 * The last-position logits of every sequence at every split point, through the engine (one call,
 * so rows of different groups share passes). Sequences of one token go through the stock graph.
 */
export async function engineLastLogits(
  modelDir: string,
  sequences: number[][],
  vocabSize: number,
): Promise<Array<Array<{ split: number; logits: Float32Array }>>> {
  const allIds = Int32Array.from({ length: vocabSize }, (_, i) => i);
  const engine = await Engine.load({ modelDir });
  try {
    expect(engine.info.graphFile.endsWith('model.decide-gather.onnx')).toBe(true);
    const groups = sequences.flatMap((ids, s) =>
      splitPoints(ids.length).map((k) => ({ s, k, group: { prefix: Int32Array.from(ids.slice(0, k)), suffixes: [{ tokens: Int32Array.from(ids.slice(k)), labels: allIds }] } })),
    );
    const scored = await engine.score(groups.map((g) => g.group));
    const out: Array<Array<{ split: number; logits: Float32Array }>> = sequences.map(() => []);
    groups.forEach((g, i) => out[g.s]!.push({ split: g.k, logits: scored[i]![0]!.labelLogits }));
    for (const [s, ids] of sequences.entries()) {
      if (ids.length === 1) out[s]!.push({ split: 0, logits: await referenceLastLogits(modelDir, ids) });
    }
    return out;
  } finally {
    engine.close();
  }
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}
