/**
 * Which checkpoint tensor feeds each weight of the decoder graph, and how. The graph's weights carry
 * the Hugging Face names; its MatMul weights are [in, out], the transpose of torch's Linear
 * [out, in], so 2-D projection weights are transposed on the way. A tied LM head is the transpose
 * of the embedding. Every expected tensor is checked for presence and shape, and every checkpoint
 * tensor must be used, before anything is written.
 */
import path from 'node:path';

import type { WeightDecl } from '../builder/decoder-graph.js';
import type { ModelShape } from '../builder/presets.js';
import { ImportError } from './hf-config.js';
import type { TensorEntry } from './safetensors.js';

export interface WeightSource {
  decl: WeightDecl;
  /** The tensor that holds the weight (the first part's, for an assembled weight). */
  entry: TensorEntry;
  transpose: boolean;
  /** An assembled weight (the fused graph's packed projections): each part's tensor, in decl.assembly.parts order. */
  parts?: { entry: TensorEntry; transpose: boolean }[];
}

const EMBEDDING = 'model.embed_tokens.weight';
const LM_HEAD = 'lm_head.weight';
/** Checkpoint tensors that carry nothing the graph needs (old Llama exports saved the rotary table). */
const IGNORED = /(^|\.)rotary_emb\.inv_freq$/;

export function mapWeights(decls: readonly WeightDecl[], tensors: ReadonlyMap<string, TensorEntry>, tied: boolean): WeightSource[] {
  const problems: string[] = [];
  const used = new Set<string>();
  const out: WeightSource[] = [];
  const resolve = (name: string, dims: number[]): { entry: TensorEntry; transpose: boolean } | undefined => {
    let sourceName = name;
    let transpose = dims.length === 2 && name !== EMBEDDING;
    if (name === LM_HEAD && tied) sourceName = EMBEDDING;
    const entry = tensors.get(sourceName);
    if (entry === undefined) {
      problems.push(
        name === LM_HEAD
          ? `missing tensor ${LM_HEAD} (tie_word_embeddings is false, so the checkpoint must hold its own LM head)`
          : `missing tensor ${sourceName}`,
      );
      return undefined;
    }
    used.add(sourceName);
    const want = transpose ? [dims[1]!, dims[0]!] : dims;
    if (entry.shape.length !== want.length || entry.shape.some((d, i) => d !== want[i])) {
      problems.push(`tensor ${sourceName} has shape [${entry.shape.join(', ')}], the config implies [${want.join(', ')}]`);
      return undefined;
    }
    if (transpose && entry.shape.includes(1)) transpose = false; // a single row or column: same bytes either way
    return { entry, transpose };
  };
  for (const decl of decls) {
    if (decl.assembly !== undefined) {
      // A repeated part (a q/k norm weight per head) is one tensor: resolved once.
      const seen = new Map<string, { entry: TensorEntry; transpose: boolean } | undefined>();
      const parts = decl.assembly.parts.map((part) => {
        if (!seen.has(part.name)) seen.set(part.name, resolve(part.name, part.dims));
        return seen.get(part.name);
      });
      if (parts.every((x) => x !== undefined)) out.push({ decl, entry: parts[0]!.entry, transpose: parts[0]!.transpose, parts: parts as { entry: TensorEntry; transpose: boolean }[] });
      continue;
    }
    const found = resolve(decl.name, decl.dims);
    if (found !== undefined) out.push({ decl, ...found });
  }
  if (tied) used.add(LM_HEAD); // a tied checkpoint may also save the shared matrix as lm_head.weight
  const unused = [...tensors.keys()].filter((n) => !used.has(n) && !IGNORED.test(n));
  if (unused.length > 0) {
    problems.push(
      `${unused.length} checkpoint tensor(s) the architecture has no place for (e.g. ${unused.slice(0, 5).join(', ')}; ` +
        `in ${[...new Set(unused.map((n) => path.basename(tensors.get(n)!.file)))].sort().join(', ')}); ` +
        'the config and the weights describe different models, or the model has layers this importer does not implement',
    );
  }
  if (problems.length > 0) {
    const shown = problems.slice(0, 12);
    throw new ImportError(`the checkpoint does not match its config:\n  - ${shown.join('\n  - ')}${problems.length > shown.length ? `\n  - … and ${problems.length - shown.length} more` : ''}`);
  }
  return out;
}

/**
 * The config's sizes against the checkpoint's tensors, before the graph is built: the embedding's
 * shape, the number of layers stored, and layer 0's projections. Building the graph costs time and
 * memory in proportion to what the config declares; after this check that is what the checkpoint
 * really holds, so a config that declares far more (a billion layers, head_dim 2**30) is refused
 * at once. The full tensor-by-tensor check (mapWeights) follows once the graph names every weight.
 */
export function checkSizesAgainstTensors(shape: ModelShape, tensors: ReadonlyMap<string, TensorEntry>): void {
  const problems: string[] = [];
  const expect = (name: string, want: number[]) => {
    const entry = tensors.get(name);
    if (entry === undefined) problems.push(`missing tensor ${name}`);
    else if (entry.shape.length !== want.length || entry.shape.some((d, i) => d !== want[i])) {
      problems.push(`tensor ${name} has shape [${entry.shape.join(', ')}], the config implies [${want.join(', ')}]`);
    }
  };
  expect(EMBEDDING, [shape.vocabSize, shape.hiddenSize]);
  let stored = 0;
  for (const name of tensors.keys()) {
    const layer = /^model\.layers\.(\d+)\./.exec(name);
    if (layer) stored = Math.max(stored, Number(layer[1]) + 1);
  }
  if (stored !== shape.numLayers) problems.push(`the config says num_hidden_layers ${shape.numLayers}, the checkpoint stores ${stored} layers`);
  else {
    expect('model.layers.0.self_attn.q_proj.weight', [shape.numHeads * shape.headDim, shape.hiddenSize]);
    expect('model.layers.0.self_attn.k_proj.weight', [shape.numKvHeads * shape.headDim, shape.hiddenSize]);
    expect('model.layers.0.mlp.gate_proj.weight', [shape.intermediateSize, shape.hiddenSize]);
  }
  if (problems.length > 0) throw new ImportError(`the checkpoint does not match its config:\n  - ${problems.join('\n  - ')}`);
}
