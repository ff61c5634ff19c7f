/**
 * Which checkpoint tensor feeds each weight of the decoder graph, and how. The graph's weights carry
 * the Hugging Face names; its MatMul weights are [in, out], the transpose of torch's Linear
 * [out, in], so 2-D projection weights are transposed on the way. A tied LM head is the transpose
 * of the embedding. Every expected tensor is checked for presence and shape, and every checkpoint
 * tensor must be used, before anything is written.
 */
import type { WeightDecl } from '../builder/decoder-graph.js';
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
