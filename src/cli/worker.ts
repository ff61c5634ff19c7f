/**
 * `decide worker`: works on batch chunks from the Postgres batch store (DECIDE_DATABASE_URL) and
 * serves nothing. Any number of workers, on any hosts, share one database with the API hosts
 * (`decide serve`, with or without --no-worker). SIGTERM, SIGINT, SIGHUP or SIGUSR2 (signal-exit.ts):
 * takes no more chunks, finishes and commits the ones in flight, closes the models and exits 0; a
 * worker killed outright loses nothing (its chunks are taken again when their lease lapses). Under
 * an address-space limit too small for it, it refuses to start (address-space.ts).
 *
 * stdout gets `decide: worker ready` once the schema is current and the queue is being polled;
 * the log lines go to stderr, the first of them the models this worker serves. A worker never
 * creates a model (a mistyped --models-dir must not fill itself with a random-weights default);
 * it takes only the chunks of models it has (pg/chunk-worker.ts), and the others wait for a
 * worker that has them.
 */
import { describeError } from '../api/errors.js';
import { startRecordThread } from '../batches/record-thread.js';
import { leaseSeconds, LEASE_SECONDS, resolveBatchSettings } from '../batches/settings.js';
import { exitNow } from '../engine/native.js';
import { databaseUrl, openBatchStore } from '../batches/open-stores.js';
import { DecisionService } from '../service/decision-service.js';
import { addressSpaceProblem } from './address-space.js';
import { commandError, parseCommand } from './args.js';
import { dirOption } from './dir-options.js';
import { folderDefaultText, MODELS_FOLDER } from '../support/env-path.js';
import { ENGINE_FLAGS, ENGINE_FLAGS_HELP, engineOptionsFromFlags } from './engine-flags.js';
import { onGracefulStop, type StopSignal } from './signal-exit.js';

const HELP = `usage: decide worker [options]

Works on the batch chunks of the Postgres batch store; serves no HTTP.

options:
  --models-dir DIR  model directories (${folderDefaultText(MODELS_FOLDER)}). The worker takes
                    the chunks of the models installed here (it says which at start); chunks of
                    other models wait for a worker that has them. Nothing is ever created here
  -h, --help        this text

${ENGINE_FLAGS_HELP}
environment:
  DECIDE_DATABASE_URL         postgres://user:password@host:port/database (required)
  DECIDE_BATCH_LEASE_SECONDS  seconds a chunk stays taken without a heartbeat from its worker
                              (default ${LEASE_SECONDS.default}, min ${LEASE_SECONDS.min}); a killed worker's chunk is taken again after it
  (Chunk sizes are fixed by the API host that creates a batch: DECIDE_BATCH_CHUNK_* there.)

SIGTERM, Ctrl-C, SIGHUP (a closed terminal) or SIGUSR2: takes no more chunks, finishes and commits
the ones in flight, and exits 0 (a second signal exits 1 at once; the chunks in flight are taken
again when their lease lapses). Under an address-space limit (ulimit -v) below what it needs, it
refuses to start (exit 1).
`;

const OPTIONS = {
  'models-dir': { type: 'string' },
  ...ENGINE_FLAGS,
} as const;

/** The log line naming the models this worker serves (or saying it serves none yet). */
function servedModels(service: DecisionService, modelsDir: string): string {
  const models = service.registry.list();
  if (models.length === 0) {
    return `decide worker: no model is installed in ${modelsDir}: this worker takes no chunk until one is (check --models-dir)`;
  }
  const aliases = Object.entries(service.registry.aliases());
  const shown = models.filter((m) => !m.broken).map((m) => {
    const names = aliases.filter(([, id]) => id === m.id).map(([alias]) => alias);
    return names.length > 0 ? `${m.id} (${names.join(', ')})` : m.id;
  });
  // A version listed as broken (GET /v1/models says why) takes no chunk here: named apart.
  const broken = models.filter((m) => m.broken).map((m) => `${m.id} (${service.registry.shownText(m.broken!)})`);
  const serving = shown.length > 0 ? `serving the models in ${modelsDir}: ${shown.join(', ')}` : `no model in ${modelsDir} can be served: this worker takes no chunk until one can`;
  return `decide worker: ${serving}${broken.length > 0 ? `; broken, not served: ${broken.join('; ')}` : ''}`;
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand('worker', argv, HELP, OPTIONS);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  // Before anything else: a limit that cannot hold the worker's threads would end it at a chunk.
  const tooSmall = addressSpaceProblem('worker');
  if (tooSmall) return commandError('worker', tooSmall, 1);
  const engine = engineOptionsFromFlags(values);
  if (typeof engine === 'string') return commandError('worker', engine);
  let url;
  try {
    url = databaseUrl({});
  } catch (err) {
    return commandError('worker', (err as Error).message);
  }
  if (url === undefined) {
    return commandError('worker', 'DECIDE_DATABASE_URL is not set: a worker takes its chunks from the Postgres batch store (postgres://...)');
  }
  const models = dirOption(values['models-dir'], '--models-dir', MODELS_FOLDER);
  if ('problem' in models) return commandError('worker', models.problem);
  const modelsDir = models.dir;
  let settings;
  try {
    // Read (and refused) before anything loads, by the parsers the store uses again.
    settings = resolveBatchSettings();
    leaseSeconds(process.env);
  } catch (err) {
    return commandError('worker', (err as Error).message);
  }
  const log = (line: string) => process.stderr.write(`${line}\n`);

  let service: DecisionService | undefined;
  let store;
  try {
    // The thread that reads large lines starts now, not at a chunk's first one: a limit that
    // cannot hold it ends the process here, not mid-chunk (address-space.ts).
    await startRecordThread();
    // No default model, no preload: a worker serves what is installed, and loads a model with its first chunk.
    service = await DecisionService.open({ modelsDir, runtime: { engine }, log, ensureDefaultModel: false, preload: [] });
    log(servedModels(service, modelsDir));
    store = await openBatchStore({ databaseUrl: url }, { settings, service, work: true, log });
  } catch (err) {
    await service?.close().catch(() => undefined);
    return commandError('worker', describeError(err), 1);
  }
  const opened = { service, store };
  // Handlers before the ready line: a supervisor may send SIGTERM the moment it reads it, and
  // without a handler SIGTERM (SIGHUP, SIGUSR2) kills at once, the chunks in flight left to their lease.
  const stopped = new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: StopSignal) => {
      if (stopping) {
        process.stderr.write(`decide worker: ${signal} again, exiting without waiting for the chunks in flight\n`);
        exitNow(1);
      }
      stopping = true;
      log(`decide worker: ${signal}: taking no more chunks, committing the ones in flight`);
      opened.store
        .close()
        .then(() => opened.service.close())
        .then(
          () => resolve(0),
          (err: unknown) => {
            log(`decide worker: shutdown failed: ${String(err)}`);
            resolve(1);
          },
        );
    };
    onGracefulStop(stop);
  });
  process.stdout.write('decide: worker ready\n');
  return stopped;
}
