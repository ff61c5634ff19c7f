/**
 * Reads a Hugging Face model directory (the layout in docs/models.md: config.json,
 * tokenizer.json, tokenizer_config.json, onnx/model.onnx [+ external data], decision.json).
 * Every failure is an ERR_MODEL_LOAD error that names the file and the reason.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

import { EngineError } from '../errors/engine-error.js';

/** The files of a model directory, by role (what make-model and import-model write). */
export const MODEL_FILES = {
  config: 'config.json',
  decision: 'decision.json',
  tokenizer: 'tokenizer.json',
  tokenizerConfig: 'tokenizer_config.json',
  /** Hugging Face side files: import-model copies them when the checkpoint has them; nothing here reads them. */
  specialTokensMap: 'special_tokens_map.json',
  generationConfig: 'generation_config.json',
  /** The decoder graph make-model and import-model write (the first of GRAPH_CANDIDATES); its external data, if any, is `onnx/model.onnx_data`. */
  graph: 'onnx/model.onnx',
} as const;

/**
 * The tokenizer files a model needs to serve: the runtime reads both (tokenizer.ts, prompt.ts) and
 * make-model writes both; a model imported without them is listed as broken until they are added.
 */
export const REQUIRED_TOKENIZER_FILES = [MODEL_FILES.tokenizer, MODEL_FILES.tokenizerConfig] as const;

/** The files besides config.json and the weights that import-model copies from a checkpoint, each when it is there. */
export const IMPORTED_SIDE_FILES = [...REQUIRED_TOKENIZER_FILES, MODEL_FILES.specialTokensMap, MODEL_FILES.generationConfig] as const;

export interface ModelConfig {
  numLayers: number;
  hiddenSize: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  maxPositionEmbeddings: number;
  architectures: string[];
  raw: Record<string, unknown>;
}

/** Graph file names an Optimum / transformers.js export may use, in order of preference. */
export const GRAPH_CANDIDATES = [
  MODEL_FILES.graph,
  'model.onnx',
  'onnx/decoder_model_merged.onnx',
  'decoder_model_merged.onnx',
  'onnx/decoder_with_past_model.onnx',
  'decoder_with_past_model.onnx',
];

function fail(file: string, reason: string): never {
  throw new EngineError('ERR_MODEL_LOAD', `${file}: ${reason}`);
}

function parseJsonObject(file: string, text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    fail(file, `not valid JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) fail(file, 'must hold a JSON object');
  return parsed as Record<string, unknown>;
}

function readJson(file: string): Record<string, unknown> {
  if (!existsSync(file)) fail(file, 'file is missing');
  return parseJsonObject(file, readFileSync(file, 'utf8'));
}

function positiveInt(file: string, raw: Record<string, unknown>, key: string, fallback?: number): number {
  const value = raw[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    fail(file, `"${key}" must be a positive integer (got ${JSON.stringify(raw[key])})`);
  }
  return value;
}

export function readModelConfig(modelDir: string): ModelConfig {
  const file = path.join(modelDir, MODEL_FILES.config);
  const raw = readJson(file);
  // Some configs (multimodal wrappers) nest the language model's numbers under text_config.
  const text = (typeof raw.text_config === 'object' && raw.text_config !== null ? raw.text_config : raw) as Record<
    string,
    unknown
  >;
  const hiddenSize = positiveInt(file, text, 'hidden_size');
  const numHeads = positiveInt(file, text, 'num_attention_heads');
  return {
    numLayers: positiveInt(file, text, 'num_hidden_layers'),
    hiddenSize,
    numHeads,
    numKvHeads: positiveInt(file, text, 'num_key_value_heads', numHeads),
    headDim: positiveInt(file, text, 'head_dim', Math.floor(hiddenSize / numHeads)),
    vocabSize: positiveInt(file, text, 'vocab_size'),
    maxPositionEmbeddings: positiveInt(file, text, 'max_position_embeddings'),
    architectures: Array.isArray(raw.architectures) ? (raw.architectures as string[]) : [],
    raw,
  };
}

/** The decoder graph the engine loads from a model directory: the first of GRAPH_CANDIDATES there, if any. */
export function graphFileIn(modelDir: string): string | undefined {
  for (const candidate of GRAPH_CANDIDATES) {
    const file = path.join(modelDir, candidate);
    if (existsSync(file)) return file;
  }
  return undefined;
}

/** The decoder graph of a model directory. */
export function findGraphFile(modelDir: string): string {
  if (!existsSync(modelDir)) fail(modelDir, 'model directory does not exist');
  const file = graphFileIn(modelDir);
  if (file !== undefined) return file;
  fail(path.join(modelDir, MODEL_FILES.graph), `no decoder graph found (looked for ${GRAPH_CANDIDATES.join(', ')})`);
}

/**
 * A record of how a model's files were written: make-model's `builder`, import-model's `import`
 * (src/models/builder/make-model.ts, src/models/import/import-model.ts). The names are the ones
 * those writers use; no value is checked here, so a reader checks a value before relying on it.
 */
export interface WriterRecord {
  dtype?: unknown;
  features?: { attention?: unknown; ownKernels?: unknown };
  int8?: { scheme?: { kernel?: unknown } };
  /** false: import-model wrote the directory without a tokenizer. */
  tokenizer?: unknown;
  [key: string]: unknown;
}

/**
 * decision.json: the model's own record (`model`), its calibration (read by loadCalibration in
 * src/runtime/calibrate.ts) and how its files were written; other tools may add keys.
 */
export interface DecisionFile {
  builder?: WriterRecord;
  import?: WriterRecord;
  calibration?: unknown;
  model?: unknown;
  [key: string]: unknown;
}

/**
 * A model directory's decision.json, or undefined when it has none (a model copied in without one
 * is uncalibrated). Throws ERR_MODEL_LOAD naming the file when it cannot be read, is not JSON or
 * does not hold a JSON object.
 */
export function readDecisionFile(modelDir: string): DecisionFile | undefined {
  const file = path.join(modelDir, MODEL_FILES.decision);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    fail(file, `cannot be read (${(err as Error).message})`);
  }
  return parseJsonObject(file, text) as DecisionFile;
}
