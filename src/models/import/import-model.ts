/**
 * `importModel`: a Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer files)
 * -> a model directory the engine and the registry load, holding the builder's decoder graph
 * (so the LM-head gather rewrite and every engine feature apply) with the checkpoint's weights.
 *
 * Order of work, so that a bad checkpoint never leaves anything behind:
 * 1. config.json -> import plan; safetensors headers -> every tensor present with the right shape.
 * 2. A hidden staging directory beside the output (`.<name>.tmp-…`, which the registry ignores):
 *    tokenizer files, then the chat template and label tokens are checked in it.
 * 3. Weights are streamed tensor by tensor into onnx/model.onnx (+ model.onnx_data when large).
 * 4. The staging directory is renamed into place. Any failure removes it.
 */
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { LabelSet } from '../../runtime/labels.js';
import { PromptRenderer } from '../../runtime/prompt.js';
import { TextTokenizer } from '../../runtime/tokenizer.js';
import { buildDecoderGraph, type DecoderFeatures } from '../builder/decoder-graph.js';
import { GRAPH_VERSION } from '../builder/make-model.js';
import { bytesPerElement, numel, writeModel, type FloatDtype, type WeightSpec } from '../builder/onnx-writer.js';
import { ImportError, planFromConfig, type ImportPlan } from './hf-config.js';
import { CheckpointError, SafetensorsCheckpoint, streamTensor, streamTransposed } from './safetensors.js';
import { mapWeights, type WeightSource } from './weight-map.js';
import { checkModelOutput, makeStagingDir, ModelOutputError, placeModelDir } from '../output-dir.js';

export { ImportError } from './hf-config.js';

export type ImportDtype = FloatDtype | 'bf16';

export interface ImportModelOptions {
  /** The Hugging Face checkpoint folder. */
  hfDir: string;
  /** The model directory to write; it must not exist yet (or be empty) unless `force`. */
  outDir: string;
  /** Weight and compute type of the graph; default 'fp32'. 'bf16' is refused (see BF16_UNSUPPORTED). */
  dtype?: ImportDtype;
  /** Replace an existing model directory at outDir (atomically). */
  force?: boolean;
  /**
   * Write the graph with multi-item packing (DecoderFeatures.segmentIds: the decide_segment_ids
   * input, docs/models.md); default PACKED_IMPORTS_BY_DEFAULT.
   */
  segmentIds?: boolean;
  /**
   * 'fused' writes each layer's attention as ONNX Runtime's MultiHeadAttention (DecoderFeatures.attention,
   * docs/models.md "Fused attention"); default 'ops', standard ONNX ops.
   */
  attention?: 'ops' | 'fused';
  /** Called with a line for each warning (default: none are printed). */
  onWarning?: (message: string) => void;
  /** Called after each weight tensor is written. */
  onProgress?: (writtenParams: number, totalParams: number) => void;
}

export interface ImportedModel {
  dir: string;
  plan: ImportPlan;
  dtype: FloatDtype;
  /** Parameters of the checkpoint (a tied LM head counted once, though the graph stores its transpose too). */
  parameters: number;
  /** False when the checkpoint had no tokenizer.json (the engine scores ids; the service refuses it). */
  hasTokenizer: boolean;
  warnings: string[];
}

export const BF16_UNSUPPORTED =
  'bf16 output is not supported: ONNX Runtime CPU has no bfloat16 MatMul/attention kernels, so a bf16 graph cannot run on the ' +
  'CPU provider. Use --dtype fp16 (same size on disk, bf16 weights convert to fp16 losslessly unless they exceed ±65504) or ' +
  '--dtype fp32 (the default, exact for bf16 checkpoints)';

/** Weight bytes above which the weights go to onnx/model.onnx_data (keeps the graph file small for the LM-head rewrite). */
const EXTERNAL_DATA_BYTES = 64 * 1024 * 1024;
/** Files copied from the checkpoint when present. */
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'generation_config.json'];
/** Registry ids (src/models/registry.ts): a directory with another name is not served. */
const VALID_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const IMPORTER_VERSION = 2;
/**
 * Whether an import writes the multi-item packing graph unless `segmentIds` says otherwise. On: the
 * graph serves both layouts, so the engine packs a state's questions where that is faster (CUDA)
 * and forks rows where that is (the CPU; docs/models.md). An engine from before packing cannot run
 * such a graph (it refuses the extra input by name).
 */
export const PACKED_IMPORTS_BY_DEFAULT = true;

/**
 * Imports a checkpoint.
 *
 * @example
 * const { dir, plan } = await importModel({ hfDir: 'Qwen3-0.6B', outDir: 'models/qwen3-0.6b-2026-11' });
 */
export async function importModel(opts: ImportModelOptions): Promise<ImportedModel> {
  const hfDir = path.resolve(opts.hfDir);
  const outDir = path.resolve(opts.outDir);
  const dtype = opts.dtype ?? 'fp32';
  if (dtype === 'bf16') throw new ImportError(BF16_UNSUPPORTED);
  if (dtype !== 'fp32' && dtype !== 'fp16') throw new ImportError(`dtype must be fp32, fp16 or bf16, got ${String(dtype)}`);
  const attention = opts.attention ?? 'ops';
  if (attention !== 'ops' && attention !== 'fused') throw new ImportError(`attention must be ops or fused, got ${String(attention)}`);
  const warnings: string[] = [];
  const warn = (m: string) => {
    warnings.push(m);
    opts.onWarning?.(m);
  };

  // 1. Everything that can be checked without writing.
  if (!existsSync(hfDir) || !(await stat(hfDir)).isDirectory()) throw new ImportError(`${hfDir}: not a directory`);
  const configPath = path.join(hfDir, 'config.json');
  if (!existsSync(configPath)) throw new ImportError(`${configPath}: missing (a Hugging Face checkpoint folder has config.json)`);
  let rawConfig: Record<string, unknown>;
  try {
    rawConfig = JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new ImportError(`${configPath}: not valid JSON (${(err as Error).message})`);
  }
  if (typeof rawConfig !== 'object' || rawConfig === null || Array.isArray(rawConfig)) throw new ImportError(`${configPath}: must hold a JSON object`);
  const plan = planFromConfig(rawConfig);
  let checkpoint: SafetensorsCheckpoint;
  try {
    checkpoint = SafetensorsCheckpoint.open(hfDir);
  } catch (err) {
    if (err instanceof CheckpointError) throw new ImportError(err.message);
    throw err;
  }
  // Features beyond the checkpoint's plan, recorded in decision.json as the builder records its own.
  // Without them the graph is the same as before packing existed.
  const extraFeatures: Partial<DecoderFeatures> = {
    ...((opts.segmentIds ?? PACKED_IMPORTS_BY_DEFAULT) ? { segmentIds: true } : {}),
    ...(attention === 'fused' ? { attention } : {}),
  };
  const { graph, weights } = buildDecoderGraph(plan.shape, dtype, { ...plan.features, ...extraFeatures });
  const sources = mapWeights(weights, checkpoint.tensors, plan.shape.tieWordEmbeddings === true);
  const dtypes = [...new Set([...checkpoint.tensors.values()].map((t) => t.dtype))].sort();
  if (dtype === 'fp16' && dtypes.some((d) => d === 'F32' || d === 'BF16' || d === 'F64')) {
    warn(`storing ${dtypes.join('/')} weights as fp16: values beyond ±65504 become infinite and small ones lose precision; use --dtype fp32 for an exact import`);
  }

  const name = path.basename(outDir);
  if (!VALID_ID.test(name)) {
    throw new ImportError(`the output directory name "${name}" is not a valid model id (letters, digits, '.', '_', '-'; starting with a letter or digit)`);
  }
  const target = await asImportError(() => checkModelOutput(outDir, { force: opts.force === true, inputs: [hfDir] }));

  // 2. Staging directory: hidden and marked .tmp-, so the registry never lists it.
  const staging = await asImportError(() => makeStagingDir(outDir));
  try {
    await mkdir(path.join(staging, 'onnx'));
    const hasTokenizer = await copyTokenizerFiles(hfDir, staging, warn);
    if (hasTokenizer) await checkPromptAndLabels(staging, plan);

    const config: Record<string, unknown> = { ...rawConfig };
    config.torch_dtype = dtype === 'fp16' ? 'float16' : 'float32';
    if ('dtype' in config) config.dtype = config.torch_dtype;
    await writeJson(path.join(staging, 'config.json'), config);
    await writeJson(path.join(staging, 'decision.json'), {
      calibration: { temperature: { noul: 1, choice: 1, score: 1 } },
      import: {
        importerVersion: IMPORTER_VERSION,
        family: plan.family,
        modelType: plan.modelType,
        architectures: rawConfig.architectures ?? null,
        sourceDtypes: dtypes,
        dtype,
        tiedEmbeddings: plan.shape.tieWordEmbeddings === true,
        rope: plan.rope,
        maxPositionEmbeddings: plan.shape.maxPositionEmbeddings,
        ...(plan.slidingWindow ? { slidingWindow: plan.slidingWindow } : {}),
        ...(Object.keys(extraFeatures).length > 0 ? { features: extraFeatures } : {}),
        // The builder's graph version, as make-model records it: a cache of imported models can tell
        // a graph written before a graph change (or before packing) from a current one.
        graphVersion: GRAPH_VERSION,
        tokenizer: hasTokenizer,
      },
    });

    // 3. Weights, one tensor at a time.
    const totalParams = weights.reduce((s, w) => s + numel(w.dims), 0);
    await writeModel({
      path: path.join(staging, 'onnx', 'model.onnx'),
      graph,
      weights: weightSpecs(sources, dtype, totalParams, opts.onProgress),
      externalData: totalParams * bytesPerElement(dtype) > EXTERNAL_DATA_BYTES,
      producerName: 'decision-engine import-model',
      sync: true,
    });

    // 4. Into place.
    await asImportError(() => placeModelDir(staging, target));
    const parameters = [...new Set(sources.map((src) => src.entry))].reduce((n, e) => n + numel(e.shape), 0);
    return { dir: outDir, plan, dtype, hasTokenizer, warnings, parameters };
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}

function weightSpecs(
  sources: WeightSource[],
  dtype: FloatDtype,
  totalParams: number,
  onProgress?: (written: number, total: number) => void,
): WeightSpec[] {
  let written = 0;
  return sources.map(({ decl, entry, transpose }) => ({
    name: decl.name,
    dims: decl.dims,
    dtype,
    *chunks(): Generator<Float32Array> {
      yield* transpose ? streamTransposed(entry) : streamTensor(entry);
      written += numel(decl.dims);
      onProgress?.(written, totalParams);
    },
  }));
}

/** Copies the tokenizer files; returns false (with a warning) when there is no tokenizer.json. */
async function copyTokenizerFiles(hfDir: string, staging: string, warn: (m: string) => void): Promise<boolean> {
  for (const f of TOKENIZER_FILES) {
    if (!existsSync(path.join(hfDir, f))) continue;
    await copyFile(path.join(hfDir, f), path.join(staging, f));
    await chmod(path.join(staging, f), 0o644); // a read-only source (e.g. a hub cache) must not make the model read-only
  }
  // transformers >= 4.43 may save the chat template as chat_template.jinja instead of inside
  // tokenizer_config.json; the prompt renderer reads it from tokenizer_config.json.
  const jinja = path.join(hfDir, 'chat_template.jinja');
  if (existsSync(jinja)) {
    const cfgPath = path.join(staging, 'tokenizer_config.json');
    const cfg = existsSync(cfgPath) ? (JSON.parse(await readFile(cfgPath, 'utf8')) as Record<string, unknown>) : {};
    if (cfg.chat_template === undefined) {
      cfg.chat_template = await readFile(jinja, 'utf8');
      await writeJson(cfgPath, cfg);
    }
  }
  const hasTokenizer = existsSync(path.join(staging, 'tokenizer.json'));
  if (!hasTokenizer) {
    const spm = existsSync(path.join(hfDir, 'tokenizer.model')) ? ' (only a SentencePiece tokenizer.model is there; the engine reads tokenizer.json)' : '';
    warn(
      `no tokenizer.json in ${hfDir}${spm}: the model is imported without a tokenizer. The engine can score token ids, ` +
        'but the service refuses to serve it until a tokenizer.json (and tokenizer_config.json with the chat template) is added to the model directory',
    );
  }
  return hasTokenizer;
}

/** The chat template must render the decision prompt and the labels must be single tokens; else a clear error. */
async function checkPromptAndLabels(dir: string, plan: ImportPlan): Promise<void> {
  let tokenizer: TextTokenizer;
  let renderer: PromptRenderer;
  try {
    tokenizer = await TextTokenizer.load(dir);
  } catch (err) {
    throw new ImportError(`tokenizer.json cannot be loaded: ${(err as Error).message}`);
  }
  if (tokenizer.vocabSize > plan.shape.vocabSize) {
    throw new ImportError(`the tokenizer has ${tokenizer.vocabSize} tokens but the model's vocab_size is ${plan.shape.vocabSize}: they do not belong together`);
  }
  try {
    renderer = await PromptRenderer.load(dir);
  } catch (err) {
    throw new ImportError(`the chat template cannot render the decision prompt: ${(err as Error).message}`);
  }
  try {
    await LabelSet.build(tokenizer, { context: renderer.labelContext });
  } catch (err) {
    throw new ImportError(`label tokens: ${(err as Error).message}`);
  }
}

/** The output rules' refusals (output-dir.ts) as this importer's errors. */
async function asImportError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ModelOutputError) throw new ImportError(err.message);
    throw err;
  }
}

async function writeJson(file: string, value: unknown): Promise<void> {
  await writeFile(file, `${JSON.stringify(value, null, 2)}\n`);
}
