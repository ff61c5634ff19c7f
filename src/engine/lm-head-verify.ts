/**
 * One-time check that a rewritten graph (the LM-head rewrite, a derived fused graph: src/models/fused-graph.ts)
 * computes the same scores as the graph it was made from: both graphs
 * are loaded into the native engine and score the same group (two suffixes of different lengths,
 * so one row is padded). Label logits over a spread of the vocabulary and each row's log-sum-exp
 * over the whole vocabulary must agree. Throws on any mismatch.
 *
 * It runs through the native addon, not onnxruntime-node's JS API, so that an installed package
 * needs no second ONNX Runtime binding at run time.
 */
import { EngineError } from '../errors/engine-error.js';
import { loadNativeModule, type NativeLoadOptions, type NativeScoreResult } from './native.js';
import { flatten } from './score-groups.js';

/** The load options of the engine that will use the graph, without the graph path. */
export type VerifyLoadOptions = Omit<NativeLoadOptions, 'modelPath'>;

async function scoreWith(
  graph: string,
  options: VerifyLoadOptions,
  vocab: number,
): Promise<NativeScoreResult & { fp16: boolean }> {
  const { NativeEngine } = loadNativeModule();
  const engine = new NativeEngine();
  try {
    // One thread, no cache and no profiler: a check, not the engine's own session.
    // Exact pass shapes (no buckets, no length padding), no CUDA graphs: a stock graph cannot run
    // CUDA graphs (it has no scoring head), and the check needs no padding.
    await engine.load({ ...options, modelPath: graph, threads: 1, prefixCacheBytes: 0, ortProfilePrefix: '', shapeBuckets: false, cudaGraphs: false, passLengthMultiple: 1 });
    const ids = (values: number[]) => Int32Array.from(values.map((v) => v % vocab));
    // Up to 256 label ids spread over the vocabulary (the first and last included).
    const count = Math.min(256, vocab);
    const labels = Int32Array.from({ length: count }, (_, i) => Math.round((i * (vocab - 1)) / Math.max(1, count - 1)));
    const fp16 = engine.info().kvDtype === 'float16';
    const result = await engine.score(
      flatten([
        {
          prefix: ids([17, 11, 879]),
          suffixes: [
            { tokens: ids([0, 315, 249]), labels },
            { tokens: ids([40]), labels },
          ],
        },
      ]),
    );
    return { ...result, fp16 };
  } finally {
    engine.close();
  }
}

export async function verifyRewrite(stockGraph: string, rewrittenGraph: string, options: VerifyLoadOptions): Promise<void> {
  const vocab = options.vocabSize ?? 0;
  if (!(vocab > 0)) throw new EngineError('ERR_MODEL_LOAD', 'verifyRewrite needs the vocabulary size');
  const stock = await scoreWith(stockGraph, options, vocab);
  const rewritten = await scoreWith(rewrittenGraph, options, vocab);
  // fp16 graphs round the LM head's inputs differently once the gather moves ahead of it.
  const tolerance = stock.fp16 ? 2e-2 : 1e-4;
  const compare = (what: string, a: Float32Array, b: Float32Array) => {
    if (a.length !== b.length) throw new EngineError('ERR_MODEL_LOAD', `rewrite mismatch: ${what} has ${a.length} vs ${b.length} values`);
    for (let i = 0; i < a.length; i++) {
      const x = a[i]!;
      const y = b[i]!;
      if (!(Math.abs(x - y) <= tolerance * Math.max(1, Math.abs(x)))) {
        throw new EngineError('ERR_MODEL_LOAD', `rewrite mismatch in ${what} at ${i}: ${x} vs ${y}`);
      }
    }
  };
  compare('label logits', stock.labelLogits, rewritten.labelLogits);
  compare('log-sum-exp', stock.logSumExp, rewritten.logSumExp);
}
