/**
 * A worker thread that answers requests, one message each way: ThreadClient on the calling side,
 * serveRequests() in the worker script. Started on first use; while no request waits it keeps no
 * process alive; if it dies, the requests it held reject and the next request starts another.
 * For work that must not hold the JavaScript thread (a model's tokenizer:
 * src/runtime/tokenizer-thread.ts; reading large request bodies and batch lines:
 * src/server/body-thread.ts, src/batches/record-thread.ts).
 * @example
 * const thread = new ThreadClient<{ text: string }, number>(import.meta.url, 'count-worker');
 * const n = await thread.call({ text });   // count-worker.ts: serveRequests((r) => r.text.length)
 */
import { parentPort, type TransferListItem, type Worker } from 'node:worker_threads';

import { startWorker } from './worker-thread.js';

/** Why the worker's handler failed a request: its error's message, and its `code` when it had a string one. */
export type ThreadFailure = { message: string; code?: string };
type Reply<T> = { id: number; reply: T } | { id: number; failure: ThreadFailure };

/** The errors a call rejects with; by default plain Errors that name the thread. */
export interface ThreadErrors {
  /** The worker's handler threw. */
  failed(failure: ThreadFailure): Error;
  /** close() came first. */
  closed(): Error;
  /** The thread ended (a crash, process.exit) while the call waited. */
  stopped(exitCode: number): Error;
}

export interface ThreadClientOptions {
  /** The worker's workerData (each thread started gets the same). */
  workerData?: unknown;
  errors?: Partial<ThreadErrors>;
}

export class ThreadClient<Request, Response> {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: (reply: Response) => void; reject: (err: Error) => void }>();
  private nextId = 0;
  private closed = false;
  private readonly errors: ThreadErrors;

  /** `name`: the worker script's base name, in the folder of the module `besideUrl` (its import.meta.url). */
  constructor(
    private readonly besideUrl: string,
    private readonly name: string,
    private readonly options: ThreadClientOptions = {},
  ) {
    this.errors = {
      failed: (failure) => new Error(`${name}: ${failure.message}`),
      closed: () => new Error(`the ${name} thread is closed`),
      stopped: (code) => new Error(`the ${name} thread stopped (exit code ${code})`),
      ...options.errors,
    };
  }

  /** Requests sent and not yet answered. */
  get inProgress(): number {
    return this.pending.size;
  }

  /** The worker's answer to `request`; rejects when the worker fails it, dies or is closed. */
  call(request: Request): Promise<Response> {
    if (this.closed) return Promise.reject(this.errors.closed());
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
    this.failPending(this.errors.closed());
    void worker?.terminate();
  }

  private running(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker(this.besideUrl, this.name, this.options.workerData);
    worker.unref();
    worker.on('message', (message: Reply<Response>) => {
      const call = this.pending.get(message.id);
      if (!call) return;
      this.pending.delete(message.id);
      if (this.pending.size === 0) worker.unref();
      if ('reply' in message) call.resolve(message.reply);
      else call.reject(this.errors.failed(message.failure));
    });
    worker.once('error', () => undefined); // its exit follows, and fails what it held
    worker.once('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      this.failPending(this.errors.stopped(code));
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
 * The worker side: answers each request ThreadClient.call() sends with `handle(request)` (or what
 * its promise resolves to); a throw or rejection becomes that call's rejection, with the error's
 * message and code. `transfer` names the parts of a reply to move rather than copy (a typed
 * array's buffer).
 */
export function serveRequests<Request, Response>(
  handle: (request: Request) => Response | Promise<Response>,
  transfer: (reply: Response) => TransferListItem[] = () => [],
): void {
  const port = parentPort!;
  port.on('message', ({ id, request }: { id: number; request: Request }) => {
    let reply: Response | Promise<Response>;
    try {
      reply = handle(request);
    } catch (err) {
      port.postMessage({ id, failure: failureOf(err) });
      return;
    }
    if (!(reply instanceof Promise)) {
      port.postMessage({ id, reply }, transfer(reply));
      return;
    }
    reply.then(
      (value) => port.postMessage({ id, reply: value }, transfer(value)),
      (err: unknown) => port.postMessage({ id, failure: failureOf(err) }),
    );
  });
}

function failureOf(err: unknown): ThreadFailure {
  const code = (err as { code?: unknown })?.code;
  return { message: (err as Error)?.message ?? String(err), ...(typeof code === 'string' ? { code } : {}) };
}
