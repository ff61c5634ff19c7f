/**
 * The graph the engine loads. The LM-head rewrite (src/engine/lm-head-rewrite.ts) is cached beside
 * the stock graph (so external weight files resolve the same way) with a stamp beside it: the
 * rewrite's version and the SHA-256 of the stock graph it was made from. A cached rewrite is used
 * only when its stamp matches both; otherwise it is made again, verified once against the stock
 * graph on a small input (lm-head-verify.ts), and stamped. When the rewrite does not apply (an
 * unexpected graph shape, a read-only directory, a verification mismatch) the stock graph is used
 * unchanged, and the result says why. Names, stamps and temporary files follow derived-graph-cache.ts.
 */
import { existsSync, renameSync } from 'node:fs';

import { runWorker } from '../support/worker-thread.js';
import { readStamp, removeQuietly, sha256File, tempSibling, writeStamp } from './derived-graph-cache.js';
import { LM_HEAD_REWRITE_VERSION, rewriteStampPath, rewrittenPath, type LmHeadRewrite } from './lm-head-rewrite.js';
import { verifyRewrite, type VerifyLoadOptions } from './lm-head-verify.js';

/** How the engine computes logits, and why (EngineInfo.lmHead). */
export type LmHeadChoice =
  /** The LM-head rewrite: logits of the answer positions only. */
  | { graph: 'rewrite' }
  /** The stock graph takes the token index and the scoring head's indexes itself. */
  | { graph: 'stock'; reason: 'gathers-already' }
  /** gatherLogits: false. */
  | { graph: 'stock'; reason: 'off' }
  /** The rewrite was wanted but not used (slower: logits for every position); `detail` says why. */
  | { graph: 'stock'; reason: 'fallback'; detail: string };

export interface ScoringGraph {
  graphFile: string;
  lmHead: LmHeadChoice;
}

/** What a stamp file holds. */
interface RewriteStamp {
  version: number;
  sourceSha256: string;
}

function isRewriteStamp(parsed: unknown): parsed is RewriteStamp {
  const s = parsed as Partial<RewriteStamp>;
  return typeof s.version === 'number' && typeof s.sourceSha256 === 'string';
}

function message(err: unknown): string {
  return (err as Error)?.message ?? String(err);
}

/** Rewrites `stockGraph` into `temp` in a worker thread, so that the JS thread keeps serving while a large graph is decoded and encoded. */
function runLmHeadRewrite(stockGraph: string, temp: string): Promise<Exclude<LmHeadRewrite, { kind: 'rewritten' }> | { kind: 'rewritten' }> {
  return runWorker(import.meta.url, 'lm-head-rewrite-worker', { stockGraph, temp });
}

/**
 * The graph the engine should load: the cached rewrite when its stamp matches this version and this
 * stock graph, else a new verified rewrite, else the stock graph (with the reason).
 */
export async function prepareScoringGraph(stockGraph: string, verifyWith: VerifyLoadOptions): Promise<ScoringGraph> {
  const target = rewrittenPath(stockGraph);
  const stampFile = rewriteStampPath(stockGraph);
  const fallback = (detail: string): ScoringGraph => ({ graphFile: stockGraph, lmHead: { graph: 'stock', reason: 'fallback', detail } });
  let stamp: RewriteStamp;
  try {
    stamp = { version: LM_HEAD_REWRITE_VERSION, sourceSha256: await sha256File(stockGraph) };
  } catch (err) {
    return fallback(`the stock graph could not be read: ${message(err)}`);
  }
  const cached = readStamp(stampFile, isRewriteStamp);
  if (existsSync(target) && cached?.version === stamp.version && cached.sourceSha256 === stamp.sourceSha256) {
    return { graphFile: target, lmHead: { graph: 'rewrite' } };
  }

  // Unique per load: engines of one process, or of several, may be making the same rewrite.
  const temp = tempSibling(target);
  let rewrite;
  try {
    rewrite = await runLmHeadRewrite(stockGraph, temp);
  } catch (err) {
    removeQuietly(temp);
    return fallback(`the LM-head rewrite could not be made (reading, parsing or writing beside the graph): ${message(err)}`);
  }
  if (rewrite.kind === 'gathers-already') return { graphFile: stockGraph, lmHead: { graph: 'stock', reason: 'gathers-already' } };
  // A stale rewrite (another version, another graph, or no stamp) is left in place, never used,
  // and replaced below in one rename: deleting it first could pull the file from under another
  // process that has just made and stamped it and is loading it now.
  if (rewrite.kind === 'not-applicable') return fallback(`the LM-head rewrite does not apply: ${rewrite.reason}`);

  try {
    await verifyRewrite(stockGraph, temp, verifyWith);
  } catch (err) {
    removeQuietly(temp);
    return fallback(`the rewrite failed its check against the stock graph: ${message(err)}`);
  }
  try {
    renameSync(temp, target);
  } catch (err) {
    removeQuietly(temp);
    return fallback(`the rewrite could not be saved beside the graph: ${message(err)}`);
  }
  // The stamp last: a rewrite without one (a crash in between, a failed write) is made again next
  // time; this process verified it and uses it either way.
  try {
    writeStamp(stampFile, stamp);
  } catch {
    // made again next time, as above
  }
  return { graphFile: target, lmHead: { graph: 'rewrite' } };
}
