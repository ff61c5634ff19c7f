/**
 * Architecture numbers of the decoder-only (Llama / Qwen3 style) models the builder can generate.
 * Field names follow the ONNX graph's needs; make-model.ts maps them to Hugging Face config.json keys.
 */
import { EngineError } from '../../errors/engine-error.js';

export interface ModelShape {
  numLayers: number;
  hiddenSize: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  intermediateSize: number;
  /** Rows of the embedding table and columns of the LM head (Qwen3 pads its 151,669 tokens to 151,936). */
  vocabSize: number;
  maxPositionEmbeddings: number;
  ropeTheta: number;
  rmsNormEps: number;
  /**
   * True when the LM head shares the embedding matrix (as the real Qwen3-0.6B does). The ONNX file still
   * stores the head as its own [hidden, vocab] initializer, holding the transposed embedding, as a torch
   * export of a tied model does.
   */
  tieWordEmbeddings?: boolean;
}

const QWEN3_VOCAB = 151936;

export const PRESETS: Readonly<Record<string, Readonly<ModelShape>>> = {
  /**
   * For tests: builds and loads in a fraction of a second. Its 16,384-token vocabulary is Qwen3's
   * tokenizer cut to its first merges (see tokenizer-files.ts): loading the full 11 MB tokenizer
   * would cost every test process about a second, and the full embedding and head 80 MB.
   */
  tiny: {
    numLayers: 2,
    hiddenSize: 64,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    intermediateSize: 192,
    vocabSize: 16_384,
    maxPositionEmbeddings: 4096,
    ropeTheta: 1e6,
    rmsNormEps: 1e-6,
  },
  /** The benchmark default: ~38M body parameters plus a 78M embedding and a 78M untied head. */
  small: {
    numLayers: 12,
    hiddenSize: 512,
    numHeads: 8,
    numKvHeads: 4,
    headDim: 64,
    intermediateSize: 1536,
    vocabSize: QWEN3_VOCAB,
    maxPositionEmbeddings: 8192,
    ropeTheta: 1e6,
    rmsNormEps: 1e-6,
  },
  /** The shape of Qwen/Qwen3-0.6B (0.44B non-embedding parameters, tied embeddings). */
  'qwen3-0.6b': {
    numLayers: 28,
    hiddenSize: 1024,
    numHeads: 16,
    numKvHeads: 8,
    headDim: 128,
    intermediateSize: 3072,
    vocabSize: QWEN3_VOCAB,
    maxPositionEmbeddings: 40960,
    ropeTheta: 1e6,
    rmsNormEps: 1e-6,
    tieWordEmbeddings: true,
  },
};

export interface ParamCount {
  /** Transformer layers plus the final norm. */
  body: number;
  embedding: number;
  /** Zero when tied to the embedding (the parameters are counted once, under `embedding`). */
  lmHead: number;
  total: number;
}

/**
 * Unique parameter counts of a shape.
 *
 * @example
 * paramCount(PRESETS['qwen3-0.6b']!).body; // 440_467_456
 */
export function paramCount(shape: ModelShape): ParamCount {
  const h = shape.hiddenSize;
  const qDim = shape.numHeads * shape.headDim;
  const kvDim = shape.numKvHeads * shape.headDim;
  const attention = h * qDim + 2 * h * kvDim + qDim * h + 2 * shape.headDim;
  const mlp = 3 * h * shape.intermediateSize;
  const norms = 2 * h;
  const body = shape.numLayers * (attention + mlp + norms) + h;
  const embedding = shape.vocabSize * h;
  const lmHead = shape.tieWordEmbeddings ? 0 : shape.vocabSize * h;
  return { body, embedding, lmHead, total: body + embedding + lmHead };
}

/** Throws a clear error (EngineError ERR_INPUT) for shapes the graph cannot express. */
export function validateShape(shape: ModelShape): void {
  const ints: (keyof ModelShape)[] = [
    'numLayers', 'hiddenSize', 'numHeads', 'numKvHeads', 'headDim', 'intermediateSize', 'vocabSize',
    'maxPositionEmbeddings',
  ];
  for (const key of ints) {
    const v = shape[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
      throw new EngineError('ERR_INPUT', `model shape: ${key} must be a positive integer, got ${String(v)}`);
    }
  }
  if (shape.headDim % 2 !== 0) throw new EngineError('ERR_INPUT', `model shape: headDim must be even, got ${shape.headDim}`);
  if (shape.numHeads % shape.numKvHeads !== 0) {
    throw new EngineError('ERR_INPUT', `model shape: numHeads (${shape.numHeads}) must be a multiple of numKvHeads (${shape.numKvHeads})`);
  }
  if (!(shape.ropeTheta > 0) || !(shape.rmsNormEps > 0)) {
    throw new EngineError('ERR_INPUT', 'model shape: ropeTheta and rmsNormEps must be positive');
  }
}
