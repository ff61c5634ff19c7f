// Text <-> token ids for one model, over Hugging Face's pure-JavaScript tokenizers
// (`@huggingface/tokenizers`, the tokenizer of Transformers.js) reading `<modelDir>/tokenizer.json`
// and `tokenizer_config.json`. It gives the same ids as the Rust `tokenizers` binding this used
// before, on the full Qwen3 tokenizer and its 16,384-id cut (docs/dependencies.md: 2,380 texts,
// every id and token compared), in 300 KB instead of 64 MB of per-platform binaries.
// Encoding adds no special tokens (no BOS/EOS): the chat template writes every control token
// itself, and those written as text (e.g. "<|im_start|>") map to their ids. Untrusted text is
// neutralized before it reaches here (see prompt.ts).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { MODEL_FILES } from '../engine/model-dir.js';
import { EngineError } from '../errors/engine-error.js';

/**
 * The tokenizer of one model directory.
 *
 * @example
 * const tok = await TextTokenizer.load('models/svc-alpha-2026-10');
 * // svc-alpha's vocabulary is Qwen3's cut to 16,384 ids: its <|im_start|> is 16359 (Qwen3's 151644)
 * const ids = await tok.encode('<|im_start|>user\nhello'); // Int32Array [16359, 872, 198, 14990]
 */
export class TextTokenizer {
  private constructor(
    private readonly hf: Tokenizer,
    /** Path of the tokenizer.json this was loaded from. */
    readonly path: string,
    /**
     * Embedding rows the tokenizer's ids need: its highest id + 1, added tokens included (may be
     * below the model's embedding rows). Not the number of entries: a vocabulary with gaps has ids
     * past its count, and one past the model's rows would fail every text that reaches it.
     */
    readonly vocabSize: number,
    /** The entry with the highest id, in the tokenizer's own spelling: what a refusal names. */
    readonly highestToken: { id: number; token: string },
  ) {}

  static async load(modelDir: string): Promise<TextTokenizer> {
    const path = join(modelDir, MODEL_FILES.tokenizer);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new EngineError('ERR_MODEL_LOAD', `tokenizer: cannot read ${path}: ${(err as Error).message}`, { cause: err });
      }
      // A model imported without tokenizer files (decide import-model warns) lands here.
      throw new EngineError(
        'ERR_MODEL_LOAD',
        `the model has no tokenizer: ${path} is missing. The service needs the model's Hugging Face tokenizer.json ` +
          '(and tokenizer_config.json with its chat template) in the model directory; the Engine alone can still score token ids',
      );
    }
    let hf: Tokenizer;
    try {
      // tokenizer_config.json holds the special-token settings; the chat template is read by prompt.ts.
      const config = await readFile(join(modelDir, MODEL_FILES.tokenizerConfig), 'utf8').then(
        (c) => JSON.parse(c) as object,
        (err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return {};
          throw err;
        },
      );
      hf = new Tokenizer(JSON.parse(text) as object, config);
    } catch (err) {
      throw new EngineError('ERR_MODEL_LOAD', `tokenizer: cannot load ${path}: ${(err as Error).message}`, { cause: err });
    }
    // Truncation and padding settings in a tokenizer.json are not applied by this tokenizer: ids
    // are exactly the text's.
    const highestToken = { id: -1, token: '' };
    for (const [token, id] of hf.get_vocab(true)) if (id > highestToken.id) Object.assign(highestToken, { id, token });
    return new TextTokenizer(hf, path, highestToken.id + 1, highestToken);
  }

  /** Token ids of `text`, with no special tokens added. */
  async encode(text: string): Promise<Int32Array> {
    return Int32Array.from(this.hf.encode(text, { add_special_tokens: false }).ids);
  }

  /** Text of `ids`, special tokens included, spaces as the tokens spell them. */
  async decode(ids: ArrayLike<number>): Promise<string> {
    if (ids.length === 0) return '';
    return this.hf.decode(Array.from(ids), { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  /** Id of a vocabulary entry given in the tokenizer's own spelling (e.g. "Ġyes"), or undefined. */
  tokenToId(token: string): number | undefined {
    return this.hf.token_to_id(token) ?? undefined;
  }

  /** Vocabulary entry of an id in the tokenizer's own spelling, or undefined. */
  idToToken(id: number): string | undefined {
    return this.hf.id_to_token(id) ?? undefined;
  }
}
