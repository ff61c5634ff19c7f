/**
 * Large decision request bodies read in a worker thread. Parsing a JSON-object state of 1 MiB and
 * validating it takes hundreds of milliseconds of JavaScript; on the main thread every other
 * request and the health probes would wait for it (four such bodies at once held /healthz for
 * seconds). Here the main thread posts the bytes and receives the door's parsed call, or its error,
 * exactly as dialect.parse() would have given it on the spot. One thread, started on first use,
 * reads one body at a time; idle, it keeps no process alive; if it dies, the bodies it held fail
 * (500 in the door's shape) and the next body starts another. close() ends it.
 */
import type { Worker } from 'node:worker_threads';

import type { Dialect, DialectCall, DialectParse, ParseContext } from '../api/dialect.js';
import { giveWrittenForms, type WrittenForms } from '../domain/key-order.js';
import { startWorker } from '../engine/worker-thread.js';
import type { BodyMessage } from './body-worker.js';
import { unreadableBodyError, type JsonBody } from './json-body.js';

type Reply = { id: number } & (
  | { call: DialectCall; forms: WrittenForms }
  | { error: Extract<DialectParse<DialectCall>, { ok: false }>['error'] }
  | { unreadable: Extract<JsonBody, { ok: false }> }
  | { failure: string }
);

interface Pending {
  dialect: Dialect;
  requestId: string;
  resolve: (parsed: DialectParse<DialectCall>) => void;
}

export class BodyThread {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closed = false;
  /** Bodies read here since the start (a counter for /metrics). */
  bodiesRead = 0;

  /** Bodies being read now, queued ones included. */
  get inProgress(): number {
    return this.pending.size;
  }

  /**
   * The door's parse of `body` (raw bytes, not yet known to be JSON): what dialect.parse() of the
   * parsed JSON gives, or for a body that is not JSON the door's own error for an unreadable body.
   */
  parse(dialect: Dialect, body: Uint8Array, context: ParseContext & { requestId: string }): Promise<DialectParse<DialectCall>> {
    if (this.closed) return Promise.resolve(this.failed(dialect, context.requestId, 'the server is closing'));
    const worker = this.running();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { dialect, requestId: context.requestId, resolve });
      // Referenced while a body waits on it, so that the process stays for the answer.
      if (this.pending.size === 1) worker.ref();
      const message: BodyMessage = { id, path: dialect.path, body, limits: context.limits, requestId: context.requestId };
      worker.postMessage(message);
    });
  }

  /** Ends the thread; bodies still waiting fail. */
  close(): void {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failPending('the server is closing');
    void worker?.terminate();
  }

  private running(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker(import.meta.url, 'body-worker', undefined);
    worker.unref();
    worker.on('message', (reply: Reply) => this.answer(worker, reply));
    worker.once('error', () => undefined); // its exit follows and fails what it held
    worker.once('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      this.failPending(`the body reader thread stopped (exit code ${code})`);
    });
    this.worker = worker;
    return worker;
  }

  private answer(worker: Worker, reply: Reply): void {
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) worker.unref();
    this.bodiesRead += 1;
    const { dialect, requestId, resolve } = pending;
    if ('call' in reply) {
      giveWrittenForms(reply.call, reply.forms);
      resolve({ ok: true, call: reply.call });
    } else if ('error' in reply) {
      resolve({ ok: false, error: reply.error });
    } else if ('unreadable' in reply) {
      // As the server's JSON parser fails it on the main thread (json-body.ts, parseJsonBody).
      resolve({ ok: false, error: dialect.error(unreadableBodyError(reply.unreadable), { requestId, unreadableBody: true }) });
    } else {
      resolve(this.failed(dialect, requestId, reply.failure));
    }
  }

  private failed(dialect: Dialect, requestId: string, why: string): DialectParse<DialectCall> {
    return { ok: false, error: dialect.error(new Error(`reading the request body: ${why}`), { requestId }) };
  }

  private failPending(why: string): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const { dialect, requestId, resolve } of calls) resolve(this.failed(dialect, requestId, why));
  }
}
