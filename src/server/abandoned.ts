/**
 * Whether a request's client left without its answer: the connection closed before the response
 * was written out whole (the client hung up, timed out, or ended its side of the connection).
 * Fastify's onRequestAbort hook sees only a request whose body had not all arrived; a client that
 * leaves while its decision is tokenized or scored is seen here.
 */
import type { FastifyReply } from 'fastify';

/** Calls `then` once if the response's connection closes before the response was written out whole. */
export function onAbandoned(reply: FastifyReply, then: () => void): void {
  const response = reply.raw;
  response.once('close', () => {
    if (!response.writableFinished) then();
  });
}
