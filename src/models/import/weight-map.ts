/**
 * Which checkpoint tensor feeds each weight of the decoder graph, and how. The graph's weights carry
 * the Hugging Face names; its MatMul weights are [in, out], the transpose of torch's Linear
 * [out, in], so 2-D projection weights are transposed on the way. A tied LM head is the transpose
 * of the embedding. Every expected tensor is checked for presence and shape, and every checkpoint
 * tensor must be used, before anything is written.
 */
import type { WeightDecl } from '../builder/decoder-graph.js';
import type { ModelShape } from '../builder/presets.js';
import { ImportError } from './hf-config.js';
import type { TensorEntry } from './safetensors.js';

export interface WeightSource {
  decl: WeightDecl;
  entry: TensorEntry;
  transpose: boolean;
}

const EMBEDDING = 'model.embed_tokens.weight';
const LM_HEAD = 'lm_head.weight';
/** Checkpoint tensors that carry nothing the graph needs (old Llama exports saved the rotary table). */
const IGNORED = /(^|\.)rotary_emb\.inv_freq$/;

export function mapWeights(decls: readonly WeightDecl[], tensors: ReadonlyMap<string, TensorEntry>, tied: boolean): WeightSource[] {
  const problems: string[] = [];
  const used = new Set<string>();
  const out: WeightSource[] = [];
  for (const decl of decls) {
    let sourceName = decl.name;
    let transpose = decl.dims.length === 2 && decl.name !== EMBEDDING;
    if (decl.name === LM_HEAD && tied) sourceName = EMBEDDING;
    const entry = tensors.get(sourceName);
    if (entry === undefined) {
      problems.push(
        decl.name === LM_HEAD
          ? `missing tensor ${LM_HEAD} (tie_word_embeddings is false, so the checkpoint must hold its own LM head)`
          : `missing tensor ${sourceName}`,
      );
      continue;
    }
    used.add(sourceName);
    const want = transpose ? [decl.dims[1]!, decl.dims[0]!] : decl.dims;
    if (entry.shape.length !== want.length || entry.shape.some((d, i) => d !== want[i])) {
      problems.push(`tensor ${sourceName} has shape [${entry.shape.join(', ')}], the config implies [${want.join(', ')}]`);
      continue;
    }
    if (transpose && entry.shape.includes(1)) transpose = false; // a single row or column: same bytes either way
    out.push({ decl, entry, transpose });
  }
  if (tied) used.add(LM_HEAD); // a tied checkpoint may also save the shared matrix as lm_head.weight
  const unused = [...tensors.keys()].filter((n) => !used.has(n) && !IGNORED.test(n));
  if (unused.length > 0) {
    problems.push(
      `${unused.length} checkpoint tensor(s) the architecture has no place for (e.g. ${unused.slice(0, 5).join(', ')}); ` +
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
