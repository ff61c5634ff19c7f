/**
 * Which decoder graph the engine runs (the `fusedAttention` option): the model's own, or the fused
 * graph derived from a standard-op model. The fused graph measured faster than the standard-op
 * graph on an H100 and no faster on the CPU, so 'auto' (the default) derives it on CUDA only.
 * Deriving needs the model builder and importer, which sit a layer above the engine
 * (src/models/fused-graph.ts, deriveFusedGraph): the caller hands it in as `graphDeriver`, as the
 * decision service and the `decide` commands do. Without one, the model's own graph runs, and
 * EngineInfo.attention says so.
 */
import type { VerifyLoadOptions } from './lm-head-verify.js';
import { readDecisionFile } from './model-dir.js';

export const FUSED_ATTENTION_REQUESTS = ['auto', 'on', 'off'] as const;
export type FusedAttentionRequest = (typeof FUSED_ATTENTION_REQUESTS)[number];

/** The graph the engine runs and where it came from (EngineInfo.attention). */
export type AttentionChoice =
  /** The model's own graph; `reason` says why a fused graph was not derived, where one was asked for. */
  | { graph: 'ops' | 'fused'; source: 'stored'; ownKernels?: true; reason?: string }
  /**
   * The fused graph derived from the model's standard-op graph; `ownKernels` where it has the
   * engine's own operators, `reason` where they were asked for and could not be used.
   */
  | { graph: 'fused'; source: 'derived'; ownKernels?: true; reason?: string };

/**
 * Which fused graph to derive. `controlFlow: false` (CUDA graphs, which ONNX Runtime refuses on a
 * graph with an If) asks for one without causal states' If.
 */
export interface DerivedGraphForm {
  controlFlow: boolean;
  /** The engine's own HeadNormRotary and SiluMul where they apply (DecoderFeatures.ownKernels). */
  ownKernels?: boolean;
}

/**
 * Derives (or finds cached) the fused graph of the model in `modelDir` whose stored graph is
 * `storedGraph`, of the form asked for, checked against it with `verifyWith`; or says why the
 * stored graph runs instead.
 */
export type GraphDeriver = (
  modelDir: string,
  storedGraph: string,
  verifyWith: VerifyLoadOptions,
  form: DerivedGraphForm,
) => Promise<{ graphFile: string; attention: AttentionChoice }>;

/** The graph to load for `request` on the engine's provider ('cpu' or 'cuda'). */
export async function chooseAttentionGraph(
  modelDir: string,
  storedGraph: string,
  request: FusedAttentionRequest,
  provider: string,
  deriver: GraphDeriver | undefined,
  verifyWith: VerifyLoadOptions,
  form: DerivedGraphForm,
): Promise<{ graphFile: string; attention: AttentionChoice }> {
  if (request === 'off' || (request === 'auto' && provider !== 'cuda')) {
    // What the stored graph is needs no derivation: the deriver reads it from the model's record.
    const record = storedGraphRecord(modelDir);
    const ignored = form.ownKernels && !record?.ownKernels;
    const reason = ignored ? `ownKernels applies to the fused graph the engine derives (fusedAttention 'on', or 'auto' on cuda); fusedAttention is '${request}' on ${provider}` : undefined;
    return { graphFile: storedGraph, attention: storedChoice(record, reason) };
  }
  if (deriver === undefined) {
    const reason = 'no graph deriver was given to Engine.load (pass graphDeriver: deriveFusedGraph from decision-engine/engine)';
    return { graphFile: storedGraph, attention: storedChoice(storedGraphRecord(modelDir), reason) };
  }
  const chosen = await deriver(modelDir, storedGraph, verifyWith, form);
  if (!form.ownKernels || chosen.attention.source === 'derived') return chosen;
  // The own operators could not be used (no NVRTC on a CUDA host, say): the fused graph without them.
  const without = await deriver(modelDir, storedGraph, verifyWith, { ...form, ownKernels: false });
  if (without.attention.source !== 'derived') return chosen;
  return { ...without, attention: { ...without.attention, reason: `without the engine's own kernels: ${chosen.attention.reason ?? 'not derived'}` } };
}

/**
 * The choice of the model's own graph, as its record (storedGraphRecord) says it was written, with
 * why where a derivation was asked for.
 */
export function storedChoice(record: StoredGraphRecord | undefined, reason?: string): AttentionChoice {
  return {
    graph: record?.attention ?? 'ops',
    source: 'stored',
    ...(record?.ownKernels ? { ownKernels: true as const } : {}),
    ...(reason ? { reason } : {}),
  };
}

/** How a model's stored graph was written (storedGraphRecord). */
export interface StoredGraphRecord {
  attention: 'ops' | 'fused';
  dtype: string;
  ownKernels?: true;
}

/**
 * How the model's graph was written, from its record in decision.json (make-model's `builder`,
 * import-model's `import`); undefined for a model without one (an export made elsewhere).
 */
export function storedGraphRecord(modelDir: string): StoredGraphRecord | undefined {
  try {
    const decision = readDecisionFile(modelDir);
    const record = decision?.builder ?? decision?.import;
    if (typeof record?.dtype !== 'string') return undefined;
    return {
      attention: record.features?.attention === 'fused' ? 'fused' : 'ops',
      dtype: record.dtype,
      ...(record.features?.ownKernels === true ? { ownKernels: true as const } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * Why CUDA graphs cannot run the graph `attention` names, or undefined. The standard-op graph
 * appends the KV cache with a Concat of a past and a new part whose lengths differ; ONNX Runtime's
 * CUDA Concat then copies its inputs' pointers and sizes from host memory to the device in every
 * run, and a captured graph replays that copy from host memory released since (every recorded
 * replay of this graph failed with an illegal address). The fused graph appends inside its
 * attention op.
 */
export function cudaGraphsProblem(attention: AttentionChoice): string | undefined {
  if (attention.graph === 'fused') return undefined;
  return (
    "cudaGraphs runs the fused graph only: the standard-op graph appends the KV cache with Concat, which ONNX Runtime's CUDA kernel feeds " +
    'from host memory in every run (a replayed graph would read it after it was freed). Load it with graphDeriver (fusedAttention ' +
    `'auto' or 'on'), or make or import the model with --attention fused${attention.reason ? ` (not derived here: ${attention.reason})` : ''}`
  );
}
