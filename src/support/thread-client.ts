/**
 * A worker thread that answers requests, one message each way: ThreadClient on the calling side,
 * serveRequests() in the worker script. Started on first use (or at once: start()); while no
 * request waits it keeps no process alive; if it dies, the requests it held reject and the next request starts another.
 * Calls queue here and go to the worker a few at a time: background calls (a batch's work) one at
 * a time, behind the others (a live request's). A call whose `signal` aborts while it still waits
 * here is dropped unsent (a request answered 429, or whose client left, costs the thread nothing
 * more); one already in the worker runs, and its answer is dropped.
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

export interface ThreadClientOptions<Request = unknown> {
  /** The worker's workerData (each thread started gets the same). */
  workerData?: unknown;
  errors?: Partial<ThreadErrors>;
  /**
   * How much live work the worker holds at once: enough that it never waits on this thread for
   * its next request (this thread may be busy), little enough that an abandoned call still waiting
   * here is dropped unsent. `size` of a request and the `most` held; one request is always sent,
   * however large. Default: four requests.
   */
  liveInWorker?: { size: (request: Request) => number; most: number };
}

type Lane = 'live' | 'background';

interface PendingCall<Response> {
  resolve: (reply: Response) => void;
  reject: (err: Error) => void;
  lane: Lane;
  /** Removes the call's abort listener. */
  release?: () => void;
}

export class ThreadClient<Request, Response> {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, PendingCall<Response>>();
  /** Calls not yet sent, oldest first (a Map: an abandoned one leaves in O(1)). */
  private readonly waiting: Record<Lane, Map<number, Request>> = { live: new Map(), background: new Map() };
  /** Calls the worker holds (answered or not yet), abandoned ones included until their answer comes, with their sizes. */
  private readonly sent: Record<Lane, Map<number, number>> = { live: new Map(), background: new Map() };
  private readonly held: Record<Lane, number> = { live: 0, background: 0 };
  private readonly limits: Record<Lane, { size: (request: Request) => number; most: number }>;
  private backgroundPending = 0;
  private nextId = 0;
  private closed = false;
  private readonly errors: ThreadErrors;

  /** `name`: the worker script's base name, in the folder of the module `besideUrl` (its import.meta.url). */
  constructor(
    private readonly besideUrl: string,
    private readonly name: string,
    private readonly options: ThreadClientOptions<Request> = {},
  ) {
    this.limits = { live: options.liveInWorker ?? LIVE_IN_WORKER, background: BACKGROUND_IN_WORKER };
    this.errors = {
      failed: (failure) => new Error(`${name}: ${failure.message}`),
      closed: () => new Error(`the ${name} thread is closed`),
      stopped: (code, reason) => new Error(`the ${name} thread stopped (${stopCause(code, reason)})`),
      ...options.errors,
    };
  }

  /** Requests sent or waiting to be sent, not yet answered (abandoned ones not counted). */
  get inProgress(): number {
    return this.pending.size;
  }

  /** Of inProgress, the background calls (waiting here or in the worker). */
  get backgroundInProgress(): number {
    return this.backgroundPending;
  }

  /**
   * The worker's answer to `request`; rejects when the worker fails it, dies or is closed, or with
   * `signal`'s reason when it aborts first. The worker answers in the order it receives. A
   * `background` call is sent only when no other background call is in the worker, so a call that
   * is not (a live request's) waits behind at most one of them, however many are queued (a batch's
   * records).
   */
  call(request: Request, options: { background?: boolean; signal?: AbortSignal } = {}): Promise<Response> {
    if (this.closed) return Promise.reject(this.errors.closed());
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = this.nextId++;
    const lane: Lane = options.background ? 'background' : 'live';
    return new Promise((resolve, reject) => {
      const call: PendingCall<Response> = { resolve, reject, lane };
      this.pending.set(id, call);
      if (lane === 'background') this.backgroundPending += 1;
      // Referenced while a request waits on it, so that the process stays for the answer.
      if (this.pending.size === 1) this.running().ref();
      if (signal) {
        const onAbort = () => this.abandon(id, signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        call.release = () => signal.removeEventListener('abort', onAbort);
      }
      this.waiting[lane].set(id, request);
      this.pump();
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

  /** Sends waiting calls while the worker holds less than its share of each lane (one at least). */
  private pump(): void {
    for (const lane of ['live', 'background'] as const) {
      const { size, most } = this.limits[lane];
      for (const [id, request] of this.waiting[lane]) {
        const weight = size(request);
        if (this.sent[lane].size > 0 && this.held[lane] + weight > most) break;
        this.waiting[lane].delete(id);
        this.sent[lane].set(id, weight);
        this.held[lane] += weight;
        this.running().postMessage({ id, request });
      }
    }
  }

  /** The worker answered `id`: its share of its lane is free again. */
  private received(id: number): void {
    for (const lane of ['live', 'background'] as const) {
      const weight = this.sent[lane].get(id);
      if (weight === undefined) continue;
      this.sent[lane].delete(id);
      this.held[lane] -= weight;
      return;
    }
  }

  /** A call whose caller gave up: dropped if still waiting here, its answer dropped if sent. */
  private abandon(id: number, reason: unknown): void {
    const call = this.settle(id);
    if (!call) return;
    this.waiting[call.lane].delete(id);
    call.reject(reason as Error);
  }

  /** Takes a call out of the pending ones (its abort listener removed); undefined when it was not pending. */
  private settle(id: number): PendingCall<Response> | undefined {
    const call = this.pending.get(id);
    if (!call) return undefined;
    this.pending.delete(id);
    call.release?.();
    if (call.lane === 'background') this.backgroundPending -= 1;
    if (this.pending.size === 0) this.worker?.unref();
    return call;
  }

  private running(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker(this.besideUrl, this.name, this.options.workerData);
    // Referenced only while a request waits (call()), so that an idle thread keeps no process alive.
    if (this.pending.size === 0) worker.unref();
    worker.on('message', (message: Reply<Response>) => {
      this.received(message.id);
      const call = this.settle(message.id);
      this.pump();
      if (!call) return; // abandoned while the worker held it
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
    this.backgroundPending = 0;
    for (const lane of ['live', 'background'] as const) {
      this.waiting[lane].clear();
      this.sent[lane].clear();
      this.held[lane] = 0;
    }
    for (const call of calls) {
      call.release?.();
      call.reject(err);
    }
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
const BACKGROUND_IN_WORKER = { size: () => 1, most: 1 };
/** Live calls the worker holds at once, where the client says nothing (ThreadClientOptions.liveInWorker). */
const LIVE_IN_WORKER = { size: () => 1, most: 4 };

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
