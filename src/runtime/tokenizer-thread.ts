/**
 * A model's tokenizer in a worker thread: what the service tokenizes with (ModelRuntime). Building
 * a full-size tokenizer (Qwen3's 151,669 ids: 11 MB of JSON) takes about a second of JavaScript,
 * and tokenizing a long state tens of milliseconds; on the main thread both would hold up every
 * other request and the health probes. Here the main thread only posts text and receives ids.
 * The ids are TextTokenizer's (the same code runs in the worker). A worker that dies is started
 * again by the next call (it loads the tokenizer again); close() ends it.
 */
import { stopCause, ThreadClient, type ThreadErrors } from '../support/thread-client.js';
import { EngineError, type EngineErrorCode } from '../errors/engine-error.js';

export type TokenizerRequest = { text: string } | { vocabSize: true };
export type TokenizerReply = Int32Array | number;

const errors: ThreadErrors = {
  // The worker sends only EngineErrors' codes (tokenizer-worker.ts).
  failed: (failure) => new EngineError(failure.code as EngineErrorCode, failure.message),
  closed: () => new EngineError('ERR_ENGINE_CLOSED', 'the tokenizer is closed'),
  stopped: (code, reason) => new EngineError('ERR_RUNTIME', `tokenizer thread: it stopped (${stopCause(code, reason)}); the next call starts another`),
};

/**
 * The live texts the tokenizer thread holds at once, in characters (and a few per text): some
 * milliseconds of work, so that it tokenizes on while the main thread is busy, and what an
 * abandoned request may still have tokenized for nobody.
 */
const LIVE_TEXT_IN_WORKER = { size: (request: TokenizerRequest) => ('text' in request ? request.text.length : 0) + 64, most: 64 * 1024 };

export class TokenizerThread {
  private constructor(
    private readonly thread: ThreadClient<TokenizerRequest, TokenizerReply>,
    /** Embedding rows the tokenizer's ids need: its highest id + 1 (TextTokenizer.vocabSize). */
    readonly vocabSize: number,
  ) {}

  /**
   * Starts the worker and loads the tokenizer there; rejects with the load's EngineError (a
   * missing tokenizer.json, say) as TextTokenizer.load would.
   * @example
   * const tok = await TokenizerThread.load('/models/svc-alpha-2026-10');
   * const ids = await tok.encode('<|im_start|>user\nhello');
   */
  static async load(modelDir: string): Promise<TokenizerThread> {
    let loaded = false;
    // A thread that ends before the tokenizer loaded is this load's failure; later, a runtime one.
    const stopped = (code: number, reason?: Error) =>
      loaded ? errors.stopped(code, reason) : new EngineError('ERR_MODEL_LOAD', `tokenizer thread: it stopped (${stopCause(code, reason)}) before the tokenizer loaded`);
    const thread = new ThreadClient<TokenizerRequest, TokenizerReply>(import.meta.url, 'tokenizer-worker', {
      workerData: { modelDir },
      errors: { ...errors, stopped },
      liveInWorker: LIVE_TEXT_IN_WORKER,
    });
    try {
      const vocabSize = (await thread.call({ vocabSize: true })) as number;
      loaded = true;
      return new TokenizerThread(thread, vocabSize);
    } catch (err) {
      thread.close();
      throw err;
    }
  }

  /**
   * Token ids of `text`, with no special tokens added (TextTokenizer.encode). `background` (a
   * batch record's text) queues behind the other calls: the thread holds one such text at a time.
   * `signal` (the request's): when it aborts before the text reached the thread, the text is
   * dropped and the call rejects with its reason.
   */
  async encode(text: string, options: { background?: boolean; signal?: AbortSignal } = {}): Promise<Int32Array> {
    return (await this.thread.call({ text }, options)) as Int32Array;
  }

  /** Texts waiting for the thread or being tokenized: batch records' (background) and the others. */
  get queue(): { live: number; batch: number } {
    const batch = this.thread.backgroundInProgress;
    return { live: this.thread.inProgress - batch, batch };
  }

  /** Ends the worker; calls still waiting reject. */
  close(): void {
    this.thread.close();
  }
}
