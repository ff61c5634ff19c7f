/**
 * The LM-head rewrite. A stock export computes logits for every position ([rows, seq, vocab]):
 * with a 152k vocabulary that is gigabytes for a batch of suffixes, and more multiply-adds than
 * the transformer body of short suffixes. The engine needs a few positions per row (one per
 * question: a packed row holds several), so this adds a graph input `decide_logits_index`
 * [batch, positions] and gathers those positions of the LM head's input before the LM head
 * MatMul: logits become [batch, positions, vocab]. This file is the graph surgery alone (ONNX
 * protobuf in, protobuf out); src/engine/scoring-graph.ts caches, stamps, verifies and picks the
 * graph the engine loads.
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

export const LOGITS_INDEX_INPUT = 'decide_logits_index';
const LOGITS_POSITIONS_DIM = 'decide_logits_positions';
const REWRITE_SUFFIX = '.decide-gather.onnx';
const STAMP_SUFFIX = '.decide-gather.json';

/**
 * The rewrite's version: a cached rewrite stamped with another one is made again. Bump it whenever
 * the rewrite's output changes (2: a [batch, positions] index; 1 was a [batch] index, unstamped).
 */
export const LM_HEAD_REWRITE_VERSION = 2;

type Graph = onnxProto.onnx.IGraphProto;
type Node = onnxProto.onnx.INodeProto;

/** Path of the rewritten graph for a stock graph file. */
export function rewrittenPath(stockGraph: string): string {
  return stockGraph.replace(/\.onnx$/, '') + REWRITE_SUFFIX;
}

/** Path of the stamp that says which version made the rewrite, and from which graph (its hash). */
export function rewriteStampPath(stockGraph: string): string {
  return stockGraph.replace(/\.onnx$/, '') + STAMP_SUFFIX;
}

/** The outcome of the surgery: the new graph, or why this graph does not take it. */
export type LmHeadRewrite =
  | { kind: 'rewritten'; bytes: Uint8Array }
  /** The graph takes decide_logits_index already: it gathers by itself. */
  | { kind: 'gathers-already' }
  | { kind: 'not-applicable'; reason: string };

/**
 * The int8 LM heads (make-model/import-model --dtype int8): ONNX Runtime ops whose first input is
 * the activation, like MatMul's, and whose other inputs are the weight and its scales. The
 * DynamicQuantizeMatMul head quantizes its input per tensor, so after the gather it sees only the
 * gathered rows and the rewrite fails its verification against the stock graph (the engine then
 * runs the stock graph); MatMulNBits quantizes each row on its own and passes.
 */
const QUANTIZED_HEADS = new Set(['DynamicQuantizeMatMul', 'MatMulNBits']);

function isLmHeadOp(node: Node | undefined): boolean {
  if (node?.opType === 'MatMul') return (node.input ?? []).length === 2;
  return node !== undefined && node.domain === 'com.microsoft' && QUANTIZED_HEADS.has(node.opType ?? '');
}

/** Finds the MatMul (or int8 head) that produces `logits` (directly, or through a Cast as fp16 exports do). */
function findLmHead(graph: Graph): Node | undefined {
  const producers = new Map<string, Node>();
  for (const node of graph.node ?? []) for (const out of node.output ?? []) producers.set(out, node);
  let node = producers.get('logits');
  if (node?.opType === 'Cast') node = producers.get(node.input?.[0] ?? '');
  return isLmHeadOp(node) ? node : undefined;
}

function defaultOpset(model: onnxProto.onnx.IModelProto): number {
  const entry = (model.opsetImport ?? []).find((o) => !o.domain || o.domain === 'ai.onnx');
  return Number(entry?.version ?? 0);
}

/** Rewrites a ModelProto (bytes in, bytes out), or says why the graph does not fit the rewrite. */
export function rewriteLmHead(bytes: Uint8Array): LmHeadRewrite {
  const model = onnx.ModelProto.decode(bytes);
  const graph = model.graph;
  if (!graph) return { kind: 'not-applicable', reason: 'the file holds no graph' };
  if ((graph.input ?? []).some((i) => i.name === LOGITS_INDEX_INPUT)) return { kind: 'gathers-already' };
  const lmHead = findLmHead(graph);
  const opset = defaultOpset(model);
  if (!lmHead || !lmHead.input) {
    return { kind: 'not-applicable', reason: "no two-input MatMul produces the graph's 'logits' output (directly or through a Cast), nor an int8 MatMulNBits / DynamicQuantizeMatMul head" };
  }
  if (opset < 13) return { kind: 'not-applicable', reason: `the graph's opset is ${opset}; the rewrite needs 13 or later` };

  const hidden = lmHead.input[0]!;
  const names = {
    axes: 'decide_gather/axes_2',
    index3d: 'decide_gather/index_3d',
    rows: 'decide_gather/rows',
  };
  graph.initializer = graph.initializer ?? [];
  graph.initializer.push(
    onnx.TensorProto.create({
      name: names.axes,
      dataType: onnx.TensorProto.DataType.INT64,
      dims: [1],
      int64Data: [2],
    }),
  );
  // hidden [B, S, H] with index [B, K, 1] and batch_dims 1 -> rows [B, K, H].
  const newNodes: Node[] = [
    onnx.NodeProto.create({ name: '/decide_gather/Unsqueeze_index', opType: 'Unsqueeze', input: [LOGITS_INDEX_INPUT, names.axes], output: [names.index3d] }),
    onnx.NodeProto.create({
      name: '/decide_gather/GatherND',
      opType: 'GatherND',
      input: [hidden, names.index3d],
      output: [names.rows],
      attribute: [onnx.AttributeProto.create({ name: 'batch_dims', type: onnx.AttributeProto.AttributeType.INT, i: 1 })],
    }),
  ];
  lmHead.input[0] = names.rows;
  // Keep the node list topologically sorted: the new nodes go right before the LM head.
  const nodes = graph.node ?? [];
  const at = nodes.indexOf(lmHead);
  nodes.splice(at, 0, ...newNodes);

  graph.input = graph.input ?? [];
  graph.input.push(
    onnx.ValueInfoProto.create({
      name: LOGITS_INDEX_INPUT,
      type: onnx.TypeProto.create({
        tensorType: onnx.TypeProto.Tensor.create({
          elemType: onnx.TensorProto.DataType.INT64,
          shape: onnx.TensorShapeProto.create({
            dim: [
              onnx.TensorShapeProto.Dimension.create({ dimParam: 'batch_size' }),
              onnx.TensorShapeProto.Dimension.create({ dimParam: LOGITS_POSITIONS_DIM }),
            ],
          }),
        }),
      }),
    }),
  );
  // logits: [batch, seq, vocab] -> [batch, positions, vocab]
  for (const info of [...(graph.output ?? []), ...(graph.valueInfo ?? [])]) {
    if (info.name !== 'logits') continue;
    const dims = info.type?.tensorType?.shape?.dim;
    if (dims && dims.length === 3) dims[1] = onnx.TensorShapeProto.Dimension.create({ dimParam: LOGITS_POSITIONS_DIM });
  }
  return { kind: 'rewritten', bytes: onnx.ModelProto.encode(model).finish() };
}
