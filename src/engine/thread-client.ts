/**
 * A worker thread that answers requests, one message each way: ThreadClient on the calling side,
 * serveRequests() in the worker script. Started on first use; while no request waits it keeps no
 * process alive; if it dies, the requests it held reject and the next request starts another.
 * For work that must not hold the JavaScript thread (reading large request bodies and batch
 * lines: src/server/body-thread.ts, src/batches/record-thread.ts).
 * @example
 * const thread = new ThreadClient<{ text: string }, number>(import.meta.url, 'count-worker');
 * const n = await thread.call({ text });   // count-worker.ts: serveRequests((r) => r.text.length)
 */
import { parentPort, type Worker } from 'node:worker_threads';

import { startWorker } from './worker-thread.js';

type Reply<T> = { id: number; reply: T } | { id: number; failure: string };

export class ThreadClient<Request, Response> {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: (reply: Response) => void; reject: (err: Error) => void }>();
  private nextId = 0;
  private closed = false;

  /** `name`: the worker script's base name, in the folder of the module `besideUrl` (its import.meta.url). */
  constructor(
    private readonly besideUrl: string,
    private readonly name: string,
  ) {}

  /** Requests sent and not yet answered. */
  get inProgress(): number {
    return this.pending.size;
  }

  /** The worker's answer to `request`; rejects when the worker fails it, dies or is closed. */
  call(request: Request): Promise<Response> {
    if (this.closed) return Promise.reject(new Error(`the ${this.name} thread is closed`));
    const worker = this.running();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Referenced while a request waits on it, so that the process stays for the answer.
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ id, request });
    });
  }

  /** Ends the thread; requests still waiting reject. */
  close(): void {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failPending(new Error(`the ${this.name} thread is closed`));
    void worker?.terminate();
  }

  private running(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker(this.besideUrl, this.name, undefined);
    worker.unref();
    worker.on('message', (message: Reply<Response>) => {
      const call = this.pending.get(message.id);
      if (!call) return;
      this.pending.delete(message.id);
      if (this.pending.size === 0) worker.unref();
      if ('reply' in message) call.resolve(message.reply);
      else call.reject(new Error(`${this.name}: ${message.failure}`));
    });
    worker.once('error', () => undefined); // its exit follows, and fails what it held
    worker.once('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      this.failPending(new Error(`the ${this.name} thread stopped (exit code ${code})`));
    });
    this.worker = worker;
    return worker;
  }

  private failPending(err: Error): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const call of calls) call.reject(err);
  }
}

/**
 * The worker side: answers each request ThreadClient.call() sends with `handle(request)`; a
 * throw becomes that call's rejection (with the error's message).
 */
export function serveRequests<Request, Response>(handle: (request: Request) => Response): void {
  const port = parentPort!;
  port.on('message', ({ id, request }: { id: number; request: Request }) => {
    let reply: Response;
    try {
      reply = handle(request);
    } catch (err) {
      port.postMessage({ id, failure: (err as Error)?.message ?? String(err) });
      return;
    }
    port.postMessage({ id, reply });
  });
}
