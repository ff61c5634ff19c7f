/**
 * The calibration report's shape (report.json), shared by the run that fills it (run.ts) and the
 * files written from it (report.ts).
 */
import type { QuestionType } from '../api/schemas.js';
import type { Unusable } from './data.js';
import type { CandidateName } from './fit.js';
import type { Estimate, ReliabilityPoint } from './metrics.js';

/** A figure before and after the correction, and for uniform probabilities. */
export type Compared = Record<'before' | 'after' | 'uniform', Estimate>;

export interface TypeReport {
  fit_observations: number;
  held_out_observations: number;
  /** Why the type was not fitted (too few observations); absent when it was. */
  not_fitted?: string;
  /**
   * Why the kept fit is poor (its temperature at a bound of the search, or held-out log-loss no
   * better than uniform); absent when it is not. Written only with acceptPoorFit.
   */
  poor_fit?: string[];
  /** Applied temperature (1 = none). */
  temperature: number;
  /** Applied label bias, or null when none is kept. */
  label_bias: Record<string, number> | null;
  kept: CandidateName;
  /** Held-out log-loss of each candidate; `base` only where the base version has a correction of its own. */
  held_out_nll_by_candidate?: Partial<Record<CandidateName, number>>;
  /** The fitted parameters with bootstrap 95% intervals, whether kept or not. */
  estimates?: {
    temperature_only: { temperature: Estimate };
    temperature_and_label_bias: { temperature: Estimate; label_bias: Record<string, Estimate> };
  };
  accuracy: Compared;
  nll: Compared;
  brier: Compared;
  ece: Compared;
  /** The reliability diagram's points (metrics.ts reliabilityBins): up to 10 equal-mass bins of at least 20 answers, each with its 95% interval. */
  reliability: Record<'before' | 'after', ReliabilityPoint[]>;
}

/**
 * What {@link calibrateModel} returns (and `decide calibrate --json` prints): the new version, and
 * per question type the fit and its held-out figures before and after.
 * @example
 * const report = await calibrateModel({ model: 'svc-alpha', data: 'labelled.jsonl' });
 * console.log(report.model, report.model_dir);
 */
export interface CalibrationReport {
  base_model: string;
  model: string;
  model_dir: string;
  /** What the undated alias resolves to once the new version is installed. */
  alias?: { name: string; resolves_to: string };
  date: string;
  data: { file: string; sha256: string; rows: number; observations: number; failed_rows: Array<{ line: number; error: string }> };
  unusable: Unusable[];
  split: { seed: number; fit_rows: number; held_out_rows: number };
  types: Partial<Record<QuestionType, TypeReport>>;
  report_files?: string[];
}
