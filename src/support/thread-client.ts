/**
 * A worker thread that answers requests, one message each way: ThreadClient on the calling side,
 * serveRequests() in the worker script. Started on first use (or at once: start()); while no
 * request waits it keeps no process alive; if it dies, the requests it held reject and the next request starts another.
 * Background calls (a batch's work) queue here and go to the worker one at a time, behind the
 * others (a live request's).
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
  /**
   * The thread ended (a crash, process.exit) while the call waited. `reason`: the error it ended
   * on, when it had one (an uncaught throw, or a thread that could not start: its script failed to
   * load, the working directory is gone); stopped() is to name it.
   */
  stopped(exitCode: number, reason?: Error): Error;
}

export interface ThreadClientOptions {
  /** The worker's workerData (each thread started gets the same). */
  workerData?: unknown;
  errors?: Partial<ThreadErrors>;
}

export class ThreadClient<Request, Response> {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: (reply: Response) => void; reject: (err: Error) => void }>();
  /** Background calls not yet sent, oldest first; and the one the worker holds (BACKGROUND_IN_WORKER). */
  private readonly backgroundWaiting: Array<{ id: number; request: Request }> = [];
  private readonly backgroundSent = new Set<number>();
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
      stopped: (code, reason) => new Error(`the ${name} thread stopped (${stopCause(code, reason)})`),
      ...options.errors,
    };
  }

  /** Requests sent or waiting to be sent, not yet answered. */
  get inProgress(): number {
    return this.pending.size;
  }

  /** Of inProgress, the background calls (waiting here or in the worker). */
  get backgroundInProgress(): number {
    return this.backgroundWaiting.length + this.backgroundSent.size;
  }

  /**
   * The worker's answer to `request`; rejects when the worker fails it, dies or is closed.
   * The worker answers in the order it receives. A `background` call is sent only when no other
   * background call is in the worker, so a call that is not (a live request's) waits behind at
   * most one of them, however many are queued (a batch's records).
   */
  call(request: Request, options: { background?: boolean } = {}): Promise<Response> {
    if (this.closed) return Promise.reject(this.errors.closed());
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Referenced while a request waits on it, so that the process stays for the answer.
      if (this.pending.size === 1) this.running().ref();
      if (!options.background) this.send(id, request);
      else {
        this.backgroundWaiting.push({ id, request });
        this.sendBackground();
      }
    });
  }

  /**
   * Starts the thread now rather than on first use; resolves once it runs JavaScript (or has
   * ended). For a process that must meet a failure to make a thread at its start, not mid-service:
   * V8 ends the whole process when a new thread's isolate cannot reserve its memory.
   */
  start(): Promise<void> {
    if (this.closed || this.worker) return Promise.resolve();
    const worker = this.running();
    // Held until it runs (nothing else may keep the process waiting for it); idle afterwards, it
    // keeps no process alive (the 'message' listener running() adds had referenced it again).
    worker.ref();
    return new Promise((resolve) => {
      worker.once('online', () => {
        if (this.pending.size === 0) worker.unref();
        resolve();
      });
      worker.once('exit', () => resolve());
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

  private send(id: number, request: Request): void {
    this.running().postMessage({ id, request });
  }

  private sendBackground(): void {
    if (this.backgroundSent.size >= BACKGROUND_IN_WORKER) return;
    const next = this.backgroundWaiting.shift();
    if (!next) return;
    this.backgroundSent.add(next.id);
    this.send(next.id, next.request);
  }

  private running(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker(this.besideUrl, this.name, this.options.workerData);
    // Referenced only while a request waits (call()), so that an idle thread keeps no process alive.
    if (this.pending.size === 0) worker.unref();
    worker.on('message', (message: Reply<Response>) => {
      const call = this.pending.get(message.id);
      if (!call) return;
      this.pending.delete(message.id);
      if (this.pending.size === 0) worker.unref();
      if (this.backgroundSent.delete(message.id)) this.sendBackground();
      if ('reply' in message) call.resolve(message.reply);
      // A worker script of another version (the package replaced under a running process) may
      // answer in another shape: a failure, not a TypeError here.
      else call.reject(this.errors.failed(message.failure ?? { message: 'the thread answered in a shape this caller does not read' }));
    });
    // Its exit follows and fails what it held; the error is why, the exit code alone says nothing.
    let reason: Error | undefined;
    worker.on('error', (err) => {
      reason ??= err;
    });
    worker.once('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      this.failPending(this.errors.stopped(code, reason));
    });
    this.worker = worker;
    return worker;
  }

  private failPending(err: Error): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    this.backgroundWaiting.length = 0;
    this.backgroundSent.clear();
    for (const call of calls) call.reject(err);
  }
}

/**
 * How a thread ended, for stopped()'s messages: the exit code and, when it ended on an error, that
 * error's message.
 * @example stopCause(1, new Error('ENOENT: no such file or directory, uv_cwd')) // 'exit code 1: ENOENT: no such file or directory, uv_cwd'
 */
export function stopCause(exitCode: number, reason?: Error): string {
  return reason ? `exit code ${exitCode}: ${reason.message}` : `exit code ${exitCode}`;
}

/** Background calls the worker holds at once: one, so that a call that is not waits behind one at most. */
const BACKGROUND_IN_WORKER = 1;

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
