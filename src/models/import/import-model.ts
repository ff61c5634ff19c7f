/**
 * `importModel`: a Hugging Face checkpoint folder (config.json, *.safetensors, tokenizer files)
 * -> a model directory the engine and the registry load, holding the builder's decoder graph
 * (so the LM-head gather rewrite and every engine feature apply) with the checkpoint's weights.
 *
 * Order of work, so that a bad checkpoint never leaves anything behind:
 * 0. The caller's options (import-model-options.ts): a wrong name or value is ERR_INPUT before
 *    anything is read. Every later failure is an ImportError (ERR_MODEL_IMPORT).
 * 1. config.json -> import plan; safetensors headers -> every tensor present with the right shape.
 * 2. A hidden staging directory beside the output (`.<name>.tmp-…`, which the registry ignores):
 *    tokenizer files, then the chat template and label tokens are checked in it.
 * 3. Weights are streamed tensor by tensor into onnx/model.onnx (+ model.onnx_data when large).
 * 4. The caller's check of the whole model (`beforePlacing`), then the staging directory is renamed
 *    into place. Any failure removes it.
 */
import { existsSync, statSync } from 'node:fs';
import { lstat, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';

import { IMPORTED_SIDE_FILES, MODEL_FILES, REQUIRED_TOKENIZER_FILES } from '../../engine/model-dir.js';
import { LabelSet } from '../../runtime/labels.js';
import { PromptRenderer } from '../../runtime/prompt.js';
import { TextTokenizer } from '../../runtime/tokenizer.js';
import { buildDecoderGraph, type DecoderFeatures } from '../builder/decoder-graph.js';
import { GRAPH_VERSION, int8Record } from '../builder/make-model.js';
import { bytesPerElement, numel, writeModel, type FloatDtype, type WeightSpec } from '../builder/onnx-writer.js';
import { checkImportModelOptions, type ImportDtype, type ImportModelOptions } from './import-model-options.js';
import { checkpointFile, copySideFile, MAX_SIDE_FILE_BYTES, narrowModes, sourceModeBits } from './checkpoint-files.js';
import { ImportError, planFromConfig, type ImportPlan } from './hf-config.js';
import { CheckpointError, SafetensorsCheckpoint, streamTensor, streamTransposed, type TensorEntry } from './safetensors.js';
import { assembleWeight } from '../builder/weight-parts.js';
import { checkSizesAgainstTensors, mapWeights, type WeightSource } from './weight-map.js';
import type { ModelDtype } from '../builder/dtypes.js';
import { computeDtype, DEFAULT_INT8_SCHEME, quantizeWeightSpecs } from '../builder/quantize.js';
import { checkModelOutput, makeStagingDir, ModelOutputError, placeModelDir } from '../output-dir.js';
import { errnoText } from '../errno-text.js';
import { newModelIdProblem } from '../registry.js';

export { ImportError } from './hf-config.js';
export type { ImportDtype, ImportModelOptions };

export interface ImportedModel {
  dir: string;
  plan: ImportPlan;
  dtype: ModelDtype;
  /** Parameters of the checkpoint (a tied LM head counted once, though the graph stores its transpose too). */
  parameters: number;
  /** Nodes per decoder layer in the written graph (also in decision.json, import.nodesPerLayer). */
  nodesPerLayer: number;
  /** False when the checkpoint lacked tokenizer.json or tokenizer_config.json (the engine scores ids; the service reports the model broken). */
  hasTokenizer: boolean;
  warnings: string[];
}

/** Weight bytes above which the weights go to onnx/model.onnx_data (keeps the graph file small for the LM-head rewrite). */
const EXTERNAL_DATA_BYTES = 64 * 1024 * 1024;
/** Files copied from the checkpoint when present. */
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
  checkImportModelOptions(opts);
  const stage: { file: string } = { file: MODEL_FILES.config };
  try {
    return await importSteps(opts, stage);
  } catch (err) {
    throw namedImportError(err, stage.file, path.resolve(opts.hfDir));
  }
}

/**
 * Every failure as an ImportError that names the file: the importer's own errors as they are, a
 * file system error by the path it names, anything else by the file being worked on then (so a
 * message never reads as a bare "Cannot convert undefined or null to object").
 */
function namedImportError(err: unknown, file: string, hfDir: string): ImportError {
  if (err instanceof ImportError) return err;
  if (err instanceof ModelOutputError) return new ImportError(err.message, { cause: err });
  if (err instanceof CheckpointError) return new ImportError(err.message);
  const e = err as NodeJS.ErrnoException;
  if (typeof e?.code === 'string' && typeof e.path === 'string') {
    const where = e.path.startsWith(hfDir + path.sep) ? path.relative(hfDir, e.path) : e.path;
    return new ImportError(`${where}: ${errnoText(e)}`);
  }
  return new ImportError(`${file}: ${(err as Error)?.message ?? String(err)}`);
}

async function importSteps(opts: ImportModelOptions, stage: { file: string }): Promise<ImportedModel> {
  const hfDir = path.resolve(opts.hfDir);
  const outDir = path.resolve(opts.outDir);
  // checkImportModelOptions refused bf16 and every other value.
  const dtype = (opts.dtype ?? 'fp32') as ModelDtype;
  const floatDtype = computeDtype(dtype);
  const int8 = dtype === 'int8' ? DEFAULT_INT8_SCHEME : undefined;
  const attention = opts.attention ?? 'ops';
  const warnings: string[] = [];
  const warn = (m: string) => {
    warnings.push(m);
    opts.onWarning?.(m);
  };

  // 1. Everything that can be checked without writing.
  const folder = await stat(hfDir).catch((err: NodeJS.ErrnoException) => err);
  if (folder instanceof Error) throw new ImportError(`${hfDir}: ${await whyNoFolder(hfDir, folder)}`);
  if (!folder.isDirectory()) throw new ImportError(`${hfDir}: not a directory`);
  const configFile = checkpointFile(hfDir, MODEL_FILES.config, { copied: true });
  if (configFile === undefined) throw new ImportError('config.json: missing (a Hugging Face checkpoint folder has config.json)');
  if (statSync(configFile).size > MAX_SIDE_FILE_BYTES) throw new ImportError(`config.json: larger than ${MAX_SIDE_FILE_BYTES} bytes`);
  let rawConfig: Record<string, unknown>;
  try {
    rawConfig = JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
  } catch (err) {
    throw new ImportError(`config.json: not valid JSON (${(err as Error).message})`);
  }
  if (typeof rawConfig !== 'object' || rawConfig === null || Array.isArray(rawConfig)) throw new ImportError('config.json: must hold a JSON object');
  const plan = planFromConfig(rawConfig);
  stage.file = 'the safetensors weights';
  const checkpoint = SafetensorsCheckpoint.open(hfDir);
  if (checkpoint.ignored !== undefined) warn(checkpoint.ignored);
  checkSizesAgainstTensors(plan.shape, checkpoint.tensors);
  // Where the model goes, before the graph is built (that costs seconds for a large model).
  const idProblem = newModelIdProblem(path.dirname(outDir), path.basename(outDir));
  if (idProblem) throw new ImportError(`the output directory's name is its model id: ${idProblem}`);
  stage.file = outDir;
  const target = await checkModelOutput(outDir, { force: opts.force === true, inputs: [hfDir] });
  stage.file = MODEL_FILES.config; // the graph is built from it

  // Features beyond the checkpoint's plan, recorded in decision.json as the builder records its own.
  // Without them the graph is the same as before packing existed.
  const extraFeatures: Partial<DecoderFeatures> = {
    ...((opts.segmentIds ?? PACKED_IMPORTS_BY_DEFAULT) ? { segmentIds: true } : {}),
    ...(attention === 'fused' ? { attention } : {}),
    ...(opts.causalStates === true ? { causalStates: true } : {}),
    ...(opts.ownKernels === true ? { ownKernels: true } : {}),
  };
  const { graph, weights, quantized, nodesPerLayer, opset } = buildDecoderGraph(plan.shape, floatDtype, { ...plan.features, ...extraFeatures }, int8);
  const sources = mapWeights(weights, checkpoint.tensors, plan.shape.tieWordEmbeddings === true);
  const dtypes = [...new Set([...checkpoint.tensors.values()].map((t) => t.dtype))].sort();
  if (dtype === 'fp16' && dtypes.some((d) => d === 'F32' || d === 'BF16' || d === 'F64')) {
    warn(`storing ${dtypes.join('/')} weights as fp16: values beyond ±65504 become infinite and small ones lose precision; import with dtype fp32 (--dtype fp32 on the command line) for an exact copy`);
  }

  // 2. Staging directory: hidden and marked .tmp-, so the registry never lists it.
  const staging = await makeStagingDir(outDir);
  const graphFile = path.join(staging, MODEL_FILES.graph);
  try {
    await mkdir(path.dirname(graphFile));
    stage.file = 'tokenizer files';
    const { hasTokenizer, templateFile } = await copyTokenizerFiles(hfDir, staging, warn);
    // With tokenizer.json alone the labels can still be checked (against the fallback template).
    let chatTemplate: 'model' | 'chatml-fallback' | undefined;
    if (existsSync(path.join(staging, MODEL_FILES.tokenizer))) {
      const { usesFallbackTemplate } = await checkPromptAndLabels(staging, plan, templateFile);
      chatTemplate = usesFallbackTemplate ? 'chatml-fallback' : 'model';
      // Without tokenizer_config.json the model is already reported as having no tokenizer.
      if (usesFallbackTemplate && hasTokenizer) {
        warn(
          `${templateFile}: ${await chatTemplateProblem(staging)}: the service renders decision prompts with its built-in ChatML ` +
            "template (<|im_start|>...), not this model's own format, and its tokenizer may not know that markup as special tokens; " +
            "add the model's chat_template to tokenizer_config.json (or chat_template.jinja) for its own format",
        );
      }
    }

    const config: Record<string, unknown> = { ...rawConfig };
    config.torch_dtype = dtype === 'fp16' ? 'float16' : 'float32';
    if ('dtype' in config) config.dtype = config.torch_dtype;
    await writeJson(path.join(staging, MODEL_FILES.config), config);
    await writeJson(path.join(staging, MODEL_FILES.decision), {
      calibration: { temperature: { noul: 1, choice: 1, score: 1 } },
      import: {
        importerVersion: IMPORTER_VERSION,
        family: plan.family,
        modelType: plan.modelType,
        architectures: rawConfig.architectures ?? null,
        sourceDtypes: dtypes,
        dtype,
        ...(int8 === undefined ? {} : { int8: int8Record(int8) }),
        tiedEmbeddings: plan.shape.tieWordEmbeddings === true,
        rope: plan.rope,
        maxPositionEmbeddings: plan.shape.maxPositionEmbeddings,
        ...(plan.slidingWindow ? { slidingWindow: plan.slidingWindow } : {}),
        ...(Object.keys(extraFeatures).length > 0 ? { features: extraFeatures } : {}),
        // The builder's graph version, as make-model records it: a cache of imported models can tell
        // a graph written before a graph change (or before packing) from a current one.
        graphVersion: GRAPH_VERSION,
        nodesPerLayer,
        tokenizer: hasTokenizer,
        // The template decision prompts are rendered with: the checkpoint's, or the built-in ChatML.
        ...(chatTemplate === undefined ? {} : { chatTemplate }),
      },
    });

    // 3. Weights, one tensor at a time.
    const totalParams = weights.reduce((s, w) => s + numel(w.dims), 0);
    stage.file = MODEL_FILES.graph;
    await writeModel({
      path: graphFile,
      graph,
      weights: quantizeWeightSpecs(weightSpecs(sources, floatDtype, totalParams, opts.onProgress), quantized, int8?.block ?? 0),
      externalData: totalParams * bytesPerElement(floatDtype) > EXTERNAL_DATA_BYTES,
      producerName: 'decision-engine import-model',
      opsetVersion: opset,
      sync: true,
    });

    // The model is no more open than the checkpoint: every file takes at most the group/other bits
    // its config.json and weight files allow (a private or gated checkpoint stays private).
    await narrowModes(staging, sourceModeBits(hfDir, [MODEL_FILES.config, ...checkpoint.files]));

    // 4. Checked as a whole, then into place.
    try {
      await opts.beforePlacing?.(staging);
    } catch (err) {
      throw err instanceof ImportError ? err : new ImportError((err as Error)?.message ?? String(err));
    }
    stage.file = outDir;
    await placeModelDir(staging, target);
    const parameters = [...new Set(sources.flatMap((src) => (src.parts ?? [src]).map((part) => part.entry)))].reduce((n, e) => n + numel(e.shape), 0);
    return { dir: outDir, plan, dtype, hasTokenizer, warnings, parameters, nodesPerLayer };
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Why the checkpoint folder cannot be opened, as a person needs to hear it: one that is there but
 * out of this user's reach, or a link loop, is not "missing".
 */
async function whyNoFolder(hfDir: string, err: NodeJS.ErrnoException): Promise<string> {
  if (err.code === 'ENOENT') {
    const link = await lstat(hfDir).catch(() => undefined);
    return link?.isSymbolicLink() ? 'a symbolic link to something that does not exist' : 'does not exist';
  }
  if (err.code === 'EACCES') return `permission denied: this user may not look into it or a folder above it (${err.code}, ${err.syscall})`;
  return errnoText(err);
}

/** The largest finite fp16 value. */
const FP16_MAX = 65504;

function weightSpecs(
  sources: WeightSource[],
  dtype: FloatDtype,
  totalParams: number,
  onProgress?: (written: number, total: number) => void,
): WeightSpec[] {
  let written = 0;
  // Past fp16's largest finite value a weight written as fp16 becomes infinite.
  const largest = dtype === 'fp16' ? FP16_MAX : Infinity;
  /**
   * A tensor's values, checked: a NaN or infinite weight (a corrupt checkpoint, or a value fp16
   * cannot hold) turns every score it touches into NaN, and every request into a 500.
   */
  function* checkedChunks(entry: TensorEntry, transpose: boolean): Generator<Float32Array> {
    for (const chunk of transpose ? streamTransposed(entry) : streamTensor(entry)) {
      for (let i = 0; i < chunk.length; i++) {
        const v = chunk[i]!;
        if (v - v !== 0) throw new ImportError(`${path.basename(entry.file)}: tensor ${entry.name} holds ${v !== v ? 'NaN' : 'infinite'} values (a corrupt checkpoint)`);
        if (v > largest || v < -largest) {
          throw new ImportError(`${path.basename(entry.file)}: tensor ${entry.name} holds ${v}, beyond fp16's largest value ${FP16_MAX}: import it with --dtype fp32`);
        }
      }
      yield chunk;
    }
  }
  return sources.map(({ decl, entry, transpose, parts }) => ({
    name: decl.name,
    dims: decl.dims,
    dtype,
    *chunks(): Generator<Float32Array> {
      if (decl.assembly !== undefined && parts !== undefined) {
        // The fused graph's packed weight: its parts read whole (one layer's projections), then joined.
        const values = parts.map((part) => {
          const all = new Float32Array(numel(part.entry.shape));
          let at = 0;
          for (const chunk of checkedChunks(part.entry, part.transpose)) {
            all.set(chunk, at);
            at += chunk.length;
          }
          return all;
        });
        yield assembleWeight(decl.assembly, values);
      } else {
        yield* checkedChunks(entry, transpose);
      }
      written += numel(decl.dims);
      onProgress?.(written, totalParams);
    },
  }));
}

/**
 * Copies the tokenizer and side files (checkpoint-files.ts: no link out of the folder, JSON parsed,
 * modes never widened). A missing tokenizer.json or tokenizer_config.json is a warning: the model
 * is imported without a tokenizer, which the registry reports as broken until both are added.
 * Returns whether both are there, and which checkpoint file the chat template comes from.
 */
async function copyTokenizerFiles(hfDir: string, staging: string, warn: (m: string) => void): Promise<{ hasTokenizer: boolean; templateFile: string }> {
  const present = new Set<string>();
  for (const f of IMPORTED_SIDE_FILES) if (await copySideFile(hfDir, f, staging)) present.add(f);
  const folded = await foldJinjaTemplate(hfDir, staging, present.has(MODEL_FILES.tokenizerConfig), warn);
  if (folded) present.add(MODEL_FILES.tokenizerConfig);
  const missing = REQUIRED_TOKENIZER_FILES.filter((f) => !present.has(f));
  if (missing.length > 0) {
    const spm = existsSync(path.join(hfDir, 'tokenizer.model')) ? ' (only a SentencePiece tokenizer.model is there; the engine reads tokenizer.json)' : '';
    warn(
      `no ${missing.join(' and no ')} in ${hfDir}${missing.includes(MODEL_FILES.tokenizer) ? spm : ''}: the model is imported without a tokenizer. The engine can score token ids, ` +
        'but the service reports it broken and refuses to serve it until tokenizer.json and tokenizer_config.json (with the chat template) are added to the model directory',
    );
  }
  return { hasTokenizer: missing.length === 0, templateFile: folded ? JINJA_TEMPLATE_FILE : MODEL_FILES.tokenizerConfig };
}

/** The checkpoint's template file, which transformers (>= 4.43) may write instead of tokenizer_config.json's chat_template. */
export const JINJA_TEMPLATE_FILE = 'chat_template.jinja';

/**
 * Folds the checkpoint's chat_template.jinja into the staged tokenizer_config.json, where the prompt
 * renderer reads the template; returns whether it did. The file wins over a chat_template in the
 * config, as in transformers (its tokenizer loading reads the file over the config's key, and its
 * save_pretrained writes the template only to the file), so a folder holding both renders prompts
 * in the format the model's own tooling uses; a warning says so when the two differ.
 */
async function foldJinjaTemplate(hfDir: string, staging: string, hasConfig: boolean, warn: (m: string) => void): Promise<boolean> {
  const jinja = checkpointFile(hfDir, JINJA_TEMPLATE_FILE, { copied: true });
  if (jinja === undefined) return false;
  if (statSync(jinja).size > MAX_SIDE_FILE_BYTES) throw new ImportError(`${JINJA_TEMPLATE_FILE}: larger than ${MAX_SIDE_FILE_BYTES} bytes`);
  const template = await readFile(jinja, 'utf8');
  const cfgPath = path.join(staging, MODEL_FILES.tokenizerConfig);
  const cfg = hasConfig ? (JSON.parse(await readFile(cfgPath, 'utf8')) as Record<string, unknown>) : {};
  if (cfg.chat_template !== undefined && cfg.chat_template !== template) {
    warn(
      `${JINJA_TEMPLATE_FILE} and tokenizer_config.json's chat_template differ: decision prompts are rendered with ${JINJA_TEMPLATE_FILE}, ` +
        "as transformers does (it reads the file over the config's key); the model's tokenizer_config.json gets the file's template",
    );
  }
  cfg.chat_template = template;
  await writeJson(cfgPath, cfg);
  return true;
}

/** The chat template must render the decision prompt and the labels must be single tokens; else a clear error. */
async function checkPromptAndLabels(dir: string, plan: ImportPlan, templateFile: string): Promise<{ usesFallbackTemplate: boolean }> {
  let tokenizer: TextTokenizer;
  let renderer: PromptRenderer;
  try {
    tokenizer = await TextTokenizer.load(dir);
  } catch (err) {
    // The loader names the file it read: the copy in the hidden staging folder, which is gone
    // after the failure; the message names the checkpoint's file instead.
    const reason = (err as Error).message.split(path.join(dir, MODEL_FILES.tokenizer)).join(MODEL_FILES.tokenizer);
    throw new ImportError(`${MODEL_FILES.tokenizer} cannot be loaded: ${reason}`);
  }
  // The highest id, not the number of tokens: a vocabulary with gaps can hold no more tokens than
  // vocab_size and still produce ids past the embedding table.
  if (tokenizer.vocabSize > plan.shape.vocabSize) {
    const { id, token } = tokenizer.highestToken;
    throw new ImportError(
      `tokenizer.json: token ${JSON.stringify(token)} has id ${id}, but the model's vocab_size is ${plan.shape.vocabSize} (ids 0-${plan.shape.vocabSize - 1}): they do not belong together`,
    );
  }
  try {
    renderer = await PromptRenderer.load(dir);
  } catch (err) {
    const from = templateFile === JINJA_TEMPLATE_FILE ? ` in ${JINJA_TEMPLATE_FILE}` : '';
    throw new ImportError(`the chat template${from} cannot render the decision prompt: ${(err as Error).message}`);
  }
  try {
    await LabelSet.build(tokenizer, { context: renderer.labelContext });
  } catch (err) {
    throw new ImportError(`label tokens: ${(err as Error).message}`);
  }
  return { usesFallbackTemplate: renderer.usesFallbackTemplate };
}

/** Why the copied tokenizer_config.json gives no chat template the renderer can use. */
async function chatTemplateProblem(dir: string): Promise<string> {
  const config = JSON.parse(await readFile(path.join(dir, MODEL_FILES.tokenizerConfig), 'utf8')) as Record<string, unknown>;
  const template = config.chat_template;
  if (template === undefined) return 'no chat_template';
  if (template === '') return 'chat_template is empty';
  if (Array.isArray(template)) return 'chat_template lists no usable template (neither "default" nor the first entry holds a string)';
  return `chat_template is ${template === null ? 'null' : `a ${typeof template}`}, not a template`;
}

async function writeJson(file: string, value: unknown): Promise<void> {
  await writeFile(file, `${JSON.stringify(value, null, 2)}\n`);
}
