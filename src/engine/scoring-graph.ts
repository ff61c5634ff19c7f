/**
 * The graph the engine loads. The LM-head rewrite (src/engine/lm-head-rewrite.ts) is cached beside
 * the stock graph (so external weight files resolve the same way), verified once against it on a
 * small input (lm-head-verify.ts), and used instead of it. When the rewrite does not apply (an
 * unexpected graph shape, a read-only directory, a verification mismatch) the stock graph is used
 * unchanged.
 */
import { existsSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';

import { rewriteLmHead, rewrittenPath } from './lm-head-rewrite.js';
import { verifyRewrite, type VerifyLoadOptions } from './lm-head-verify.js';

/**
 * The graph the engine should load: the cached rewrite when it exists and is current, else a new
 * verified rewrite, else the stock graph.
 */
export async function prepareScoringGraph(stockGraph: string, verifyWith: VerifyLoadOptions): Promise<string> {
  const target = rewrittenPath(stockGraph);
  if (existsSync(target) && statSync(target).mtimeMs >= statSync(stockGraph).mtimeMs) return target;
  let rewritten: Uint8Array | undefined;
  try {
    rewritten = rewriteLmHead(readFileSync(stockGraph));
  } catch {
    return stockGraph;
  }
  if (!rewritten) return stockGraph;
  const temp = `${target}.tmp-${process.pid}`;
  try {
    writeFileSync(temp, rewritten);
    await verifyRewrite(stockGraph, temp, verifyWith);
    renameSync(temp, target);
    return target;
  } catch {
    try {
      unlinkSync(temp);
    } catch {
      // already gone, or never written (read-only directory)
    }
    return stockGraph;
  }
}
