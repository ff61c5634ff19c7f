/**
 * A batch run's hold on the model version it started on. A dated id names one version, and a job
 * "runs the version it was created on": when that version's directory is replaced while the run
 * goes on (new files under the same id), the records after the change are not scored by a
 * different model under the same name; the run stops with ModelChangedError and the job fails,
 * keeping the rows done before. The pin lives as long as one run in one process (a run resumed
 * after a restart pins what is installed then).
 * @example
 * const pin: VersionPin = {};
 * await svc.decideRecords('svc-alpha-2026-10', records, 'batch', pin);   // each chunk of the run
 */
import { ApiError } from '../api/errors.js';

export interface VersionPin {
  /** The loaded model the run's first chunk was scored on (set by DecisionService). */
  loaded?: object;
}

/** The pinned version's directory changed while the run went on. */
export class ModelChangedError extends ApiError {
  constructor(model: string) {
    super('server_error', `model ${model} changed while the job ran (its directory was replaced): a job runs the version it was created on, so the records after the change were not scored`);
    this.name = 'ModelChangedError';
  }
}

/** Pins `loaded` on the run's first call; throws ModelChangedError when a later call got another. */
export function checkPin(pin: VersionPin | undefined, model: string, loaded: object): void {
  if (!pin) return;
  pin.loaded ??= loaded;
  if (pin.loaded !== loaded) throw new ModelChangedError(model);
}
