/**
 * The engine's own ONNX Runtime operators (native/ops/, registered on every CPU session the addon
 * makes): their contract, in one place, and their expansion into standard ONNX ops, for sessions
 * that do not have them (onnxruntime-node's, which the benchmark's baseline and the tests use as a
 * reference).
 *
 * ai.decide.RowQuantize (version 1): x float [..., K] -> q uint8 [..., K], scale float [..., 1]
 *   scale = max(max_i |x_i| * fp32(1/127), fp32(1e-30))   per row
 *   q_i   = round_half_even(x_i / scale) + 128             (1..255)
 * exactly the row quantization `--dtype int8` writes with standard ops (quantize.ts); the u8 x s8
 * path (int8-rewrite.ts) replaces those eight nodes by it.
 *
 * ai.decide.HeadNormRotary (version 1; CPU and CUDA, fp32 and fp16): (q, k, q_scale, k_scale,
 *   position_ids, cos_cache, sin_cache) -> (q_out, k_out), attributes epsilon and normalize (0 or 1,
 *   default 1): every head's row of q [B, S, heads * D] and k, RMSNorm'ed (with normalize 1) and
 *   multiplied by its scale [D], then rotary (rotate-half) at its token's position from the tables
 *   [P, D / 2]; D <= 512 (HEAD_NORM_ROTARY.maxHeadDim).
 * ai.decide.SiluMul (version 1; CPU and CUDA, fp32 and fp16): (gate, up) -> gate * sigmoid(gate) * up.
 * The fused graph writes these two with DecoderFeatures.ownKernels (fused-layers.ts); native/ops/fused_ops.h
 * has their kernels. They have no expansion here: that graph is derived again without them instead.
 */
import { readFileSync, writeFileSync } from 'node:fs';

import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

export const DECIDE_OP_DOMAIN = 'ai.decide';

export const ROW_QUANTIZE = {
  opType: 'RowQuantize',
  /** The fp32 constants of the standard form, as the builder stores them. */
  inverseRange: Math.fround(1 / 127),
  minScale: Math.fround(1e-30),
  zeroPoint: 128,
} as const;

export const HEAD_NORM_ROTARY = {
  opType: 'HeadNormRotary',
  /** The largest head_dim its CUDA kernel holds in registers (kMaxFusedHeadDim in native/ops/fused_ops.h). */
  maxHeadDim: 512,
} as const;

export const SILU_MUL = { opType: 'SiluMul' } as const;

function floatConstant(name: string, value: number): onnxProto.onnx.ITensorProto {
  return onnx.TensorProto.create({ name, dataType: onnx.TensorProto.DataType.FLOAT, dims: [], rawData: new Uint8Array(Float32Array.of(value).buffer) });
}

/**
 * Writes `graphFile` to `outFile` with every decide operator expanded into the standard ops that
 * compute the same values (ReduceMax takes its axes as an attribute before opset 18, as an input
 * from then on). Initializers are kept as they are: `outFile` must sit in the same folder when they
 * point at external data. Returns how many nodes were expanded; writes nothing where there are none.
 */
export function expandDecideOps(graphFile: string, outFile: string): number {
  const model = onnx.ModelProto.decode(readFileSync(graphFile));
  const graph = model.graph!;
  const opset = Number((model.opsetImport ?? []).find((o) => (o.domain ?? '') === '')?.version ?? 0);
  const p = 'decide_ops';
  let expanded = 0;
  graph.node = (graph.node ?? []).flatMap((n) => {
    if (n.domain !== DECIDE_OP_DOMAIN) return [n];
    if (n.opType !== ROW_QUANTIZE.opType) throw new Error(`expandDecideOps: unknown operator ${DECIDE_OP_DOMAIN}.${n.opType}`);
    const at = `${p}/${expanded++}`;
    const [x] = n.input as [string];
    const [q, scale] = n.output as [string, string];
    const node = (opType: string, input: string[], output: string, attribute: onnxProto.onnx.IAttributeProto[] = []) =>
      onnx.NodeProto.create({ name: `${output}/${opType}`, opType, input, output: [output], attribute });
    const axesAttribute = onnx.AttributeProto.create({ name: 'axes', type: onnx.AttributeProto.AttributeType.INTS, ints: [-1] });
    const keepdims = onnx.AttributeProto.create({ name: 'keepdims', type: onnx.AttributeProto.AttributeType.INT, i: 1 });
    return [
      node('Abs', [x], `${at}/abs`),
      opset >= 18 ? node('ReduceMax', [`${at}/abs`, `${p}/axes`], `${at}/abs_max`, [keepdims]) : node('ReduceMax', [`${at}/abs`], `${at}/abs_max`, [axesAttribute, keepdims]),
      node('Mul', [`${at}/abs_max`, `${p}/inverse_range`], `${at}/scaled`),
      node('Max', [`${at}/scaled`, `${p}/min_scale`], scale),
      node('Div', [x, scale], `${at}/divided`),
      node('Round', [`${at}/divided`], `${at}/rounded`),
      node('Add', [`${at}/rounded`, `${p}/zero_point`], `${at}/shifted`),
      node('Cast', [`${at}/shifted`], q, [onnx.AttributeProto.create({ name: 'to', type: onnx.AttributeProto.AttributeType.INT, i: onnx.TensorProto.DataType.UINT8 })]),
    ];
  });
  if (expanded === 0) return 0;
  graph.initializer = [
    ...(graph.initializer ?? []),
    floatConstant(`${p}/inverse_range`, ROW_QUANTIZE.inverseRange),
    floatConstant(`${p}/min_scale`, ROW_QUANTIZE.minScale),
    floatConstant(`${p}/zero_point`, ROW_QUANTIZE.zeroPoint),
    onnx.TensorProto.create({ name: `${p}/axes`, dataType: onnx.TensorProto.DataType.INT64, dims: [1], int64Data: [-1] }),
  ];
  model.opsetImport = (model.opsetImport ?? []).filter((o) => o.domain !== DECIDE_OP_DOMAIN);
  writeFileSync(outFile, onnx.ModelProto.encode(model).finish());
  return expanded;
}
