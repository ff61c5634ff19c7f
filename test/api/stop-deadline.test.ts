/**
 * A stopping server (owed-responses.ts, endConnectionsOwingNothing) waits for the responses it
 * owes, but no client can hold the stop past the request timeout: Node stops enforcing that timeout
 * once server.close() has begun, so a body that stalls mid-way, or a response its client stops
 * reading, would otherwise keep the process (and its data dir's lock) for as long as the client
 * likes. Real sockets on a plain Node server, with a timeout of a fraction of a second.
 */
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { afterEach, expect, it } from 'vitest';

import { closedByStop, countOwedResponses, endConnectionsOwingNothing } from '../../src/server/owed-responses.js';

const TIMEOUT_MS = 400;
const sockets: net.Socket[] = [];
afterEach(() => sockets.splice(0).forEach((s) => s.destroy()));

async function serve(handler: http.RequestListener): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer(handler);
  countOwedResponses(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as net.AddressInfo).port };
}

function connect(port: number, text: string): net.Socket {
  const socket = net.connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => undefined);
  socket.write(text);
  return socket;
}

function* chunks(total: number): Generator<Buffer> {
  const chunk = Buffer.alloc(64 * 1024, 120);
  for (let sent = 0; sent < total; sent += chunk.length) yield chunk;
}

/** Stops `server` as app.ts does, and resolves with how long the close took. */
async function stop(server: http.Server): Promise<number> {
  const began = performance.now();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  endConnectionsOwingNothing(server, TIMEOUT_MS, 20);
  await closed;
  return performance.now() - began;
}

it('a request whose body stalls half-way is cut once the request timeout has passed', async () => {
  const { server, port } = await serve((req, res) => {
    req.resume();
    req.on('end', () => res.end('whole'));
  });
  const accepted: net.Socket[] = [];
  server.on('connection', (s: net.Socket) => accepted.push(s));
  const client = connect(port, 'POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n' + 'a'.repeat(10));
  await new Promise((r) => setTimeout(r, 50));
  expect(closedByStop(accepted[0])).toBe(false);
  const took = await stop(server);
  expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
  if (!client.destroyed) await once(client, 'close');
  // The log can tell the stop's cut from a client that left (app.ts, logAbandoned).
  expect(closedByStop(accepted[0])).toBe(true);
});

it('a response its client stops reading is cut at the deadline', async () => {
  // Streamed with backpressure, as a results download is: 64 MiB in 64 KiB chunks.
  const size = 64 * 1024 * 1024;
  const { server, port } = await serve((_req, res) => Readable.from(chunks(size)).pipe(res));
  const client = connect(port, 'GET /big HTTP/1.1\r\nHost: h\r\n\r\n');
  client.pause(); // reads nothing: the 64 MiB stay in the kernel's and the server's buffers
  await new Promise((r) => setTimeout(r, 100));
  const took = await stop(server);
  expect(took).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
  // Read what did arrive: the response ends short of its 64 MiB.
  let received = 0;
  client.on('data', (chunk: Buffer) => (received += chunk.length)).resume();
  await once(client, 'close');
  expect(received).toBeLessThan(size);
});

it('a request in flight is still answered whole when it ends before the deadline', async () => {
  const { server, port } = await serve((_req, res) => setTimeout(() => res.end('answered'), 100));
  const client = connect(port, 'GET /slow HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n');
  let text = '';
  client.setEncoding('utf8').on('data', (chunk) => (text += chunk));
  await new Promise((r) => setTimeout(r, 20));
  await stop(server);
  await once(client, 'close');
  expect(text).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\nanswered$/);
});
