/**
 * The loaded model runtimes and their lifecycle: loading a model once per version, noticing that
 * its directory was replaced or removed (modelStamp) and retiring the old runtime, which closes
 * only once the calls that hold it are done (runtime-leases.ts), and closing them all.
 * DecisionService owns one pool and is its only caller: its calls take a runtime through
 * withRuntime(), open()'s preload through load(), readiness and metrics read loadedRuntimes.
 * Throws ApiError, as the service does.
 */
import path from 'node:path';

import { ApiError, describeError, toApiError } from '../api/errors.js';
import { EngineError, isEngineError } from '../errors/engine-error.js';
import { graphFileIn, MODEL_FILES } from '../engine/model-dir.js';
import { ModelRuntime } from '../runtime/model-runtime.js';
import { knownLoadProblem } from '../models/model-completeness.js';
import { saturatingInt8Warning } from '../models/int8-warning.js';
import type { ModelRegistry } from '../models/registry.js';
import { statIfExists } from '../support/stat-if-exists.js';
import { resolveInstalled } from './model-catalog.js';
import { RuntimeLeases } from './runtime-leases.js';
import { engineOptionsOf, type DecisionServiceOptions } from './service-options.js';

/** Times a call looks a model up again when the runtime it got was retired (or its load met a change). */
const MAX_RUNTIME_ATTEMPTS = 5;

/** The files besides the graph whose identity (inode, mtime, size) says which model a directory holds. */
const MODEL_IDENTITY_FILES = [MODEL_FILES.config, MODEL_FILES.decision, MODEL_FILES.tokenizer];

/**
 * What model a directory holds, cheaply enough for every call (a few stats): the directory's inode
 * (removed and made again) and the identity of its config, calibration, tokenizer and graph files
 * (import, make-model and calibrate write them through renames). The graph is the one the engine
 * loads (graphFileIn: onnx/model.onnx, or an export's decoder_model_merged.onnx, ...), by name and
 * identity. Not the folders' mtimes: the engine's own derived graphs are written beside the stored
 * one at a model's first load, which changes nothing about the model.
 */
function modelStamp(dir: string): string {
  const folder = statIfExists(dir, { bigint: true });
  const identity = (file: string): string => {
    const st = statIfExists(file, { bigint: true });
    return st ? `${st.ino}:${st.mtimeNs}:${st.size}` : '-';
  };
  const graph = folder ? graphFileIn(dir) : undefined;
  const files = MODEL_IDENTITY_FILES.map((name) => identity(path.join(dir, name)));
  const graphStamp = graph === undefined ? '-' : `${path.relative(dir, graph)}:${identity(graph)}`;
  return [folder ? String(folder.ino) : '-', ...files, graphStamp].join('|');
}

/**
 * One runtime per model id, loaded on first use and replaced when the model's directory changes.
 * @example
 * const pool = new RuntimePool(registry, options, () => service.whenPreloaded());
 * const answer = await pool.withRuntime('svc-alpha', (runtime) => score(runtime));
 * await pool.close();
 */
export class RuntimePool {
  private readonly runtimes = new Map<string, Promise<ModelRuntime>>();
  /** The runtimes whose load has finished: what readiness and metrics report, without waiting on a load. */
  private readonly loaded = new Map<string, ModelRuntime>();
  private closed = false;
  /** Per runtime, what model its directory held when the load began (modelStamp). */
  private readonly loadedFrom = new Map<string, string>();
  /** The calls holding each runtime, which a retired one waits for before it closes. */
  private readonly leases = new RuntimeLeases<ModelRuntime>();

  constructor(
    private readonly registry: ModelRegistry,
    private readonly options: DecisionServiceOptions,
    /** open()'s preload, which runtime() waits for: a model may not be installed before it. */
    private readonly whenPreloaded: () => Promise<void>,
  ) {}

  /** True once close() has released every runtime. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** The runtimes loaded so far, by dated id; one still loading is not among them. */
  get loadedRuntimes(): ReadonlyMap<string, ModelRuntime> {
    return this.loaded;
  }

  /** Whether a dated id's runtime has finished loading (and was not retired since). */
  isLoaded(id: string): boolean {
    return this.loaded.has(id);
  }

  /**
   * Runs `use` with the runtime of a model id or alias held (RuntimeLeases): a retirement (its
   * directory changed) closes it only after `use` is done. A runtime retired between its load and
   * this call is not taken: the model is looked up again, so the version there now answers.
   */
  async withRuntime<T>(id: string, use: (runtime: ModelRuntime) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const runtime = await this.runtime(id);
      if (this.leases.isRetired(runtime)) {
        if (attempt < MAX_RUNTIME_ATTEMPTS) continue;
        throw new ApiError('server_error', `model ${runtime.id} kept changing while the request waited for it; retry`);
      }
      const release = this.leases.hold(runtime);
      try {
        return await use(runtime);
      } finally {
        release();
      }
    }
  }

  /**
   * Loads (once) and returns the runtime of a model id or alias, after open()'s preload (a model
   * may not be installed before it). Throws ApiError (404 not_found, 500; the preload's error).
   */
  async runtime(id: string): Promise<ModelRuntime> {
    try {
      await this.whenPreloaded();
    } catch (err) {
      throw toApiError(err);
    }
    return this.loadRuntime(id, 1);
  }

  /** As runtime(), without waiting for the preload: the preload's own loads. */
  load(id: string): Promise<ModelRuntime> {
    return this.loadRuntime(id, 1);
  }

  private async loadRuntime(id: string, attempt: number): Promise<ModelRuntime> {
    this.ensureOpen();
    const model = resolveInstalled(this.registry, id);
    if (this.runtimes.has(model.id) && this.loadedFrom.get(model.id) !== modelStamp(model.dir)) this.retire(model.id, 'its directory changed');
    let pending = this.runtimes.get(model.id);
    const stamp = pending ? this.loadedFrom.get(model.id) : modelStamp(model.dir);
    if (!pending) {
      // A version known not to serve as it is (imported without its tokenizer files, non-finite
      // weights) is refused under its dated id as under its alias: loading it could succeed (a
      // missing chat template falls back to ChatML) and answer with a prompt the model never had.
      const knownProblem = knownLoadProblem(model.dir);
      if (knownProblem !== undefined) {
        throw toApiError(new EngineError('ERR_MODEL_LOAD', `model ${model.id} cannot be served: ${this.registry.shownText(knownProblem)}`));
      }
      this.options.log?.(`loading model ${model.id} from ${model.dir}`);
      this.loadedFrom.set(model.id, stamp!);
      pending = ModelRuntime.load(model.id, model.dir, {
        ...this.options.runtime,
        maxStateTokens: this.options.maxStateTokens ?? this.options.runtime?.maxStateTokens,
        engine: engineOptionsOf(this.options),
      });
      this.runtimes.set(model.id, pending);
      const loading = pending;
      pending.then(
        (runtime) => {
          // Retired while it loaded (its directory changed): retire() closes it.
          if (this.runtimes.get(model.id) !== loading) return;
          this.loaded.set(model.id, runtime);
          const { lmHead } = runtime.engine.info;
          if (lmHead.graph === 'stock' && lmHead.reason === 'fallback') {
            this.options.log?.(`model ${model.id}: scoring with the stock graph (logits at every position, slower): ${lmHead.detail}`);
          }
          const warn = this.options.warn ?? this.options.log;
          const int8Warning = saturatingInt8Warning(model.dir);
          if (int8Warning !== undefined) warn?.(`model ${model.id}: ${int8Warning}`);
          // A forced int8 path overrides the CPU's choice: said once per load, with its caveat (a
          // u8 x s8 GEMM on a CPU without VNNI or AMX may answer wrongly).
          const { int8 } = runtime.engine.info;
          if (int8?.forced) warn?.(`model ${model.id}: int8 path ${int8.path}, ${int8.reason}`);
        },
        () => {
          if (this.runtimes.get(model.id) === loading) this.runtimes.delete(model.id);
        },
      );
    }
    try {
      return await pending;
    } catch (err) {
      if (!this.closed && isEngineError(err) && (err.code === 'ERR_MODEL_LOAD' || err.code === 'ERR_RUNTIME')) {
        // The directory changed (removed, replaced) while it loaded: what is there now decides
        // (404 when it is gone), not a load of files that were being taken away.
        if (modelStamp(model.dir) !== stamp && attempt < MAX_RUNTIME_ATTEMPTS) return this.loadRuntime(id, attempt + 1);
        this.registry.markBroken(model.id, describeError(err));
        // An alias never stays on a version that cannot load: it falls back to the newest good one.
        if (model.id !== id) return this.loadRuntime(id, 1);
      }
      throw toApiError(err);
    }
  }

  /**
   * Drops the runtimes of models removed from the models directory or replaced in it (another
   * directory under the same id, new files), so that an id never answers with a model that is no
   * longer there; the next call loads what is there now. Reads the registry's last scan without
   * rescanning (the probes call this, and a rescan may parse graphs): a removed directory is seen
   * through its stamp.
   */
  retireReplaced(): void {
    if (this.runtimes.size === 0) return;
    const installed = new Map(this.registry.list().map((m) => [m.id, m.dir]));
    for (const id of [...this.runtimes.keys()]) {
      const dir = installed.get(id);
      if (dir === undefined) this.retire(id, 'it is no longer installed');
      else if (this.loadedFrom.get(id) !== modelStamp(dir)) this.retire(id, 'its directory changed');
    }
  }

  /** Forgets a model's runtime; it is closed once the calls that hold it are done. */
  private retire(id: string, why: string): void {
    const pending = this.runtimes.get(id);
    this.runtimes.delete(id);
    this.loaded.delete(id);
    this.loadedFrom.delete(id);
    this.options.log?.(`unloading model ${id}: ${why}`);
    // Closed once the calls holding it (tokenizing, or queued on its engine) are done.
    pending?.then(
      (runtime) => void this.leases.retire(runtime).then(() => runtime.scheduler.whenIdle()).then(() => runtime.close()),
      () => undefined,
    );
  }

  /**
   * Waits for every runtime's load and queued work, then closes them all; a load after it is
   * refused. The caller waits for its own calls first. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    const runtimes = await Promise.all([...this.runtimes.values()].map((p) => p.catch(() => undefined)));
    await Promise.all(runtimes.map((r) => r?.scheduler.whenIdle()));
    this.closed = true;
    for (const r of runtimes) r?.close();
    this.runtimes.clear();
    this.loaded.clear();
  }

  private ensureOpen(): void {
    if (this.closed) throw toApiError(new EngineError('ERR_ENGINE_CLOSED', 'the decision service is closed'));
  }
}
