/**
 * The HTTP API, registered by registerApi() either on the root of the fastify instance that
 * createServer() builds or, as the `decisionApp` plugin, in its own scope of a host's app. It
 * registers every route (routes/: the dialects' POST routes, ours, System One's and OpenAI's, from
 * their registry in dialect-routes.ts, one file per other path; the map is in the README, "Where
 * things are") and `GET /openapi.json`, generated from the route schemas by @fastify/swagger.
 * Cross-cutting hooks run in this order: request id, OPTIONS answered (preflight.ts),
 * authentication, rate limit, no Content-Encoding (415); every error goes through one handler.
 */
import http from 'node:http';
import type { Socket } from 'node:net';

import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify';

import { DEFAULT_BODY_LIMIT_BYTES } from '../api/body-limit.js';
import { ApiError } from '../api/errors.js';
import { newRequestId } from '../api/request-ids.js';
import { NAMED_SCHEMAS, SCHEMA_ID_PREFIX, schemaId, type SchemaName } from '../api/schemas.js';
import { DATA_FOLDER, folderOf, MODELS_FOLDER } from '../support/env-path.js';
import { EngineError } from '../errors/engine-error.js';
import { DecisionService } from '../service/decision-service.js';
import { resolveApiKeys } from './api-keys.js';
import { registerAuth } from './auth.js';
import { doorError, frameworkErrorHandler, registerErrorHandling, registerScopedErrorHandling } from './errors.js';
import { registerMetrics } from './metrics.js';
import { DEFAULT_INVALID_KEY_LIMIT, rateLimitFromEnv, registerRateLimit } from './rate-limit.js';
import { checkAppOptions, checkServerOptions, type DecisionAppOptions, type LoggerOptions, type ServerOptions } from './server-options.js';
import { BodyThread } from './body-thread.js';
import { parseJsonBody, rejectUnreadableBody } from './json-body.js';
import { registerPreflight } from './preflight.js';
import { afterOwedResponses, closedByStop, countOwedResponses, endConnectionsOwingNothing } from './owed-responses.js';
import { genReqId, REQUEST_ID_HEADER, useOwnRequestIds } from './request-id.js';
import { requestPath } from './request-target.js';
import { onAbandoned } from './abandoned.js';
import { logAbandoned, loggerConfig, RequestLog, urlForLog } from './request-log.js';
import { BatchService } from '../batches/batch-service.js';
import { OpenAiBatchApi } from '../batches/openai/openai-batches.js';
import { startRecordThread } from '../batches/record-thread.js';
import { batchValidationRoutes } from './routes/batch-validation.js';
import { batchRoutes } from './routes/batches.js';
import { fileRoutes } from './routes/files.js';
import { consoleRoutes } from './console.js';
import { dialectRoutes } from './routes/dialect-routes.js';
import { healthRoutes } from './routes/health.js';
import { modelRoutes } from './routes/models.js';

export type { DecisionAppOptions, LoggerOptions, ServerOptions };

/** A socket as Node's HTTP server keeps it: the response being written on it, if any. */
type ServerSocket = Socket & { _httpMessage?: http.ServerResponse | null };

/** Sockets whose client error is being answered: Node reports each later byte on them again. */
const answering = new WeakSet<Socket>();

/**
 * The method and path of the request a client error is about, where they can be read: a request
 * whose headers were read (a body that timed out), or one whose request line is in the bytes the
 * parser failed on, with no blank line after it (the error is in its headers, not past them).
 */
function requestLineOf(err: NodeJS.ErrnoException, socket: Socket): { method: string; path: string } | undefined {
  const incoming = (socket as Socket & { parser?: { incoming?: http.IncomingMessage | null } | null }).parser?.incoming;
  if (incoming && !incoming.complete && incoming.url !== undefined) return { method: incoming.method ?? '', path: requestPath(incoming.url) };
  const { rawPacket, bytesParsed } = err as { rawPacket?: unknown; bytesParsed?: unknown };
  if (!Buffer.isBuffer(rawPacket)) return undefined;
  const text = rawPacket.subarray(0, typeof bytesParsed === 'number' ? bytesParsed + 1 : undefined).toString('latin1');
  let last: RegExpExecArray | undefined;
  for (const match of text.matchAll(/(?:^|\n)([A-Z]+) (\S+) HTTP\/1\.[01]\r?\n/g)) last = match;
  if (!last || text.indexOf('\r\n\r\n', last.index + last[0].length - 2) !== -1) return undefined;
  return { method: last[1]!, path: requestPath(last[2]!) };
}

/**
 * Malformed HTTP (before fastify has a request): the error in the shape of the request's door
 * where its request line can be read (doorError; ours otherwise), then the connection is closed.
 * A malformed request pipelined behind good ones waits for their answers: written at once, it
 * would stand in place of the first answer (and a client would take a created batch for a 400).
 */
function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || answering.has(socket)) return;
  answering.add(socket);
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const answer = () => {
    const { method, path } = requestLineOf(err, socket) ?? { method: '', path: '' };
    const id = newRequestId(method, path);
    const message =
      status === 431 ? 'request headers too large' : status === 408 ? 'request timed out' : 'malformed HTTP request';
    // The door's shape; the status stays the protocol's (a door would call any of these a 400).
    const wire = { ...doorError(path, new ApiError('invalid_question', message, { status }), id), status };
    // Logged as every other 4xx is (fastify calls this handler with the server as `this`).
    this.log.info({ request_id: id, req: { method, url: urlForLog(path) }, code: 'invalid_question', status }, 'request rejected');
    const body = JSON.stringify(wire.body);
    let head = `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n`;
    for (const [name, value] of Object.entries({ ...wire.headers, [REQUEST_ID_HEADER]: id })) head += `${name}: ${value}\r\n`;
    if (socket.writable) socket.write(`${head}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    socket.destroy();
  };
  if (status !== 408) return afterOwedResponses(socket, answer);
  // A timed-out request is not waited for: its connection has held the server long enough. An
  // answer already being written on it is cut short rather than have the 408 written into it; the
  // response object of the late request itself (nothing sent yet: its body never arrived) gets the 408.
  const inFlight = (socket as ServerSocket)._httpMessage;
  if (inFlight && inFlight.headersSent && !inFlight.writableFinished) socket.destroy();
  else answer();
}

/** Time a client has to send a whole request; also the longest a stop waits for a connection. */
const REQUEST_TIMEOUT_MS = 300_000;

/**
 * Where the API is registered: on createServer's root instance, where its hooks, error handler
 * and 404 handler cover every path of the server, or (decisionApp) in its own scope of a host's
 * app, where they cover its routes only and the host's stay as they are.
 */
type Mount = 'server' | 'scope';

/** Registers the whole API on `app`. */
async function registerApi(app: FastifyInstance, opts: DecisionAppOptions, mount: Mount): Promise<void> {
  const { service, keys } = opts;
  let draining = false;

  // 1. Every response, success or error, names its request (createServer's genReqId; a scope's own).
  if (mount === 'scope') useOwnRequestIds(app);
  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
  });
  if (mount === 'server') registerErrorHandling(app);
  else registerScopedErrorHandling(app);

  // Bodies: JSON only, as UTF-8; other content types are 400 invalid_question (errors.ts).
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody);
  app.addHook('preValidation', rejectUnreadableBody);

  // 2. OPTIONS needs no key: answered here, its body unread. 3. Authentication (request.keyId)
  // with its per-IP limit on failures, 4. the per-key rate limit.
  registerPreflight(app);
  registerAuth(app, keys, opts.rateLimit ? (opts.rateLimit.invalidKeys ?? DEFAULT_INVALID_KEY_LIMIT) : false);
  if (opts.rateLimit) registerRateLimit(app, opts.rateLimit);
  // A compressed body would reach the parsers as binary noise: refuse it by its encoding, a content
  // coding or a transfer coding before `chunked` (Node's parser undoes only `chunked`). A request
  // without a body (a probe, a GET) is answered whatever the header says.
  app.addHook('onRequest', async (request) => {
    const encoding = request.headers['content-encoding'];
    const transfer = request.headers['transfer-encoding'];
    const hasBody = transfer !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
    if (hasBody && encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      throw new ApiError('invalid_question', `request body: Content-Encoding '${encoding.slice(0, 50)}' is not supported; send the body uncompressed`, {
        status: 415,
      });
    }
    if (transfer !== undefined && transfer.split(',').some((coding) => coding.trim().toLowerCase() !== 'chunked')) {
      throw new ApiError(
        'invalid_question',
        `request body: Transfer-Encoding '${transfer.slice(0, 50)}' is not supported; send the body uncompressed, chunked or with a Content-Length`,
        { status: 415 },
      );
    }
  });

  // The named wire schemas, under namespaced ids (a host app's own schemas are shared with this
  // scope): routes point at them with ref(), /openapi.json lists them under components.schemas by
  // their names (refResolver: the name, not def-N; a host's schema keeps its own id).
  for (const [name, schema] of Object.entries(NAMED_SCHEMAS)) app.addSchema({ ...schema, $id: schemaId(name as SchemaName) });
  await app.register(swagger, {
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id !== 'string' ? `def-${i}` : json.$id.startsWith(SCHEMA_ID_PREFIX) ? json.$id.slice(SCHEMA_ID_PREFIX.length) : json.$id,
    },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Decision service API',
        version: '2026-10',
        description: 'Calibrated probabilities for typed questions about a state. Errors: {code, message, request_id}.',
      },
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearerAuth: [] }],
    },
  });

  app.addHook('preClose', async () => {
    draining = true;
  });
  // While draining, a kept-alive connection is closed after its response: the HTTP server's close
  // waits for every connection, and an idle keep-alive one would hold it for the keep-alive timeout.
  app.addHook('onSend', async (_request, reply, payload) => {
    if (draining) reply.header('connection', 'close');
    return payload;
  });
  // A request answered before its body was read to the end (a form refused at its first wrong
  // field while its file part is still arriving): the rest of the body is read and dropped, so the
  // client can finish sending it, read the answer and send its next request on the connection.
  // Left with its reader stopped mid-body, the connection would carry nothing more until the
  // keep-alive timeout reset it. (A body nobody began to read Node drops by itself.)
  app.addHook('onSend', async (request, _reply, payload) => {
    if (!request.raw.complete) {
      request.raw.unpipe();
      request.raw.resume();
    }
    return payload;
  });
  if (opts.ownsService) {
    // onClose runs after the HTTP server has closed, i.e. after every in-flight request has been answered.
    app.addHook('onClose', async () => {
      await service.close();
    });
  }

  await app.register(healthRoutes, { service, isDraining: () => draining });
  // The console's page calls /v1/... and loads /console/assets/... from the root of the site: it
  // is served only where the API is (docs/api.md, "Embedding").
  if (app.prefix === '') await app.register(consoleRoutes);
  // Large decision bodies are read off the main thread (body-thread.ts); /metrics counts them.
  const bodies = new BodyThread();
  app.addHook('onClose', async () => bodies.close());
  // Both reader threads start with the server, before it listens: where a thread cannot be made (a
  // tight `ulimit -v`), V8 ends the process, and that must happen at the start, not at the first
  // large body or batch line of a server that looked healthy (docs/api.md, Startup).
  await Promise.all([bodies.start(), startRecordThread()]);
  const metrics = registerMetrics(app, service, bodies);
  // A client that closed its connection before its answer: no response, so neither onResponse nor
  // fastify's `request completed` line sees it. One listener a request, for the log and the count.
  app.addHook('onRequest', async (request, reply) =>
    onAbandoned(reply, () => {
      logAbandoned(request, closedByStop(request.raw.socket));
      metrics.countAbandoned(request);
    }),
  );
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  await app.register(
    async (v1) => {
      // A service opened with preloadInBackground (decide serve) answers the probes while it creates
      // and loads its default model; an API request waits for that, as for a model's first load
      // (and gets the load's error, a 5xx, if it failed). Authenticated and within its rate by then.
      v1.addHook('preHandler', async () => service.whenPreloaded());
      // Every dialect (ours, System One, OpenAI's decisions; docs/compatibility.md): one service
      // path, each in its own wire shape.
      await v1.register(dialectRoutes, { service, bodyLimit: opts.bodyLimitBytes, bodies });
      await v1.register(modelRoutes, { service });

      // ---- Batch routes (src/server/routes/batches.ts) are registered HERE, in this /v1 scope, so
      // they get authentication (request.keyId), the rate limit, the error shape and the OpenAPI doc.
      // Limits and retention come from DECIDE_BATCH_* (src/batches/settings.ts). This onClose
      // runs before the root's, so the runners stop at a chunk boundary before the service closes.
      const batches = await BatchService.open({
        service,
        dataDir: opts.dataDir,
        resume: opts.batchWorker ?? true,
        log: (line) => app.log.info(line),
        warn: (line) => app.log.warn(line),
      });
      v1.addHook('onClose', async () => batches.close());
      // OpenAI's Files + Batch flow on the same jobs (docs/compatibility.md, Batches).
      const openai = await OpenAiBatchApi.open(batches, (line) => app.log.info(line));
      v1.addHook('onClose', async () => openai.close());
      await v1.register(batchRoutes, { batches, openai });
      await v1.register(fileRoutes, { openai, maxFileBytes: batches.maxFileBytes });
      await v1.register(batchValidationRoutes, { batches });
      // ----
    },
    { prefix: '/v1' },
  );
}

/**
 * The API as a plugin for a host's own fastify app. It is encapsulated, as plugins are: its
 * request ids, authentication, rate limit, body parsers, error handler and 404 answers apply to
 * its own routes only; the host's routes, parsers, error handler and 404 handler stay the host's.
 * Registered with `{ prefix: '/decisions' }` (or inside a prefixed plugin) it answers at
 * `/decisions/v1/decide`, `/decisions/healthz`, ...; the web console is served only at the root.
 * @example
 * const service = await DecisionService.open({ modelsDir: 'models' });
 * const app = Fastify();
 * await app.register(decisionApp, { prefix: '/decisions', service, keys: new ApiKeySet().add('my-key'),
 *   rateLimit: false, bodyLimitBytes: 1024 * 1024, dataDir: 'data', ownsService: true });
 * await app.listen({ port: 8080 });
 */
// Typed by name: an inferred type is printed in app.d.ts through fastify's namespace
// (`Fastify.FastifyPluginAsync`), which TypeScript's bundler resolution cannot follow.
export const decisionApp: FastifyPluginAsync<DecisionAppOptions> & { [key: symbol]: string | boolean } = Object.assign(
  async (app: FastifyInstance, opts: DecisionAppOptions) => registerApi(app, checkAppOptions(opts), 'scope'),
  { [Symbol.for('fastify.display-name')]: 'decision-app' },
);

/** createServer's: the API on the root instance itself (skip-override), covering every path of the server. */
const serverApp: FastifyPluginAsync<DecisionAppOptions> = Object.assign(
  async (app: FastifyInstance, opts: DecisionAppOptions) => registerApi(app, opts, 'server'),
  { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'decision-app' },
);

/**
 * Builds the HTTP server (not yet listening).
 * @example
 * const app = await createServer({ modelsDir: 'models', apiKeys: [process.env.MY_KEY!] });
 * await app.listen({ port: 8080, host: '127.0.0.1' });
 * // ... later: await app.close(); // drains requests, then closes the service it opened
 */
export async function createServer(given: ServerOptions = {}): Promise<FastifyInstance> {
  const options = checkServerOptions(given);
  const env = options.env ?? process.env;
  const dataDir = folderOf(DATA_FOLDER, options.dataDir, env);
  const resolvedKeys = options.keys
    ? undefined
    : asInputError(() => resolveApiKeys({ apiKeys: options.apiKeys, keysFile: options.keysFile, env, dataDir, generate: false }));
  const keys = options.keys ?? resolvedKeys!.keys;
  const rateLimit = options.rateLimit ?? asInputError(() => rateLimitFromEnv(env));
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;

  const app = Fastify({
    logger: loggerConfig(options.logger),
    genReqId,
    requestIdHeader: false,
    logController: new RequestLog(),
    bodyLimit: bodyLimitBytes,
    // Requests that reach a closing server (on a kept-alive connection) are still answered;
    // their connection is closed after the response.
    return503OnClosing: false,
    // Time to receive a whole request (headers and body) from the client: a stalled upload must
    // not hold a connection, or a shutdown, forever. Generous for large batch uploads.
    requestTimeout: REQUEST_TIMEOUT_MS,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    // A path parameter of up to this many characters reaches the route (fastify's default, 100,
    // answered a valid model id of 101 to 128 characters with a bare 400); a longer one names
    // nothing that can exist: 404 (errors.ts, frameworkErrorHandler).
    routerOptions: { maxParamLength: 1000 },
    // Node answers an HTTP/1.1 request without a Host header itself, with a bare 400 (no body, no
    // request id) that no handler here sees. Nothing here depends on the Host: such a request is
    // answered like any other, errors in the API's shape.
    http: { requireHostHeader: false },
  });
  countOwedResponses(app.server);
  // Stopping waits for the requests in flight, not for connections that carry none (a browser's
  // spare socket would hold the stop until its client dropped it), nor past the request timeout.
  app.addHook('preClose', async () => endConnectionsOwingNothing(app.server, REQUEST_TIMEOUT_MS));

  for (const warning of resolvedKeys?.warnings ?? []) app.log.warn(warning);
  let service = options.service;
  if (!service) {
    service = await DecisionService.open({
      modelsDir: folderOf(MODELS_FOLDER, options.modelsDir, env),
      threads: options.threads,
      provider: options.provider,
      runtime: { engine: options.engine },
      preloadInBackground: options.preloadInBackground,
      log: (line) => app.log.info(line),
      warn: (line) => app.log.warn(line),
    });
  }
  try {
    await app.register(serverApp, {
      service,
      keys,
      rateLimit,
      bodyLimitBytes,
      dataDir,
      batchWorker: options.batchWorker,
      ownsService: !options.service,
    });
    await app.ready();
  } catch (err) {
    if (!options.service) await service.close();
    throw err;
  }
  servedBy.set(app, service);
  return app;
}

/** The service each createServer() server answers with: whenPreloaded() reads it. */
const servedBy = new WeakMap<FastifyInstance, DecisionService>();

/**
 * Settles once the service of a server built by createServer() has created and loaded its preload
 * (at once unless `preloadInBackground`); rejects with the error that stopped it, the one
 * createServer() would have thrown without that option.
 * @example
 * const app = await createServer({ modelsDir: 'models', preloadInBackground: true });
 * await app.listen({ port: 8080 }); // /healthz answers now, /readyz is 503 until the load ends
 * await whenPreloaded(app).catch(async (err) => { await app.close(); throw err; });
 */
export function whenPreloaded(app: FastifyInstance): Promise<void> {
  const service = servedBy.get(app);
  if (!service) return Promise.reject(new EngineError('ERR_INPUT', 'whenPreloaded: not a server built by createServer()'));
  return service.whenPreloaded();
}

/**
 * What createServer reads from its options and the environment (the keys, the rate limits): no key
 * at all, a bad one or a bad DECIDE_* value is the caller's to fix, ERR_INPUT as a bad option is.
 */
function asInputError<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw new EngineError('ERR_INPUT', `createServer: ${(err as Error).message}`, { cause: err });
  }
}
