// Text <-> token ids for one model, over the Hugging Face `tokenizers` native binding reading
// `<modelDir>/tokenizer.json`. Encoding adds no special tokens (no BOS/EOS): the chat template
// writes every control token itself, and those written as text (e.g. "<|im_start|>") map to
// their ids. Untrusted text is neutralized before it reaches here (see prompt.ts).
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import tokenizers from 'tokenizers';
import { EngineError } from '../errors/engine-error.js';

type HfTokenizer = InstanceType<typeof tokenizers.Tokenizer>;

/**
 * The tokenizer of one model directory.
 *
 * @example
 * const tok = await TextTokenizer.load('/models/svc-alpha-2026-10');
 * const ids = await tok.encode('<|im_start|>user\nhello'); // Int32Array [151644, 872, 198, 14990]
 */
export class TextTokenizer {
  private constructor(
    private readonly hf: HfTokenizer,
    /** Path of the tokenizer.json this was loaded from. */
    readonly path: string,
  ) {}

  static async load(modelDir: string): Promise<TextTokenizer> {
    const path = join(modelDir, 'tokenizer.json');
    try {
      await access(path);
    } catch {
      // A model imported without tokenizer files (decide import-model warns) lands here.
      throw new EngineError(
        'ERR_MODEL_LOAD',
        `the model has no tokenizer: ${path} is missing. The service needs the model's Hugging Face tokenizer.json ` +
          '(and tokenizer_config.json with its chat template) in the model directory; the Engine alone can still score token ids',
      );
    }
    let hf: HfTokenizer;
    try {
      hf = tokenizers.Tokenizer.fromFile(path);
    } catch (err) {
      throw new EngineError('ERR_MODEL_LOAD', `tokenizer: cannot load ${path}: ${(err as Error).message}`, { cause: err });
    }
    // A tokenizer.json may carry truncation or padding settings; ids must be exactly the text's.
    hf.disableTruncation();
    hf.disablePadding();
    return new TextTokenizer(hf, path);
  }

  /** Token ids of `text`, with no special tokens added. */
  async encode(text: string): Promise<Int32Array> {
    const enc = await this.hf.encode(text, null, { addSpecialTokens: false });
    return Int32Array.from(enc.getIds());
  }

  /** Text of `ids`, special tokens included. */
  async decode(ids: ArrayLike<number>): Promise<string> {
    return this.hf.decode(Array.from(ids), false);
  }

  /** Number of ids the tokenizer can produce, added tokens included (may be below the model's embedding rows). */
  get vocabSize(): number {
    return this.hf.getVocabSize(true);
  }

  /** Id of a vocabulary entry given in the tokenizer's own spelling (e.g. "Ġyes"), or undefined. */
  tokenToId(token: string): number | undefined {
    return this.hf.tokenToId(token) ?? undefined;
  }

  /** Vocabulary entry of an id in the tokenizer's own spelling, or undefined. */
  idToToken(id: number): string | undefined {
    return this.hf.idToToken(id) ?? undefined;
  }
}
