/**
 * Writes a Hugging Face-style model directory (config.json, tokenizer files, onnx/model.onnx[_data],
 * decision.json) holding a Qwen3-style decoder with deterministic random weights. The directory is
 * built beside `outDir` and renamed into place, so a crash never leaves a half-written model; an
 * existing directory is replaced only as output-dir.ts allows (with `force`, and only our own).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { MODEL_FILES } from '../../engine/model-dir.js';
import { checkModelOutput, makeStagingDir, placeModelDir } from '../output-dir.js';
import { buildDecoderGraph, type WeightDecl } from './decoder-graph.js';
import type { FloatDtype, Int8Kernel, Int8Scheme, ModelDtype } from './dtypes.js';
import { checkMakeModelOptions, type MakeModelOptions } from './make-model-options.js';
import { bytesPerElement, numel, writeModel, type WeightSpec } from './onnx-writer.js';
import { PRESETS, validateShape, type ModelShape } from './presets.js';
import { computeDtype, DEFAULT_INT8_SCHEME, quantizeWeightSpecs } from './quantize.js';
import { Rng } from './rng.js';
import { assembleWeight } from './weight-parts.js';
import { readSpecialTokenIds, writeTokenizerFiles } from './tokenizer-files.js';

export type { MakeModelOptions };

export interface MadeModel {
  dir: string;
  shape: ModelShape;
  /** Nodes per decoder layer in the written graph (also in decision.json, builder.nodesPerLayer). */
  nodesPerLayer: number;
}

/** Above this many weight bytes the weights go to external data (protobuf caps a file at 2 GB). */
export const EXTERNAL_DATA_THRESHOLD = 1.5e9;

/**
 * Bumped whenever the generated graph changes (2: the attention mask became an additive bias; 3:
 * --attention fused writes fused layers, fused-layers.ts; 4: their attention is ONNX's grouped
 * Attention, no head fold; 5: causal states run the split pass as two streams under one If), so that a cached generated model (the benchmark's) or a derived fused
 * graph is rebuilt instead of silently reused.
 */
export const GRAPH_VERSION = 5;

const CHUNK_ELEMENTS = 1 << 20;

/**
 * Builds a model directory with random weights. Options it does not know, or cannot build from, are
 * refused before anything is written (EngineError ERR_INPUT naming the option), and so is an outDir
 * it may not write (ModelOutputError, an EngineError ERR_INPUT; output-dir.ts).
 *
 * @example
 * const { dir, shape } = await makeModel({ preset: 'tiny', outDir: 'models/tiny', seed: 1 });
 */
export async function makeModel(opts: MakeModelOptions): Promise<MadeModel> {
  checkMakeModelOptions(opts);
  const shape: ModelShape = { ...PRESETS[opts.preset]!, ...definedOnly(opts.shapeOverrides ?? {}) };
  validateShape(shape);
  const seed = opts.seed ?? 0;
  const dtype: ModelDtype = opts.dtype ?? 'fp32';
  const floatDtype = computeDtype(dtype);
  const int8: Int8Scheme | undefined = dtype === 'int8' ? { ...DEFAULT_INT8_SCHEME, ...definedOnly(opts.int8 ?? {}) } : undefined;

  const target = await checkModelOutput(opts.outDir, { force: opts.force === true });
  const outDir = target.outDir;
  const tmpDir = await makeStagingDir(outDir);
  const result: MadeModel = { dir: outDir, shape, nodesPerLayer: 0 };
  const graphFile = path.join(tmpDir, MODEL_FILES.graph);
  try {
    await mkdir(path.dirname(graphFile));
    await writeTokenizerFiles(tmpDir, shape.vocabSize);
    const tokens = await readSpecialTokenIds(tmpDir);
    await writeJson(path.join(tmpDir, MODEL_FILES.config), hfConfig(shape, floatDtype, tokens.bosTokenId, tokens.eosTokenId));
    const { graph, weights, quantized, nodesPerLayer, opset } = buildDecoderGraph(shape, floatDtype, opts.features, int8);
    result.nodesPerLayer = nodesPerLayer;
    const builder: Record<string, unknown> = { preset: opts.preset, seed, dtype, graphVersion: GRAPH_VERSION };
    if (opts.shapeOverrides !== undefined && Object.keys(definedOnly(opts.shapeOverrides)).length > 0) {
      builder.shapeOverrides = definedOnly(opts.shapeOverrides);
    }
    if (opts.features !== undefined && Object.keys(opts.features).length > 0) builder.features = opts.features;
    if (int8 !== undefined) builder.int8 = int8Record(int8);
    builder.nodesPerLayer = nodesPerLayer;
    await writeJson(path.join(tmpDir, MODEL_FILES.decision), {
      builder,
      calibration: { temperature: { noul: 1, choice: 1, score: 1 } },
    });

    const totalParams = weights.reduce((s, w) => s + numel(w.dims), 0);
    const external =
      opts.externalData === true ||
      ((opts.externalData ?? 'auto') === 'auto' && totalParams * bytesPerElement(floatDtype) > EXTERNAL_DATA_THRESHOLD);
    const specs = weightSpecs(weights, seed, floatDtype, totalParams, opts.onProgress);
    await writeModel({
      path: graphFile,
      graph,
      weights: int8 === undefined ? specs : quantizeWeightSpecs(specs, quantized, int8.block),
      externalData: external,
      opsetVersion: opset,
      sync: true,
    });
    await opts.beforePlacing?.(tmpDir);
    await placeModelDir(tmpDir, target);
  } catch (err) {
    await rm(tmpDir, { recursive: true, force: true });
    throw err;
  }
  return result;
}

/** decision.json's record of an int8 model: what is quantized and how (the same for make-model and import-model). */
export function int8Record(scheme: Int8Scheme): Record<string, unknown> {
  const describe = (kernel: Int8Kernel) =>
    kernel === 'rowq-u8'
      ? 'MatMulInteger (u8 x u8): uint8 weights around 128 with one scale per output column; each token quantized to 8 bits with its own scale'
      : kernel === 'rowq-s8'
        ? 'MatMulInteger (u8 x s8): int8 weights with one scale per output column; each token quantized to 8 bits with its own scale'
        : kernel === 'dqmm'
          ? 'com.microsoft.DynamicQuantizeMatMul: int8 symmetric, one scale per output column'
          : `com.microsoft.MatMulNBits (bits 8): int8 symmetric, one scale per ${scheme.block} rows of a column`;
  return {
    projectionsAndMlp: describe(scheme.kernel),
    lmHead: scheme.lmHead === 'fp32' ? 'fp32 MatMul' : describe(scheme.lmHead),
    unquantized: 'embeddings, norms, biases (fp32)',
    scheme: { ...scheme },
  };
}

/** The Hugging Face config.json of a Qwen3ForCausalLM with this shape. */
export function hfConfig(shape: ModelShape, dtype: FloatDtype, bosTokenId: number, eosTokenId: number): Record<string, unknown> {
  return {
    architectures: ['Qwen3ForCausalLM'],
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: bosTokenId,
    eos_token_id: eosTokenId,
    head_dim: shape.headDim,
    hidden_act: 'silu',
    hidden_size: shape.hiddenSize,
    initializer_range: 0.02,
    intermediate_size: shape.intermediateSize,
    max_position_embeddings: shape.maxPositionEmbeddings,
    max_window_layers: shape.numLayers,
    model_type: 'qwen3',
    num_attention_heads: shape.numHeads,
    num_hidden_layers: shape.numLayers,
    num_key_value_heads: shape.numKvHeads,
    rms_norm_eps: shape.rmsNormEps,
    rope_scaling: null,
    rope_theta: shape.ropeTheta,
    sliding_window: null,
    tie_word_embeddings: shape.tieWordEmbeddings === true,
    torch_dtype: dtype === 'fp16' ? 'float16' : 'float32',
    use_cache: true,
    use_sliding_window: false,
    vocab_size: shape.vocabSize,
  };
}

/**
 * Lazy weight producers. Each normal weight has its own RNG stream keyed by its name. A weight that a
 * later `transposeOf` reads (the tied LM head) is generated whole and kept until then.
 */
function weightSpecs(
  decls: WeightDecl[],
  seed: number,
  dtype: FloatDtype,
  totalParams: number,
  onProgress?: (written: number, total: number) => void,
): WeightSpec[] {
  const retainedNames = new Set(decls.flatMap((d) => (d.init.kind === 'transposeOf' ? [d.init.source] : [])));
  const retained = new Map<string, { data: Float32Array; dims: number[] }>();
  let written = 0;
  const scratch = new Float32Array(CHUNK_ELEMENTS);
  return decls.map((d) => ({
    name: d.name,
    dims: d.dims,
    dtype,
    *chunks(): Generator<Float32Array> {
      const total = numel(d.dims);
      const init = d.init;
      if (d.assembly !== undefined) {
        // A fused graph's joined weight: each part drawn from its own stream, as the standard-op graph draws it.
        const parts = d.assembly.parts.map((part) => {
          const values = new Float32Array(numel(part.dims));
          fillInit(part.init, values, new Rng(seed, part.name));
          return values;
        });
        const data = assembleWeight(d.assembly, parts);
        for (let at = 0; at < total; at += CHUNK_ELEMENTS) yield data.subarray(at, Math.min(total, at + CHUNK_ELEMENTS));
      } else if (init.kind === 'transposeOf') {
        const src = retained.get(init.source);
        if (src === undefined || src.dims.length !== 2) throw new Error(`weight ${d.name}: ${init.source} not available`);
        yield* transposedChunks(src.data, src.dims[0]!, src.dims[1]!, scratch);
        retained.delete(init.source);
      } else if (retainedNames.has(d.name)) {
        const data = new Float32Array(total);
        fillInit(init, data, new Rng(seed, d.name));
        retained.set(d.name, { data, dims: d.dims });
        for (let at = 0; at < total; at += CHUNK_ELEMENTS) yield data.subarray(at, Math.min(total, at + CHUNK_ELEMENTS));
      } else {
        const rng = new Rng(seed, d.name);
        for (let at = 0; at < total; at += CHUNK_ELEMENTS) {
          const chunk = scratch.subarray(0, Math.min(CHUNK_ELEMENTS, total - at));
          fillInit(init, chunk, rng);
          yield chunk;
        }
      }
      written += total;
      onProgress?.(written, totalParams);
    },
  }));
}

function fillInit(init: Exclude<WeightDecl['init'], { kind: 'transposeOf' }>, out: Float32Array, rng: Rng): void {
  if (init.kind === 'ones') out.fill(1);
  else if (init.kind === 'zeros') out.fill(0);
  else rng.fillNormal(out, init.std);
}

/** Rows of the transpose of a [rows, cols] matrix, a few at a time. */
function* transposedChunks(src: Float32Array, rows: number, cols: number, scratch: Float32Array): Generator<Float32Array> {
  const perChunk = Math.max(1, Math.floor(scratch.length / rows));
  for (let c0 = 0; c0 < cols; c0 += perChunk) {
    const c1 = Math.min(cols, c0 + perChunk);
    const out = scratch.subarray(0, (c1 - c0) * rows);
    for (let c = c0; c < c1; c++) {
      const base = (c - c0) * rows;
      for (let r = 0; r < rows; r++) out[base + r] = src[r * cols + c]!;
    }
    yield out;
  }
}

async function writeJson(file: string, value: unknown): Promise<void> {
  await writeFile(file, `${JSON.stringify(value, null, 2)}\n`);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
