/**
 * The graph of an int8 model's path on this CPU (int8-path.ts). One model directory serves every
 * host: it stores uint8 weights (the exact u8 x u8 path); where the path is u8 x s8, the rewrite
 * (int8-rewrite.ts) is made once, beside the stock graph, with a stamp: the rewrite's version, the
 * SHA-256 of the stock graph and the size and modification time of the data files its weights were
 * read from. A cached rewrite is used only when its stamp matches all of them; otherwise it is made
 * again. Where it cannot be made (a read-only directory, a graph of another form) the stored graph
 * runs, and EngineInfo.int8 says why. The LM-head rewrite (scoring-graph.ts) then applies to
 * whichever graph this returns. Names, stamps and temporary files follow derived-graph-cache.ts.
 */
import { existsSync, renameSync } from 'node:fs';
import path from 'node:path';

import { runWorker } from '../support/worker-thread.js';
import { cpuInt8Support, type Int8Support } from './cpu-int8.js';
import { fileStamps, loadTag, readStamp, removeQuietly, sha256File, tempSibling, writeStamp, type FileStamp } from './derived-graph-cache.js';
import { readDecisionFile } from './model-dir.js';
import { chooseInt8Path, int8PathRequest, type Int8Path, type Int8PathChoice, type Int8PathRequest } from './int8-path.js';
import { U8S8_REWRITE_VERSION, u8s8Paths, type U8S8Rewrite } from './int8-rewrite.js';

/** EngineInfo.int8: which integer GEMM path ran, and why. */
export interface Int8Info {
  /** 'stored': a model of another int8 kernel than 'rowq-u8' (older or experimental), run as written. */
  path: Int8Path | 'stored';
  forced: boolean;
  reason: string;
  /** The kernel the model directory stores (decision.json: builder.int8 or import.int8). */
  storedKernel: string;
}

export interface Int8Graph {
  graphFile: string;
  /** Undefined for a model without int8 weights. */
  int8?: Int8Info;
}

interface Stamp {
  version: number;
  sourceSha256: string;
  /** The data files the rewrite's weights were read from, relative to the graph's folder. */
  external: FileStamp[];
}

/** The int8 kernel decision.json records (make-model: builder.int8, import-model: import.int8), if any. */
export function storedInt8Kernel(modelDir: string): string | undefined {
  try {
    const decision = readDecisionFile(modelDir);
    const kernel = decision?.builder?.int8?.scheme?.kernel ?? decision?.import?.int8?.scheme?.kernel;
    return typeof kernel === 'string' ? kernel : undefined;
  } catch {
    return undefined;
  }
}

function isStamp(parsed: unknown): parsed is Stamp {
  const s = parsed as Partial<Stamp>;
  return typeof s.version === 'number' && typeof s.sourceSha256 === 'string' && Array.isArray(s.external);
}

function stampMatches(stamp: Stamp | undefined, sourceSha256: string, graphDir: string): boolean {
  if (stamp?.version !== U8S8_REWRITE_VERSION || stamp.sourceSha256 !== sourceSha256) return false;
  try {
    return JSON.stringify(fileStamps(graphDir, stamp.external.map((e) => e.file))) === JSON.stringify(stamp.external);
  } catch {
    return false;
  }
}

/** The cached u8 x s8 graph when its stamp matches, else a new one; throws with the reason it cannot be made. */
async function u8s8Graph(stockGraph: string): Promise<string> {
  const paths = u8s8Paths(stockGraph);
  const graphDir = path.dirname(stockGraph);
  const sourceSha256 = await sha256File(stockGraph);
  if (existsSync(paths.graph) && existsSync(paths.data) && stampMatches(readStamp(paths.stamp, isStamp), sourceSha256, graphDir)) return paths.graph;

  // Unique per load: engines of one process, or of several, may be making the same rewrite. A stale
  // rewrite is replaced in one rename each, never deleted first (another process may be loading it).
  const tag = loadTag();
  const temps = { graph: tempSibling(paths.graph, tag), data: tempSibling(paths.data, tag) };
  try {
    const result = await runWorker<U8S8Rewrite>(import.meta.url, 'int8-rewrite-worker', {
      stockGraph,
      tempGraph: temps.graph,
      tempData: temps.data,
      dataFileName: path.basename(paths.data),
    });
    if (result.kind === 'not-applicable') throw new Error(result.reason);
    renameSync(temps.data, paths.data);
    renameSync(temps.graph, paths.graph);
    // The stamp last: a rewrite without one (a crash in between) is made again next time.
    const stamp: Stamp = { version: U8S8_REWRITE_VERSION, sourceSha256, external: fileStamps(graphDir, result.externalFiles) };
    try {
      writeStamp(paths.stamp, stamp, tag);
    } catch {
      // this process made the rewrite and uses it; the next load makes it again
    }
    return paths.graph;
  } finally {
    for (const t of Object.values(temps)) removeQuietly(t);
  }
}

/**
 * The graph to load for the model in `modelDir` (stock graph `stockGraph`) and, for an int8 model,
 * which path it runs and why. `int8Path` (the load option) or DECIDE_INT8_KERNEL forces a path;
 * a bad value of either is an ERR_INPUT error. `support` is for tests (default: this CPU's flags).
 */
export async function prepareInt8Graph(
  modelDir: string,
  stockGraph: string,
  options: { provider?: string; int8Path?: Int8PathRequest },
  support: Int8Support | undefined = cpuInt8Support(),
): Promise<Int8Graph> {
  const request = int8PathRequest(options.int8Path);
  const storedKernel = storedInt8Kernel(modelDir);
  if (storedKernel === undefined) return { graphFile: stockGraph };
  if (storedKernel !== 'rowq-u8') {
    return { graphFile: stockGraph, int8: { path: 'stored', forced: false, storedKernel, reason: `the model stores int8 kernel '${storedKernel}', run as written (the path is chosen for 'rowq-u8', what --dtype int8 writes now)` } };
  }
  if ((options.provider ?? 'cpu') !== 'cpu') {
    return { graphFile: stockGraph, int8: { path: 'u8u8', forced: false, storedKernel, reason: 'the CUDA provider runs the stored graph' } };
  }
  const choice: Int8PathChoice = chooseInt8Path(request, support);
  if (choice.path === 'u8u8') return { graphFile: stockGraph, int8: { ...choice, storedKernel } };
  try {
    return { graphFile: await u8s8Graph(stockGraph), int8: { ...choice, storedKernel } };
  } catch (err) {
    const why = (err as Error)?.message ?? String(err);
    return {
      graphFile: stockGraph,
      int8: { path: 'u8u8', forced: choice.forced, storedKernel, reason: `u8s8 wanted (${choice.reason}), but its graph could not be made beside the model (${why}): the stored u8 x u8 graph runs` },
    };
  }
}
