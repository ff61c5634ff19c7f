/**
 * Large decision request bodies read in a worker thread. Parsing a JSON-object state of 1 MiB and
 * validating it takes hundreds of milliseconds of JavaScript; on the main thread every other
 * request and the health probes would wait for it (four such bodies at once held /healthz for
 * seconds). Here the main thread posts the bytes and receives the door's parsed call, or its error,
 * exactly as dialect.parse() would have given it on the spot. One thread
 * (src/support/thread-client.ts) reads one body at a time; if it dies, the bodies it held fail (500
 * in the door's shape).
 */
import type { Dialect, DialectCall, DialectParse, ParseContext } from '../api/dialect.js';
import { unreadableBodyError } from '../api/json-text.js';
import { giveWrittenForms } from '../domain/key-order.js';
import { ThreadClient } from '../support/thread-client.js';
import type { BodyReply, BodyRequest } from './body-worker.js';

export class BodyThread {
  private readonly thread = new ThreadClient<BodyRequest, BodyReply>(import.meta.url, 'body-worker');
  /** Bodies read here since the start (a counter for /metrics). */
  bodiesRead = 0;

  /** Bodies being read now, queued ones included. */
  get inProgress(): number {
    return this.thread.inProgress;
  }

  /**
   * The door's parse of `body` (raw bytes, not yet known to be JSON): what dialect.parse() of the
   * parsed JSON gives, or for a body that is not JSON the door's own error for an unreadable body.
   */
  async parse(dialect: Dialect, body: Uint8Array, context: ParseContext & { requestId: string }): Promise<DialectParse<DialectCall>> {
    const { requestId } = context;
    let reply: BodyReply;
    try {
      reply = await this.thread.call({ path: dialect.path, body, limits: context.limits, requestId });
    } catch (err) {
      return { ok: false, error: dialect.error(new Error(`reading the request body: ${(err as Error).message}`), { requestId }), code: 'server_error' };
    } finally {
      this.bodiesRead += 1;
    }
    if ('call' in reply) {
      giveWrittenForms(reply.call, reply.forms);
      return { ok: true, call: reply.call };
    }
    if ('error' in reply) return { ok: false, error: reply.error, code: reply.code };
    // As the server's JSON parser fails it on the main thread (json-body.ts, parseJsonBody).
    const unreadable = unreadableBodyError(reply.unreadable);
    return { ok: false, error: dialect.error(unreadable, { requestId, unreadableBody: true }), code: unreadable.code };
  }

  /** Starts the thread now (src/support/thread-client.ts, start()): the server's start meets a failure to make it. */
  start(): Promise<void> {
    return this.thread.start();
  }

  /** Ends the thread; bodies still waiting fail. */
  close(): void {
    this.thread.close();
  }
}
