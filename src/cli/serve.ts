/**
 * `decide serve`: runs the HTTP API until SIGTERM, SIGINT, SIGHUP or SIGUSR2 (signal-exit.ts), then
 * stops accepting connections, answers the requests in flight, closes the models and exits 0. It listens before the default
 * model is created and loaded (the probes answer meanwhile); a load that fails exits 1.
 *
 * stdout gets the lines meant for the operator (the generated API key, once; `decide: listening on
 * http://HOST:PORT`); the JSON log lines go to stderr.
 */
import net from 'node:net';

import { describeError } from '../api/errors.js';
import { databaseUrl } from '../batches/open-stores.js';
import { BATCH_SETTINGS_HELP, leaseSeconds, LEASE_SECONDS, resolveBatchSettings } from '../batches/settings.js';
import { blankIsUnset, DATA_FOLDER, folderDefaultText, MODELS_FOLDER } from '../support/env-path.js';
import { exitNow } from '../engine/native.js';
import { resolveApiKeys } from '../server/api-keys.js';
import { createServer, whenPreloaded } from '../server/app.js';
import { hasDefaultModel } from '../models/default-model.js';
import { DEFAULT_INVALID_KEY_LIMIT, DEFAULT_RATE_LIMIT, rateLimitFromEnv } from '../server/rate-limit.js';
import { LOG_LEVELS } from '../server/server-options.js';
import { addressSpaceProblem } from './address-space.js';
import { commandError, intArg, parseCommand } from './args.js';
import { dirOption, folderProblem } from './dir-options.js';
import { ENGINE_FLAGS, ENGINE_FLAGS_HELP, engineOptionsFromFlags } from './engine-flags.js';
import { onGracefulStop, type StopSignal } from './signal-exit.js';

// The defaults this command's parser and its help both read.
const SERVE_DEFAULTS = Object.freeze({ port: 8080, host: '127.0.0.1', logLevel: 'info' });

const HELP = `usage: decide serve [options]

options:
  --port N          port to listen on (env PORT; default ${SERVE_DEFAULTS.port}; 0 = any free port); a port in
                    use or a host that does not resolve exits 1 before a key is made
  --host HOST       address to bind (default ${SERVE_DEFAULTS.host}; 0.0.0.0 for every interface; an empty
                    value is refused)
  --data-dir DIR    service state: generated API key, batch jobs, uploaded files
                    (${folderDefaultText(DATA_FOLDER)})
  --models-dir DIR  model directories (${folderDefaultText(MODELS_FOLDER)})
  --log-level L     fatal, error, warn, info, debug, trace or silent (default ${SERVE_DEFAULTS.logLevel})
  --no-worker       serve only: this process works on no batch chunk (needs DECIDE_DATABASE_URL;
                    \`decide worker\` processes do the work)
  -h, --help        this text

${ENGINE_FLAGS_HELP}
environment:
  DECIDE_API_KEYS          comma-separated API keys (or sha256:<hex> hashes)
  DECIDE_API_KEYS_FILE     file with one key (or sha256:<hex>) per line, # comments
                           (neither set: a key is created in <data-dir>/api-key and printed once)
  DECIDE_RATE_LIMIT_RPS    requests per second per key (default ${DEFAULT_RATE_LIMIT.requestsPerSecond})
  DECIDE_RATE_LIMIT_BURST  burst per key (default ${DEFAULT_RATE_LIMIT.burst})
  DECIDE_INVALID_KEY_RPS, DECIDE_INVALID_KEY_BURST  failed authentications per client address
                           (default ${DEFAULT_INVALID_KEY_LIMIT.requestsPerSecond} per second, burst ${DEFAULT_INVALID_KEY_LIMIT.burst}; docs/api.md, Rate limits)
  DECIDE_DATABASE_URL      postgres://... : batch jobs, input and results in Postgres, shared with
                           other API hosts and \`decide worker\`s (unset: SQLite in <data-dir>)
  DECIDE_BATCH_LEASE_SECONDS  seconds a batch chunk stays taken without a heartbeat (default ${LEASE_SECONDS.default}, min ${LEASE_SECONDS.min})
${BATCH_SETTINGS_HELP}`;

const OPTIONS = {
  port: { type: 'string' },
  host: { type: 'string' },
  'data-dir': { type: 'string' },
  'models-dir': { type: 'string' },
  ...ENGINE_FLAGS,
  'log-level': { type: 'string' },
  'no-worker': { type: 'boolean' },
} as const;


/** Why nothing can listen on `host`:`port` now (EADDRINUSE, ENOTFOUND, ...), or undefined: a trial bind, closed at once. */
function listenProblem(port: number, host: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const trial = net.createServer();
    trial.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    trial.listen({ port, host, exclusive: true }, () => trial.close(() => resolve(undefined)));
  });
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand('serve', argv, HELP, OPTIONS);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  // Before anything else: a limit that cannot hold the server's threads would end it mid-start.
  // With the Postgres store it needs more (address-space.ts); a bad URL is refused below.
  const postgres = blankIsUnset(process.env.DECIDE_DATABASE_URL) !== undefined;
  const tooSmall = addressSpaceProblem(postgres ? 'servePostgres' : 'serve');
  if (tooSmall) return commandError('serve', postgres ? `${tooSmall} (the Postgres batch store, DECIDE_DATABASE_URL, needs it)` : tooSmall, 1);

  // The message names where the bad value came from: the flag, else the variable. An empty PORT
  // is unset, as every other empty setting (`PORT=` in a unit file, `PORT: ${PORT}` in a compose
  // file with PORT unset).
  const envPort = blankIsUnset(process.env.PORT);
  const portFrom = values.port === undefined && envPort !== undefined ? 'PORT' : '--port';
  const port = intArg(values.port ?? envPort ?? String(SERVE_DEFAULTS.port), portFrom, 0, 65535);
  if (typeof port === 'string') return commandError('serve', port);
  // An empty --host (`--host "$HOST"` with HOST unset) would bind every interface: Node's listen
  // reads '' as "any address".
  if (values.host !== undefined && values.host.trim() === '') {
    return commandError('serve', `--host must name an address, got an empty value (leave it out for ${SERVE_DEFAULTS.host}; 0.0.0.0 binds every interface)`);
  }
  const host = values.host ?? SERVE_DEFAULTS.host;
  const engine = engineOptionsFromFlags(values);
  if (typeof engine === 'string') return commandError('serve', engine);
  const logLevel = values['log-level'] ?? SERVE_DEFAULTS.logLevel;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) return commandError('serve', `--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  const data = dirOption(values['data-dir'], '--data-dir', DATA_FOLDER);
  if ('problem' in data) return commandError('serve', data.problem);
  const models = dirOption(values['models-dir'], '--models-dir', MODELS_FOLDER);
  if ('problem' in models) return commandError('serve', models.problem);
  const { dir: dataDir } = data;
  const { dir: modelsDir } = models;
  const batchWorker = !values['no-worker'];
  let url;
  try {
    url = databaseUrl({});
  } catch (err) {
    return commandError('serve', (err as Error).message);
  }
  if (!batchWorker && url === undefined) {
    return commandError('serve', '--no-worker needs DECIDE_DATABASE_URL: with the embedded SQLite batch store this process is the only one that can run batches');
  }
  // The environment's settings are read (and refused) before a key is made or anything loads, by
  // the same parsers the server uses.
  try {
    rateLimitFromEnv(process.env);
    resolveBatchSettings({ env: process.env });
    if (url !== undefined) leaseSeconds(process.env);
  } catch (err) {
    return commandError('serve', (err as Error).message);
  }
  // The folders too: the key is written into the data dir, the default model into the models dir
  // when it is not there yet (a read-only models dir that holds it serves).
  const folder =
    folderProblem(dataDir, data.from, { write: true }) ??
    folderProblem(modelsDir, models.from, { write: !hasDefaultModel(modelsDir) });
  if (folder) return commandError('serve', folder);

  // A port in use or a host that does not resolve is found before a key is made ("shown only this
  // once", for a server that would never run) or a model loads. Another process can still take
  // the port in between; then the listen below fails the same way, only later.
  const unusable = await listenProblem(port, host);
  if (unusable) return commandError('serve', `cannot listen on ${host}:${port}: ${unusable}`, 1);

  let resolved;
  try {
    resolved = resolveApiKeys({ env: process.env, dataDir, generate: true });
  } catch (err) {
    return commandError('serve', describeError(err), 1);
  }
  for (const warning of resolved.warnings) process.stderr.write(`decide serve: warning: ${warning}\n`);
  if (resolved.generated?.created) {
    process.stdout.write(
      `decide: created an API key (shown only this once; also saved in ${resolved.generated.path}, mode 0600):\n` +
        `${resolved.generated.key}\n`,
    );
  } else if (resolved.generated) {
    process.stdout.write(`decide: using the API key in ${resolved.generated.path}\n`);
  }

  // The default model is created and loaded after the server listens: the probes answer during a
  // long first load (/readyz 503 until it ends) and API requests wait for it.
  let app;
  try {
    app = await createServer({
      modelsDir,
      dataDir,
      engine,
      batchWorker,
      preloadInBackground: true,
      keys: resolved.keys,
      logger: { level: logLevel, stream: process.stderr },
    });
    await app.listen({ port, host });
  } catch (err) {
    await app?.close().catch(() => undefined);
    return commandError('serve', describeError(err), 1);
  }
  const server = app;
  // A load that fails ends the server, as it did when the load came before the listen: the requests
  // that waited for it are answered with its error (a 5xx in their API's shape), then the listener
  // is closed.
  const loadFailed = new Promise<number>((resolve) => {
    whenPreloaded(server).catch(async (err: unknown) => {
      await server.close().catch(() => undefined);
      // The API's message of a load failure is fixed ("ONNX Runtime could not be loaded"); the causes say which piece and the fix.
      resolve(commandError('serve', describeError(err), 1));
    });
  });

  // The handlers go in before the line that says the server is up: a supervisor may send SIGTERM
  // the moment it reads it, and without a handler SIGTERM (SIGHUP, SIGUSR2) kills at once, without
  // the drain.
  const stopped = new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: StopSignal) => {
      if (stopping) {
        // A second signal: the operator does not want to wait for the drain.
        process.stderr.write(`decide serve: ${signal} again, exiting without draining\n`);
        // process.exit() would first wait for the forward pass in flight (libuv joins its threads).
        exitNow(1);
      }
      stopping = true;
      app.log.info({ signal }, 'shutting down: no new connections, finishing requests in flight');
      app.close().then(
        () => {
          app.log.info('stopped');
          resolve(0);
        },
        (err: unknown) => {
          app.log.error({ err }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    onGracefulStop(stop);
  });

  const address = app.server.address();
  const shown =
    typeof address === 'object' && address
      ? `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
      : String(address);
  process.stdout.write(`decide: listening on http://${shown}\n`);
  return Promise.race([stopped, loadFailed]);
}
