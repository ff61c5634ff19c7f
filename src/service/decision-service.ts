/**
 * DecisionService: the decision API in-process. The HTTP server, the batch runner and library users
 * all go through it, so every surface answers the same request with the same response.
 *
 * It is the service boundary of the error path: below it the engine and the models throw
 * EngineError; every public method here throws (or returns) ApiError, through toApiError().
 *
 * This file answers requests (decide, decideNormalized, decideRecords) and owns open() and close();
 * the model listing is model-catalog.ts's, the loaded runtimes and their replacement runtime-pool.ts's.
 */
import { setMaxListeners } from 'node:events';

import { ApiError, toApiError } from '../api/errors.js';
import { readJsonBodyText, unreadableBodyError } from '../api/json-text.js';
import { newDecisionId } from '../api/request-ids.js';
import { EngineError } from '../errors/engine-error.js';
import { decideResponse } from '../api/decide/index.js';
import type { DecideResponse, ModelEntry, ModelListing } from '../api/schemas.js';
import { validateDecideRequest, type NormalizedDecideRequest, type ValidationLimits } from '../api/validate.js';
import type { ModelRuntime, RawQuestionScore, ScoredRequest } from '../runtime/model-runtime.js';
import type { Priority } from '../runtime/scheduler.js';
import type { EngineCounters } from '../engine/engine.js';
import type { DecisionResult } from '../domain/decision.js';
import { DEFAULT_MODEL_ALIAS, ensureDefaultModel } from '../models/default-model.js';
import { ModelRegistry } from '../models/registry.js';
import { ModelCatalog } from './model-catalog.js';
import { RuntimePool } from './runtime-pool.js';
import { checkPin, type VersionPin } from './version-pin.js';
import { checkDecideContext, checkNormalizedRequest, type DecideContext } from './decide-context.js';
import { checkServiceOptions, type DecisionServiceOptions } from './service-options.js';

export type { DecisionServiceOptions };

export type { ModelEntry, ModelListing };

export interface ServiceMetrics {
  models: Array<{
    id: string;
    counters: EngineCounters;
    /** Jobs waiting in the scheduler. */
    queue: { live: number; batch: number };
    /** Texts waiting for the model's tokenizer thread or in it. */
    tokenizerQueue: { live: number; batch: number };
    calls: number;
  }>;
}

export type { DecisionResult };

export type { DecideContext };

/**
 * One record's outcome in decideRecords(). `raw` holds the uncalibrated label logits behind the
 * answers (what `decide calibrate` fits on); result rows never include it.
 */
export type RecordOutcome = { ok: true; result: DecisionResult; raw?: RawQuestionScore[] } | { ok: false; error: ApiError };

/** The domain result of one scored request; each wire dialect renders it (src/api/). */
function decisionResult(id: string, model: string, scored: ScoredRequest): DecisionResult {
  return { id, model, answers: scored.answers, inputTokens: scored.inputTokens, cachedTokens: scored.cachedTokens, outputTokens: scored.outputTokens };
}

/** A decide body given as JSON text, read as the HTTP door reads one (api/json-text.ts). Throws ApiError. */
function bodyOfText(text: string): unknown {
  const read = readJsonBodyText(text);
  if (!read.ok) throw unreadableBodyError(read);
  return read.value;
}

/**
 * The decision service in-process: resolves model ids and aliases, validates requests as the API
 * does, renders the prompts, scores through the engines' scheduler and applies each version's
 * calibration. HTTP, batches, the CLI and the library all go through it. Bad input throws an ApiError.
 * @example
 * const svc = await DecisionService.open({ modelsDir: 'models' });
 * const res = await svc.decide({ model: 'svc-alpha', state: 'The parcel arrived broken.',
 *   questions: { refund: { type: 'noul', instructions: 'Does the customer want a refund?' } } });
 * await svc.close();
 */
export class DecisionService {
  /** close() has begun: no new call is taken. */
  private closing = false;
  /** Calls in progress (tracked()), which close() waits for. */
  private readonly calls = new Set<Promise<unknown>>();
  /** open()'s preload (creating the default model, loading the preload list): see whenPreloaded(). */
  private preloading: Promise<void> = Promise.resolve();
  /** The loaded runtimes, their replacement when a model's directory changes, their leases. */
  private readonly pool: RuntimePool;
  /** What ids and aliases name, and the model listing. */
  private readonly catalog: ModelCatalog;

  private constructor(
    readonly registry: ModelRegistry,
    private readonly options: DecisionServiceOptions,
  ) {
    this.pool = new RuntimePool(registry, options, () => this.preloading);
    this.catalog = new ModelCatalog(registry, (id) => this.pool.isLoaded(id));
  }

  /**
   * Opens the service: finds the models, creates the embedded default if needed, loads the preload
   * list. With `preloadInBackground` it returns once the options are checked and does the rest in
   * the background: the calls that need a model wait for it (whenPreloaded()).
   * @example
   * const svc = await DecisionService.open({ modelsDir: 'models' });
   * const res = await svc.decide({ model: 'svc-alpha', state: 'The parcel arrived broken.',
   *   questions: { refund: { type: 'noul', instructions: 'Does the customer want a refund?' } } });
   * console.log(res.answers.refund.probs.yes);
   * await svc.close();
   */
  static async open(options: DecisionServiceOptions = {}): Promise<DecisionService> {
    const modelsDir = checkServiceOptions(options);
    if (!options.preloadInBackground) {
      if (options.ensureDefaultModel ?? true) await ensureDefaultModel(modelsDir, options.log);
      const service = new DecisionService(new ModelRegistry(modelsDir, { log: options.log }), { ...options, modelsDir });
      await service.preload();
      return service;
    }
    // The registry is made before the default model is: rescanned once that is there.
    const service = new DecisionService(new ModelRegistry(modelsDir, { log: options.log }), { ...options, modelsDir });
    service.preloading = (async () => {
      if (options.ensureDefaultModel ?? true) {
        await ensureDefaultModel(modelsDir, options.log, { offThread: true });
        service.registry.rescan();
      }
      await service.preload();
    })();
    // Its failure is whenPreloaded()'s and every model call's to report, not an unhandled rejection.
    service.preloading.catch(() => undefined);
    return service;
  }

  /** Loads open()'s preload list: the default alias when installed, unless `preload` names others. */
  private async preload(): Promise<void> {
    const { preload } = this.options;
    const ids = preload ?? (this.registry.list().length ? [DEFAULT_MODEL_ALIAS] : []);
    for (const id of ids) {
      try {
        await this.pool.load(id);
      } catch (err) {
        if (preload) throw err;
        // The default alias may simply not be installed in a custom models directory.
        if (!(err instanceof ApiError && err.code === 'not_found')) throw err;
      }
    }
  }

  /**
   * Settles once open()'s work is done: at once, unless it was opened with `preloadInBackground`;
   * then when the default model is created and the preload list loaded, or rejected with the error
   * open() would have thrown.
   */
  whenPreloaded(): Promise<void> {
    return this.preloading;
  }

  /** False once close() has begun: such a service takes no call (a server refuses to be built on it). */
  get isOpen(): boolean {
    return !this.closing;
  }

  /**
   * True once at least one model is loaded and close() has not begun. The models removed or
   * replaced on disk are retired first, so that readiness and the list metrics() gives agree.
   */
  isReady(): boolean {
    this.pool.retireReplaced();
    return !this.closing && this.pool.loadedRuntimes.size > 0;
  }

  /** The validation limits this service was opened with (undefined: the defaults); every door parses with them. */
  get validationLimits(): Partial<ValidationLimits> | undefined {
    return this.options.validation;
  }

  /**
   * Answers one decide request (the body of POST /v1/decide) with the body POST /v1/decide sends.
   * `body` is the request object, or its JSON text, read as the HTTP door reads a body: the order
   * its keys are written in is the order options reach the model, where an object parsed by
   * JSON.parse lists integer-like keys ("2", "10") first. Throws ApiError (.code, .status).
   * @example
   * const res = await svc.decide({ model: 'svc-alpha', state: { text: 'Where is my order?' },
   *   questions: { topic: { type: 'choice', instructions: 'Topic?', criteria: { shipping: 'Shipping', billing: 'Billing' } } } });
   * const same = await svc.decide(await readFile('request.json', 'utf8'));
   */
  async decide(body: unknown, context?: DecideContext): Promise<DecideResponse> {
    const arrivedAt = performance.now();
    const checked = checkDecideContext(context);
    const request = validateDecideRequest(typeof body === 'string' ? bodyOfText(body) : body, this.options.validation);
    return decideResponse(await this.tracked(() => this.answer(request, checked, arrivedAt)));
  }

  /**
   * Answers an already-validated domain request with the domain result: what every wire dialect
   * maps onto and renders (src/api/dialects.ts), so the same question through any door is scored
   * by the same path. Throws ApiError.
   * @example
   * const request = validateDecideRequest(body); // throws ApiError for a bad body
   * const result = await svc.decideNormalized(request);
   * console.log(result.answers);
   */
  async decideNormalized(request: NormalizedDecideRequest, context?: DecideContext): Promise<DecisionResult> {
    const arrivedAt = performance.now();
    const checked = checkDecideContext(context);
    checkNormalizedRequest(request);
    return this.tracked(() => this.answer(request, checked, arrivedAt));
  }

  /**
   * A live call's queue wait limit (the scheduler's maxQueueWaitMs) counts from its arrival
   * (`arrivedAt`, performance.now()), so it covers tokenizing (in the model's one tokenizer thread,
   * where it waits behind one batch record at most); a model's load is not counted.
   */
  private answer(request: NormalizedDecideRequest, context: DecideContext, arrivedAt: number): Promise<DecisionResult> {
    return this.pool.withRuntime(request.model, (runtime) => this.answerOn(runtime, request, context, arrivedAt));
  }

  private async answerOn(runtime: ModelRuntime, request: NormalizedDecideRequest, context: DecideContext, arrivedAt: number): Promise<DecisionResult> {
    const priority = context.priority ?? 'live';
    const since = Math.max(arrivedAt, runtime.readyAt);
    let scored: ScoredRequest | undefined;
    // Given up on (refused for its wait, a question or state refused, its client gone): the texts it
    // still has queued for the tokenizer are dropped, not tokenized for nobody ahead of others.
    const givenUp = new AbortController();
    const signal = context.signal ? AbortSignal.any([context.signal, givenUp.signal]) : givenUp.signal;
    // Each of the request's tokenizer calls listens on it until it settles: one per question, up to
    // 64 at once, past the 10 after which Node warns of a leak on stderr (not a JSON log line).
    setMaxListeners(0, signal);
    try {
      const preparing = runtime.prepare(request, priority, context.cacheScope, signal);
      const prepared = await (priority === 'live' ? runtime.scheduler.withinQueueWait(preparing, since) : preparing);
      context.signal?.throwIfAborted();
      [scored] = await runtime.score([prepared], priority, context.signal, since);
    } catch (err) {
      givenUp.abort(err);
      // An abort is the caller's own: its reason as given (an AbortError by default), not an API error.
      if (context.signal?.aborted && err === context.signal.reason) throw err;
      throw toApiError(err);
    }
    return decisionResult(context.requestId ?? newDecisionId(), runtime.id, scored!);
  }

  /**
   * Answers many already-validated requests for one model in ONE scheduler job (batch work).
   * A record that fails on its own (e.g. state too long) gets its error; the rest are answered.
   * `pin` (one per batch run) holds the run's calls to the loaded version its first call used:
   * when the model's directory was replaced since, this throws ModelChangedError (version-pin.ts).
   * `cacheScope`: as DecideContext's (a batch job passes its owner's key id).
   */
  async decideRecords(modelId: string, requests: NormalizedDecideRequest[], priority: Priority = 'batch', pin?: VersionPin, cacheScope?: string): Promise<RecordOutcome[]> {
    return this.tracked(() =>
      this.pool.withRuntime(modelId, (runtime) => {
        checkPin(pin, runtime.id, runtime);
        return this.answerRecordsOn(runtime, requests, priority, cacheScope);
      }),
    );
  }

  private async answerRecordsOn(runtime: ModelRuntime, requests: NormalizedDecideRequest[], priority: Priority, cacheScope: string | undefined): Promise<RecordOutcome[]> {
    const outcomes: RecordOutcome[] = new Array(requests.length);
    const prepared: Array<{ index: number; value: Awaited<ReturnType<ModelRuntime['prepare']>> }> = [];
    await Promise.all(
      requests.map(async (request, index) => {
        try {
          prepared.push({ index, value: await runtime.prepare(request, priority, cacheScope) });
        } catch (err) {
          outcomes[index] = { ok: false, error: toApiError(err) };
        }
      }),
    );
    prepared.sort((a, b) => a.index - b.index);
    if (prepared.length > 0) {
      let scored: ScoredRequest[];
      try {
        scored = await runtime.score(
          prepared.map((p) => p.value),
          priority,
        );
      } catch (err) {
        throw toApiError(err);
      }
      prepared.forEach((p, i) => {
        outcomes[p.index] = { ok: true, result: decisionResult(newDecisionId(), runtime.id, scored[i]!), raw: scored[i]!.raw };
      });
    }
    return outcomes;
  }

  /**
   * Checks a request's questions against a model as scoring will, without its state: throws 400
   * invalid_question naming a question the model cannot label or that cannot fit its context even
   * with an empty state (ModelRuntime.checkQuestions). A batch's dry run checks each record so.
   */
  async checkQuestions(modelId: string, request: NormalizedDecideRequest): Promise<void> {
    const runtime = await this.runtime(modelId);
    try {
      await runtime.checkQuestions(request.questions);
    } catch (err) {
      throw toApiError(err);
    }
  }

  /** Resolves an id or alias to the dated id, or throws 404 not_found. */
  resolveModel(id: string): string {
    return this.catalog.resolve(id).id;
  }

  /**
   * The content fingerprint (models/model-fingerprint.ts) of the installed copy of a model id or
   * alias, which runtime() loads (a directory changed since the last load is loaded again). Throws
   * 404 not_found.
   */
  modelFingerprint(id: string): string {
    return this.catalog.fingerprint(id);
  }

  /**
   * Every installed model as GET /v1/models lists it (ours with OpenAI's Model fields, and System
   * One's `models` beside them), after a rescan of the models directory.
   */
  listModels(): ModelListing {
    return this.catalog.list();
  }

  /** One model (id or alias) as GET /v1/models/{id} shows it; throws 404 not_found. */
  describeModel(id: string): ModelEntry {
    return this.catalog.describe(id);
  }

  /**
   * The loaded models' counters and queues. Answers at once: a model still loading is left out (not
   * waited for), and reading an engine's counters never waits for its running call.
   */
  async metrics(): Promise<ServiceMetrics> {
    const models: ServiceMetrics['models'] = [];
    if (this.pool.isClosed) return { models };
    this.pool.retireReplaced();
    for (const [id, runtime] of this.pool.loadedRuntimes) {
      const stats = runtime.scheduler.getStats();
      models.push({ id, counters: runtime.engine.counters(), queue: { live: stats.liveQueued, batch: stats.batchQueued }, tokenizerQueue: runtime.tokenizerQueue, calls: stats.calls });
    }
    return { models };
  }

  /**
   * Loads (once) and returns the runtime of a model id or alias, after open()'s preload (a model
   * may not be installed before it). Throws ApiError (404 not_found, 500; the preload's error).
   */
  runtime(id: string): Promise<ModelRuntime> {
    return this.pool.runtime(id);
  }

  /**
   * Runs one call of decide(), decideNormalized() or decideRecords() so that close() waits for it:
   * a call still tokenizing has not reached a scheduler yet. Once close() has begun, new calls are
   * refused (server_error, "shutting down").
   */
  private tracked<T>(call: () => Promise<T>): Promise<T> {
    if (this.closing) return Promise.reject(toApiError(new EngineError('ERR_ENGINE_CLOSED', 'the service is closing')));
    const work = call();
    this.calls.add(work);
    const done = () => this.calls.delete(work);
    work.then(done, done);
    return work;
  }

  /** Waits for the calls made before it and their queued work, then releases every model. Idempotent. */
  async close(): Promise<void> {
    this.closing = true;
    // A background preload still loading: its runtime is closed with the others by the pool.
    await Promise.allSettled([...this.calls, this.preloading]);
    await this.pool.close();
  }
}

