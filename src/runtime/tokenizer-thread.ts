/**
 * A model's tokenizer in a worker thread: what the service tokenizes with (ModelRuntime). Building
 * a full-size tokenizer (Qwen3's 151,669 ids: 11 MB of JSON) takes about a second of JavaScript,
 * and tokenizing a long state tens of milliseconds; on the main thread both would hold up every
 * other request and the health probes. Here the main thread only posts text and receives ids.
 * The ids are TextTokenizer's (the same code runs in the worker). A worker that dies is started
 * again by the next call; close() ends it.
 */
import type { Worker } from 'node:worker_threads';

import { startWorker } from '../engine/worker-thread.js';
import { EngineError, type EngineErrorCode } from '../errors/engine-error.js';

type Failure = { code: EngineErrorCode; message: string };
type Reply = { id: number; ids: Int32Array } | { id: number; error: Failure };
type Ready = { ready: true; vocabSize: number } | { ready: false; error: Failure };

const closedError = () => new EngineError('ERR_ENGINE_CLOSED', 'the tokenizer is closed');

export class TokenizerThread {
  private worker: Worker | undefined;
  private starting: Promise<Worker> | undefined;
  private readonly pending = new Map<number, { resolve: (ids: Int32Array) => void; reject: (err: Error) => void }>();
  private nextId = 0;
  private closed = false;
  /** Embedding rows the tokenizer's ids need: its highest id + 1 (TextTokenizer.vocabSize). */
  vocabSize = 0;

  private constructor(private readonly modelDir: string) {}

  /**
   * Starts the worker and loads the tokenizer there; rejects with the load's EngineError (a
   * missing tokenizer.json, say) as TextTokenizer.load would.
   * @example
   * const tok = await TokenizerThread.load('/models/svc-alpha-2026-10');
   * const ids = await tok.encode('<|im_start|>user\nhello');
   */
  static async load(modelDir: string): Promise<TokenizerThread> {
    const thread = new TokenizerThread(modelDir);
    await thread.running();
    return thread;
  }

  /** Token ids of `text`, with no special tokens added (TextTokenizer.encode). */
  async encode(text: string): Promise<Int32Array> {
    if (this.closed) throw closedError();
    const worker = await this.running();
    // close() may have come while the worker started.
    if (this.closed) throw closedError();
    const id = this.nextId++;
    return new Promise<Int32Array>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Referenced while a call waits on it, so that the process stays for the answer; idle, it
      // keeps no process alive.
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ id, text });
    });
  }

  /** Ends the worker; calls still waiting reject. */
  close(): void {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failPending(closedError());
    void worker?.terminate();
  }

  private running(): Promise<Worker> {
    if (this.worker) return Promise.resolve(this.worker);
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private start(): Promise<Worker> {
    return new Promise<Worker>((resolve, reject) => {
      const worker = startWorker(import.meta.url, 'tokenizer-worker', { modelDir: this.modelDir });
      let ready = false;
      worker.on('message', (message: Ready | Reply) => {
        if (!ready) {
          if ('ready' in message && message.ready) {
            ready = true;
            this.vocabSize = message.vocabSize;
            worker.unref();
            if (this.closed) void worker.terminate();
            else this.worker = worker;
            resolve(worker);
          } else if ('ready' in message) {
            void worker.terminate();
            reject(new EngineError(message.error.code, message.error.message));
          }
          return;
        }
        const reply = message as Reply;
        const call = this.pending.get(reply.id);
        if (!call) return;
        this.pending.delete(reply.id);
        if (this.pending.size === 0) worker.unref();
        if ('ids' in reply) call.resolve(reply.ids);
        else call.reject(new EngineError(reply.error.code, reply.error.message));
      });
      worker.once('error', (err) => {
        if (!ready) reject(new EngineError('ERR_MODEL_LOAD', `tokenizer thread: ${err.message}`, { cause: err }));
      });
      worker.once('exit', (code) => {
        if (this.worker === worker) this.worker = undefined;
        if (!ready) reject(new EngineError('ERR_MODEL_LOAD', `tokenizer thread: it stopped (exit code ${code}) before the tokenizer loaded`));
        else this.failPending(this.closed ? closedError() : new EngineError('ERR_RUNTIME', `tokenizer thread: it stopped (exit code ${code}); the next call starts another`));
      });
    });
  }

  private failPending(err: Error): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const call of calls) call.reject(err);
  }
}
