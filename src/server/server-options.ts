/**
 * The options of createServer() and of the decisionApp plugin: what each one is, and the checks
 * that refuse options no server can run with (EngineError ERR_INPUT naming the option) before
 * anything is opened or created, as DecisionService.open() refuses its own: a wrong type, an
 * unknown name, a missing required option, a value out of range.
 */
import type { EngineOptions } from '../engine/engine-options.js';
import { EngineError } from '../errors/engine-error.js';
import { checkBooleanOption, checkChoiceOption, checkFolderOption, checkOptionNames, objectOption, refuseOption as refuse } from '../support/option-checks.js';
import type { DecisionService } from '../service/decision-service.js';
import { ApiKeySet } from './api-keys.js';
import { MIN_REQUESTS_PER_SECOND, type BucketOptions, type RateLimitOptions } from './rate-limit.js';

export interface LoggerOptions {
  /** pino level: fatal, error, warn, info, debug, trace, silent. Default info. */
  level?: string;
  /** Where the JSON lines go; default stdout. */
  stream?: NodeJS.WritableStream;
}

/**
 * How {@link createServer} builds the server; every field is optional (keys then come from the
 * environment or `<dataDir>/api-key`).
 * @example
 * const app = await createServer({ modelsDir: 'models', dataDir: 'data', apiKeys: ['my-key'], rateLimit: false });
 */
export interface ServerOptions {
  /** A service to serve; the caller keeps ownership (the server does not close it). */
  service?: DecisionService;
  /** For the service opened when `service` is not given; default DECIDE_MODELS_DIR (unset or empty: ./models). An empty modelsDir is refused (ERR_INPUT). */
  modelsDir?: string;
  threads?: number;
  provider?: 'cpu' | 'cuda';
  /** Every other engine option (src/engine/engine-options.ts) for the service opened here; wins over threads and provider. */
  engine?: EngineOptions;
  /**
   * The service opened here creates the default model and loads it after createServer() returns
   * (DecisionService.open's preloadInBackground; default false): a listening server answers its
   * probes meanwhile (/readyz 503) and its API requests wait for the load. whenPreloaded(app) says
   * when it is done, or why it failed.
   */
  preloadInBackground?: boolean;
  /** Work on batch jobs in this process (default true); false with the Postgres store only serves them. */
  batchWorker?: boolean;
  /** Service state (generated API key, batch jobs); default DECIDE_DATA_DIR (unset or empty: ./data). An empty dataDir is refused (ERR_INPUT), as an empty --data-dir is. */
  dataDir?: string;
  /** API keys, in clear or `sha256:<hex>`. With keysFile, replaces the environment's keys. */
  apiKeys?: string[];
  /** A keys file: one key per line, `#` comments, `sha256:<hex>` lines. */
  keysFile?: string;
  /** Already resolved keys (decide serve); wins over apiKeys/keysFile. */
  keys?: ApiKeySet;
  /**
   * Per-key token bucket; default DECIDE_RATE_LIMIT_RPS / DECIDE_RATE_LIMIT_BURST, else 100 rps,
   * burst 200. Its `invalidKeys`: failed authentications per client IP (DECIDE_INVALID_KEY_RPS /
   * _BURST, else 2 per second, burst 30). false: both off.
   */
  rateLimit?: RateLimitOptions | false;
  /** Body limit of POST /v1/decide in bytes; default 1 MiB. */
  bodyLimitBytes?: number;
  /** false (default): no logs; true: JSON lines at info on stdout. */
  logger?: boolean | LoggerOptions;
  /**
   * Environment read for the server's defaults above (DECIDE_MODELS_DIR, DECIDE_DATA_DIR, the keys,
   * the rate limits, the batch settings); default process.env. The engine options' DECIDE_*
   * variables (DECIDE_THREADS, DECIDE_PROVIDER, ...) are read by the engine from process.env: give
   * those as `threads`, `provider` and `engine` here.
   */
  env?: NodeJS.ProcessEnv;
}

/**
 * The options of {@link decisionApp}, the API as a plugin: unlike {@link createServer} it takes an
 * open service and resolved keys, and reads nothing from the environment.
 * @example
 * const options: DecisionAppOptions = { service, keys: new ApiKeySet().add('my-key'), rateLimit: false,
 *   bodyLimitBytes: 1024 * 1024, dataDir: 'data', ownsService: false };
 */
export interface DecisionAppOptions {
  /** The service to serve; closed with the app only when `ownsService`. */
  service: DecisionService;
  /** The accepted API keys (`new ApiKeySet().add(key)`; `sha256:<hex>` entries too). */
  keys: ApiKeySet;
  /** Per-key and failed-authentication limits, or false for none. */
  rateLimit: RateLimitOptions | false;
  /** Largest JSON body accepted (DEFAULT_BODY_LIMIT_BYTES in createServer). */
  bodyLimitBytes: number;
  /** Where the batch database and uploaded files live; an empty one is refused (ERR_INPUT). */
  dataDir: string;
  /** Work on batch jobs in this process (default true). */
  batchWorker?: boolean;
  /** Close the service when the app closes. */
  ownsService: boolean;
}

const SERVER_OPTION_NAMES: ReadonlyArray<keyof ServerOptions> = [
  'service', 'modelsDir', 'threads', 'provider', 'engine', 'preloadInBackground', 'batchWorker', 'dataDir', 'apiKeys', 'keysFile', 'keys', 'rateLimit', 'bodyLimitBytes', 'logger', 'env',
];
const REQUIRED_APP_OPTIONS: ReadonlyArray<keyof DecisionAppOptions> = ['service', 'keys', 'rateLimit', 'bodyLimitBytes', 'dataDir', 'ownsService'];
/** fastify hands a plugin its register options (prefix, logLevel, logSerializers) among its own. */
const APP_OPTION_NAMES: readonly string[] = [...REQUIRED_APP_OPTIONS, 'batchWorker', 'prefix', 'logLevel', 'logSerializers'];
const RATE_LIMIT_NAMES: ReadonlyArray<keyof RateLimitOptions> = ['requestsPerSecond', 'burst', 'invalidKeys'];
const BUCKET_NAMES: ReadonlyArray<keyof BucketOptions> = ['requestsPerSecond', 'burst'];
/** The log levels the server's logger takes (pino's), as `--log-level` names them. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const LOGGER_NAMES: ReadonlyArray<keyof LoggerOptions> = ['level', 'stream'];

/** Refuses createServer() options no server can run with; the service it opens checks its own (threads, provider, engine). */
export function checkServerOptions(given: unknown): ServerOptions {
  const where = 'createServer';
  const options = objectOption(given, 'options', where) as Record<keyof ServerOptions, unknown>;
  checkOptionNames(options, SERVER_OPTION_NAMES, where);
  if (options.service !== undefined) checkService(options.service, where);
  for (const name of ['modelsDir', 'dataDir'] as const) {
    if (options[name] !== undefined) checkFolderOption(options[name], name, where);
  }
  if (options.keysFile !== undefined && typeof options.keysFile !== 'string') refuse(where, 'keysFile', 'a path (a string)', options.keysFile);
  checkBooleanOption(options.batchWorker, 'batchWorker', where);
  checkBooleanOption(options.preloadInBackground, 'preloadInBackground', where);
  if (options.apiKeys !== undefined) {
    if (!Array.isArray(options.apiKeys)) refuse(where, 'apiKeys', 'an array of keys', options.apiKeys);
    options.apiKeys.forEach((key: unknown, i) => {
      if (typeof key !== 'string') refuse(where, `apiKeys[${i}]`, 'a key (a string)', key);
    });
  }
  if (options.keys !== undefined && !(options.keys instanceof ApiKeySet)) refuse(where, 'keys', 'an ApiKeySet', options.keys);
  if (options.rateLimit !== undefined) checkRateLimit(options.rateLimit, where);
  if (options.bodyLimitBytes !== undefined) checkBodyLimit(options.bodyLimitBytes, where);
  if (options.logger !== undefined && typeof options.logger !== 'boolean') {
    const logger = objectOption(options.logger, 'logger', where) as Record<keyof LoggerOptions, unknown>;
    checkOptionNames(logger, LOGGER_NAMES, `${where}: logger`);
    checkChoiceOption(logger.level, LOG_LEVELS, 'logger.level', where);
  }
  if (options.engine !== undefined) objectOption(options.engine, 'engine', where);
  if (options.env !== undefined) objectOption(options.env, 'env', where);
  return options as ServerOptions;
}

/** Refuses decisionApp options no plugin can run with: every required one must be there. */
export function checkAppOptions(given: unknown): DecisionAppOptions {
  const where = 'decisionApp';
  const options = objectOption(given, 'options', where) as Record<keyof DecisionAppOptions, unknown>;
  checkOptionNames(options, APP_OPTION_NAMES, where);
  const missing = REQUIRED_APP_OPTIONS.filter((name) => options[name] === undefined);
  if (missing.length > 0) throw new EngineError('ERR_INPUT', `${where}: missing option${missing.length > 1 ? 's' : ''} ${missing.map((n) => `'${n}'`).join(', ')}`);
  checkService(options.service, where);
  if (!(options.keys instanceof ApiKeySet)) refuse(where, 'keys', 'an ApiKeySet', options.keys);
  // As createServer refuses an empty key list: every request would be refused.
  if (options.keys.size === 0) throw new EngineError('ERR_INPUT', `${where}: keys holds no API key; add one (keys.add(key))`);
  checkRateLimit(options.rateLimit, where);
  checkBodyLimit(options.bodyLimitBytes, where);
  checkFolderOption(options.dataDir, 'dataDir', where);
  checkBooleanOption(options.batchWorker, 'batchWorker', where);
  checkBooleanOption(options.ownsService, 'ownsService', where); // never absent here: missing options are refused above
  return options as DecisionAppOptions;
}

/** An open service: what DecisionService.open() gives (any object that answers as one). */
function checkService(service: unknown, where: string): void {
  if (typeof (service as DecisionService | null)?.decideNormalized !== 'function') refuse(where, 'service', 'an open DecisionService', service);
  // Served, a closed one would answer every request with a 500.
  if ((service as DecisionService).isOpen === false) throw new EngineError('ERR_INPUT', `${where}: service must be an open DecisionService, got one that is closed`);
}

function checkRateLimit(rateLimit: unknown, where: string): void {
  if (rateLimit === false) return;
  const limit = objectOption(rateLimit, 'rateLimit', where) as Record<keyof RateLimitOptions, unknown>;
  checkOptionNames(limit, RATE_LIMIT_NAMES, `${where}: rateLimit`);
  checkBucket(limit, 'rateLimit', where);
  if (limit.invalidKeys !== undefined) {
    const invalidKeys = objectOption(limit.invalidKeys, 'rateLimit.invalidKeys', where);
    checkOptionNames(invalidKeys, BUCKET_NAMES, `${where}: rateLimit.invalidKeys`);
    checkBucket(invalidKeys as Record<keyof BucketOptions, unknown>, 'rateLimit.invalidKeys', where);
  }
}

/** A token bucket's two numbers, both required, in TokenBuckets' bounds. */
function checkBucket(bucket: Record<keyof BucketOptions, unknown>, name: string, where: string): void {
  const { requestsPerSecond: rps, burst } = bucket;
  if (!(typeof rps === 'number' && Number.isFinite(rps) && rps >= MIN_REQUESTS_PER_SECOND)) refuse(where, `${name}.requestsPerSecond`, `a number of at least ${MIN_REQUESTS_PER_SECOND}`, rps);
  if (!(typeof burst === 'number' && Number.isFinite(burst) && burst >= 1)) refuse(where, `${name}.burst`, 'a number of at least 1', burst);
}

function checkBodyLimit(value: unknown, where: string): void {
  if (!(typeof value === 'number' && Number.isInteger(value) && value >= 1)) refuse(where, 'bodyLimitBytes', 'a whole number of bytes of at least 1', value);
}
