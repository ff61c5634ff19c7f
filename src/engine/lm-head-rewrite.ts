/**
 * The LM-head rewrite. A stock export computes logits for every position ([rows, seq, vocab]):
 * with a 152k vocabulary that is gigabytes for a batch of suffixes, and more multiply-adds than
 * the transformer body of short suffixes. The engine needs a few positions per row (one per
 * question: a packed row holds several), and at each of them only its labels' logits and the
 * log-sum-exp over the vocabulary. So the rewrite:
 * 1. adds a graph input `decide_token_index` [batch, positions] and gathers those tokens of the
 *    LM head's input before the LM head MatMul: logits become [batch, positions, vocab];
 * 2. adds the scoring head after it, in fp32: `decide_label_index` [N] gathers
 *    `decide_label_logits` [N], and `decide_position_token_index` [M] gathers `decide_log_sum_exp`
 *    [M] as a token's logit minus its LogSoftmax over the vocabulary (exact for any logit range);
 *    `logits` stops being an output. The vocabulary never leaves the device: a call reads back 4
 *    bytes per label and per position. LogSoftmax rather than ReduceMax, Sub, Exp, ReduceSum: on
 *    CUDA, ONNX Runtime runs ReduceMax over a long last axis through cuDNN with a few blocks for
 *    the whole tensor (16 ms of a GPU-size tickets call on an H200, Nsight Compute), its softmax
 *    in one block per row (0.3 ms).
 * Every index is flat, computed by the host: a token is row * seq + t of the pass, a label
 * (row * positions + k) * vocab + token, a position the same index of one of its labels. The gathers are plain
 * Gathers over flattened tensors, because ONNX Runtime's CUDA GatherND copies a host vector to the
 * device on every run: a captured CUDA graph replays that copy from host memory freed since, and
 * reads garbage offsets (an illegal address on the card).
 * This file is the graph surgery alone (ONNX protobuf in, protobuf out);
 * src/engine/scoring-graph.ts caches, stamps, verifies and picks the graph the engine loads.
 */
import onnxProto from 'onnx-proto';

import { DERIVED_TAGS, derivedPath } from './derived-graph-cache.js';

const { onnx } = onnxProto;

/** Row-local positions [batch, positions]: graphs of older rewrites and hand-made ones (no scoring head). */
export const LOGITS_INDEX_INPUT = 'decide_logits_index';
/** The rewrite's: the wanted tokens [batch, positions], flat over the pass's rows x tokens. */
export const TOKEN_INDEX_INPUT = 'decide_token_index';
export const LABEL_INDEX_INPUT = 'decide_label_index';
/** The rewrite's: per wanted position the flat label index (above) of one of its tokens. */
export const POSITION_TOKEN_INDEX_INPUT = 'decide_position_token_index';
/** Heads of rewrite version 4 and before (per wanted position row * positions + k): the engine refuses them, the bench's baseline feeds them. */
export const POSITION_INDEX_INPUT = 'decide_position_index';
export const LABEL_LOGITS_OUTPUT = 'decide_label_logits';
export const LOG_SUM_EXP_OUTPUT = 'decide_log_sum_exp';
const LOGITS_POSITIONS_DIM = 'decide_logits_positions';

/**
 * The rewrite's version: a cached rewrite stamped with another one is made again. Bump it whenever
 * the rewrite's output changes (5: the log-sum-exp from LogSoftmax at a token of the position;
 * 4: flat indices and Gathers; 3: the scoring head; 2: a
 * [batch, positions] index; 1 was a [batch] index, unstamped). A model made before is upgraded at
 * its next load.
 */
export const LM_HEAD_REWRITE_VERSION = 5;

type Graph = onnxProto.onnx.IGraphProto;
type Node = onnxProto.onnx.INodeProto;

/** Path of the rewritten graph for a stock graph file. */
export function rewrittenPath(stockGraph: string): string {
  return derivedPath(stockGraph, DERIVED_TAGS.lmHead, '.onnx');
}

/** Path of the stamp that says which version made the rewrite, and from which graph (its hash). */
export function rewriteStampPath(stockGraph: string): string {
  return derivedPath(stockGraph, DERIVED_TAGS.lmHead, '.json');
}

/** The outcome of the surgery: the new graph, or why this graph does not take it. */
export type LmHeadRewrite =
  | { kind: 'rewritten'; bytes: Uint8Array }
  /** The graph takes decide_token_index (or decide_logits_index) and decide_label_index already: it scores by itself. */
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

function int64Tensor(name: string, values: number[]): onnxProto.onnx.ITensorProto {
  return onnx.TensorProto.create({ name, dataType: onnx.TensorProto.DataType.INT64, dims: [values.length], int64Data: values });
}

function node(name: string, opType: string, input: string[], output: string[], attribute: onnxProto.onnx.IAttributeProto[] = []): Node {
  return onnx.NodeProto.create({ name: `/decide_head/${name}`, opType, input, output, attribute });
}

function intAttribute(name: string, i: number): onnxProto.onnx.IAttributeProto {
  return onnx.AttributeProto.create({ name, type: onnx.AttributeProto.AttributeType.INT, i });
}

function tensorValueInfo(name: string, elemType: number, dims: Array<string | number>): onnxProto.onnx.IValueInfoProto {
  return onnx.ValueInfoProto.create({
    name,
    type: onnx.TypeProto.create({
      tensorType: onnx.TypeProto.Tensor.create({
        elemType,
        shape: onnx.TensorShapeProto.create({
          dim: dims.map((d) => onnx.TensorShapeProto.Dimension.create(typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
        }),
      }),
    }),
  });
}

/**
 * Gathers the LM head's input rows named by decide_token_index [B, K] (flat over the pass's B x S
 * tokens) before the head, so logits come out [B, K, vocab].
 */
function addPositionGather(graph: Graph, lmHead: Node): void {
  const hidden = lmHead.input![0]!;
  const names = { tokens: 'decide_gather/tokens', rows: 'decide_gather/rows' };
  // hidden [B, S, H] -> tokens [B * S, H] -> rows [B, K, H].
  const newNodes: Node[] = [
    onnx.NodeProto.create({ name: '/decide_gather/Flatten', opType: 'Flatten', input: [hidden], output: [names.tokens], attribute: [intAttribute('axis', 2)] }),
    onnx.NodeProto.create({ name: '/decide_gather/Gather', opType: 'Gather', input: [names.tokens, TOKEN_INDEX_INPUT], output: [names.rows], attribute: [intAttribute('axis', 0)] }),
  ];
  lmHead.input![0] = names.rows;
  // Keep the node list topologically sorted: the new nodes go right before the LM head.
  const nodes = graph.node ?? [];
  nodes.splice(nodes.indexOf(lmHead), 0, ...newNodes);
  graph.input!.push(tensorValueInfo(TOKEN_INDEX_INPUT, onnx.TensorProto.DataType.INT64, ['batch_size', LOGITS_POSITIONS_DIM]));
  // logits: [batch, seq, vocab] -> [batch, positions, vocab]
  for (const info of [...(graph.output ?? []), ...(graph.valueInfo ?? [])]) {
    if (info.name !== 'logits') continue;
    const dims = info.type?.tensorType?.shape?.dim;
    if (dims && dims.length === 3) dims[1] = onnx.TensorShapeProto.Dimension.create({ dimParam: LOGITS_POSITIONS_DIM });
  }
}

/**
 * The scoring head over logits [B, K, vocab]: the labels' logits and each position's log-sum-exp,
 * both fp32 and gathered to flat lists, replace the `logits` output. A position's log-sum-exp is
 * its token's logit minus that token's log-softmax (LogSoftmax subtracts the row's max first, so
 * nothing overflows); the token is one of its labels, whose log-softmax is moderate, so the
 * difference loses no more than the reduction it replaces.
 */
function addScoringHead(graph: Graph): void {
  const fp32 = 'decide_head/logits_fp32';
  const names = {
    flatShape: 'decide_head/flat_shape',
    logitsFlat: 'decide_head/logits_flat',
    logSoftmax: 'decide_head/log_softmax',
    logSoftmaxFlat: 'decide_head/log_softmax_flat',
    positionLogits: 'decide_head/position_logits',
    positionLogSoftmax: 'decide_head/position_log_softmax',
  };
  graph.initializer!.push(int64Tensor(names.flatShape, [-1]));
  const gather = (name: string, data: string, index: string, output: string): Node => node(name, 'Gather', [data, index], [output], [intAttribute('axis', 0)]);
  const nodes: Node[] = [
    node('Cast', 'Cast', ['logits'], [fp32], [intAttribute('to', onnx.TensorProto.DataType.FLOAT)]),
    node('Reshape_logits', 'Reshape', [fp32, names.flatShape], [names.logitsFlat]),
    gather('Gather_labels', names.logitsFlat, LABEL_INDEX_INPUT, LABEL_LOGITS_OUTPUT),
    node('LogSoftmax', 'LogSoftmax', [fp32], [names.logSoftmax], [intAttribute('axis', -1)]),
    node('Reshape_log_softmax', 'Reshape', [names.logSoftmax, names.flatShape], [names.logSoftmaxFlat]),
    gather('Gather_position_logits', names.logitsFlat, POSITION_TOKEN_INDEX_INPUT, names.positionLogits),
    gather('Gather_position_log_softmax', names.logSoftmaxFlat, POSITION_TOKEN_INDEX_INPUT, names.positionLogSoftmax),
    node('Sub', 'Sub', [names.positionLogits, names.positionLogSoftmax], [LOG_SUM_EXP_OUTPUT]),
  ];
  graph.node!.push(...nodes);
  const int64 = onnx.TensorProto.DataType.INT64;
  const float = onnx.TensorProto.DataType.FLOAT;
  graph.input!.push(tensorValueInfo(LABEL_INDEX_INPUT, int64, ['decide_labels']));
  graph.input!.push(tensorValueInfo(POSITION_TOKEN_INDEX_INPUT, int64, ['decide_positions']));
  graph.output = (graph.output ?? []).filter((o) => o.name !== 'logits');
  graph.output.push(tensorValueInfo(LABEL_LOGITS_OUTPUT, float, ['decide_labels']));
  graph.output.push(tensorValueInfo(LOG_SUM_EXP_OUTPUT, float, ['decide_positions']));
}

/** Rewrites a ModelProto (bytes in, bytes out), or says why the graph does not fit the rewrite. */
export function rewriteLmHead(bytes: Uint8Array): LmHeadRewrite {
  const model = onnx.ModelProto.decode(bytes);
  const graph = model.graph;
  if (!graph) return { kind: 'not-applicable', reason: 'the file holds no graph' };
  const inputs = new Set((graph.input ?? []).map((i) => i.name));
  if ((inputs.has(TOKEN_INDEX_INPUT) || inputs.has(LOGITS_INDEX_INPUT)) && inputs.has(LABEL_INDEX_INPUT)) return { kind: 'gathers-already' };
  const opset = defaultOpset(model);
  if (opset < 13) return { kind: 'not-applicable', reason: `the graph's opset is ${opset}; the rewrite needs 13 or later` };
  if (!(graph.output ?? []).some((o) => o.name === 'logits')) return { kind: 'not-applicable', reason: "the graph has no 'logits' output" };
  graph.initializer = graph.initializer ?? [];
  graph.input = graph.input ?? [];
  graph.node = graph.node ?? [];
  if (inputs.has(LOGITS_INDEX_INPUT)) {
    return { kind: 'not-applicable', reason: 'the graph gathers row-local positions itself (decide_logits_index); the scoring head needs flat token indices' };
  }
  const lmHead = findLmHead(graph);
  if (!lmHead || !lmHead.input) {
    return { kind: 'not-applicable', reason: "no two-input MatMul produces the graph's 'logits' output (directly or through a Cast), nor an int8 MatMulNBits / DynamicQuantizeMatMul head" };
  }
  addPositionGather(graph, lmHead);
  addScoringHead(graph);
  return { kind: 'rewritten', bytes: onnx.ModelProto.encode(model).finish() };
}
