/**
 * The responses a server still owes on each connection. A malformed request pipelined behind good
 * ones is answered after all of them (app.ts, clientErrorHandler): written at once, its error would
 * stand in place of the first answer, and a client would take a created batch for a 400. Node keeps
 * its own queue of a pipelined connection's responses but does not expose it: its socket names only
 * the response being written, and a queued one that finished into its buffer already reads as
 * finished before its bytes have gone out. So each request's response is counted here from the
 * server's 'request' event until it has been written (its 'finish') or its connection closed.
 */
import type http from 'node:http';
import type { Socket } from 'node:net';

interface Owed {
  /** Each response owed, with when its request began (performance.now()). */
  responses: Map<http.ServerResponse, number>;
  /** Called once the set is empty. */
  whenNone?: () => void;
}

const bySocket = new WeakMap<Socket, Owed>();
/** Connections a stop closed at its deadline (endConnectionsOwingNothing), not their clients. */
const cutByStop = new WeakSet<Socket>();

/** Whether a stop closed `socket` for outliving the request time limit (its request then has no answer). */
export function closedByStop(socket: Socket | undefined): boolean {
  return socket !== undefined && cutByStop.has(socket);
}
/** Every open connection of each counted server. */
const connectionsOf = new WeakMap<http.Server, Set<Socket>>();

/** Counts every response `server` owes, per connection. */
export function countOwedResponses(server: http.Server): void {
  const connections = new Set<Socket>();
  connectionsOf.set(server, connections);
  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const socket = request.socket;
    let owed = bySocket.get(socket);
    if (!owed) bySocket.set(socket, (owed = { responses: new Map() }));
    const entry = owed;
    entry.responses.set(response, performance.now());
    const settled = () => {
      entry.responses.delete(response);
      if (entry.responses.size > 0 || !entry.whenNone) return;
      const then = entry.whenNone;
      entry.whenNone = undefined;
      then();
    };
    response.once('finish', settled);
    response.once('close', settled);
  });
}

/**
 * Calls `then` once every response owed on `socket` has been written, or at once when none is owed.
 * Also at once when one of them belongs to a request still arriving: the error is in that request
 * (a client that hung up mid-body, say), and closing the socket is what ends it.
 */
export function afterOwedResponses(socket: Socket, then: () => void): void {
  const owed = bySocket.get(socket);
  if (!owed || owed.responses.size === 0 || socket.destroyed) return then();
  for (const response of owed.responses.keys()) if (!response.req.complete) return then();
  owed.whenNone = then;
}

/**
 * For a server that is stopping: ends every connection that owes no response, now and until the
 * server has closed (a connection accepted just before the listener shut): a connection whose
 * client has sent nothing yet (a browser's spare socket), one whose headers are still arriving,
 * and a kept-alive one between requests. server.close() waits for every connection to end, and
 * no request has begun on these; one with a response owed is left to finish it, and one whose last
 * response is still being written out waits for a later sweep (destroying it would cut it short).
 *
 * A client cannot hold the stop past `requestTimeoutMs` either: Node stops enforcing its request
 * timeout once the server is closing, so a request still arriving that long after it began is cut
 * here, and `requestTimeoutMs` after the stop began every connection left (a body that stalled
 * mid-way, a response its client stopped reading) is closed.
 */
export function endConnectionsOwingNothing(server: http.Server, requestTimeoutMs: number, sweepMs = 100): void {
  const connections = connectionsOf.get(server);
  if (!connections) return;
  const deadline = performance.now() + requestTimeoutMs;
  const sweep = () => {
    const now = performance.now();
    for (const socket of connections) {
      const owed = bySocket.get(socket)?.responses;
      const idle = (owed?.size ?? 0) === 0 && socket.writableLength === 0;
      if (idle) socket.destroy();
      else if (now >= deadline || [...(owed ?? [])].some(([response, began]) => !response.req.complete && now - began >= requestTimeoutMs)) {
        cutByStop.add(socket);
        socket.destroy();
      }
    }
  };
  sweep();
  const timer = setInterval(sweep, sweepMs);
  timer.unref();
  server.once('close', () => clearInterval(timer));
}
