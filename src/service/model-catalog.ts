/**
 * The model catalogue: what a model id or alias names among the installed models, and the listing
 * GET /v1/models and GET /v1/models/{id} show (ours, with OpenAI's Model fields, and System One's
 * beside it: systemone-models.ts). DecisionService answers its listModels(), describeModel(),
 * resolveModel() and modelFingerprint() through it; RuntimePool resolves the model it loads with
 * resolveInstalled(). Reads the registry; loads nothing (whether a model is loaded is asked of the
 * runtime pool through `isLoaded`). Every method throws ApiError, as the service does.
 */
import { toApiError } from '../api/errors.js';
import type { ModelEntry, ModelListing } from '../api/schemas.js';
import { calibrationSummary } from '../models/model-info.js';
import { modelFingerprint } from '../models/model-fingerprint.js';
import type { InstalledModel, ModelRegistry } from '../models/registry.js';
import { releaseDate, systemOneModels } from './systemone-models.js';

/** OpenAI's `owned_by` of every model listed: the models are this service's own installs. */
const MODEL_OWNER = 'decision-engine';

/** The installed model an id or alias names; throws 404 not_found (an ApiError). */
export function resolveInstalled(registry: ModelRegistry, id: string): InstalledModel {
  try {
    return registry.resolve(id);
  } catch (err) {
    throw toApiError(err);
  }
}

/**
 * The installed models as the API lists them.
 * @example
 * const catalog = new ModelCatalog(registry, (id) => pool.isLoaded(id));
 * catalog.resolve('svc-alpha').id;   // 'svc-alpha-2026-10'
 * catalog.describe('svc-alpha').loaded;
 */
export class ModelCatalog {
  constructor(
    private readonly registry: ModelRegistry,
    /** Whether a dated id's runtime has finished loading: a listed model's `loaded`. */
    private readonly isLoaded: (id: string) => boolean,
  ) {}

  /** The installed model an id or alias names; throws 404 not_found. */
  resolve(id: string): InstalledModel {
    return resolveInstalled(this.registry, id);
  }

  /** The content fingerprint (models/model-fingerprint.ts) of the installed copy; throws 404 not_found. */
  fingerprint(id: string): string {
    return modelFingerprint(this.resolve(id).dir);
  }

  /** GET /v1/models: every installed model, after a rescan (a model just copied in is listed). */
  list(): ModelListing {
    this.registry.rescan();
    const installed = this.registry.list();
    const aliases = this.registry.aliases();
    return {
      object: 'list',
      data: installed.map((m) => this.entry(m)),
      aliases,
      incomplete: this.registry.incompleteDirs(),
      models: systemOneModels(installed, aliases),
    };
  }

  /** One model (id or alias) as GET /v1/models/{id} shows it; throws 404 not_found. */
  describe(id: string): ModelEntry {
    // An alias whose every version is broken shows its newest version as broken (never a 500).
    try {
      return this.entry(this.registry.describe(id));
    } catch (err) {
      throw toApiError(err);
    }
  }

  private entry(m: InstalledModel): ModelEntry {
    return {
      id: m.id,
      object: 'model' as const,
      // OpenAI's Model fields, so that its SDK's models.list() / retrieve() read them.
      created: Date.parse(`${releaseDate(m)}T00:00:00Z`) / 1000,
      owned_by: MODEL_OWNER,
      ...(m.alias ? { alias: m.alias } : {}),
      loaded: this.isLoaded(m.id),
      status: m.broken ? ('broken' as const) : ('ok' as const),
      // Paths relative to the models directory: the listing is for every key holder, not the operator.
      ...(m.broken ? { error: this.registry.shownText(m.broken) } : {}),
      ...calibrationSummary(m.dir),
    };
  }
}
