/**
 * `decide calibrate` as a library function: score a labelled JSONL file with the service's record
 * scoring (scoring.ts: the engine call the batch runner makes, in memory), fit a correction per question type on a seeded
 * 80% of the rows, measure it on the other 20%, and write the result as a NEW model version that
 * shares the base's weights (src/models/model-version.ts). Nothing is written unless every step
 * before it succeeded.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';

import { isEngineError } from '../errors/engine-error.js';
import { QUESTION_TYPES, type QuestionType } from '../api/schemas.js';
import { loadCalibration } from '../runtime/calibrate.js';
import { checkNewModelId, defaultVersionId, writeModelVersion } from '../models/model-version.js';
import { directoryProblem } from '../models/make-directories.js';
import { parseDatedId } from '../models/registry.js';
import type { EngineOptions } from '../engine/engine-options.js';
import { DecisionService } from '../service/decision-service.js';
import { checkCalibrateOptions } from './calibrate-options.js';
import { CalibrationError } from './calibration-error.js';
import { CalibrationDataError, readCalibrationData } from './data.js';
import { fitType, isIdentity, TEMPERATURE_RANGE } from './fit.js';
import { scoreCalibrationRows } from './scoring.js';
import { figuresWithIntervals, reliabilityBins, type Figures } from './metrics.js';
import { correctedProbs, seededRandom, uniformProbs, type Observation, type TypeCorrection } from './observations.js';
import type { CalibrationReport, Compared, TypeReport } from './report-types.js';

export type { CalibrationReport, TypeReport } from './report-types.js';
export { CalibrationError, type CalibrationErrorCode, type CalibrationErrorDetails } from './calibration-error.js';

/**
 * What {@link calibrateModel} fits and where the new version goes (`decide calibrate`'s options).
 * @example
 * const options: CalibrateOptions = { model: 'svc-alpha', data: 'labelled.jsonl', as: 'svc-alpha-2026-11-22', reportDir: 'calib-report' };
 */
export interface CalibrateOptions {
  /** Model id or alias to calibrate. */
  model: string;
  /** The labelled JSONL file. */
  data: string;
  modelsDir?: string;
  /** Id of the new version; default `<alias>-<YYYY-MM-DD>` of today (UTC). */
  as?: string;
  /** Where to write reliability diagrams and an HTML page. */
  reportDir?: string;
  /** Seed of the fit / held-out split and of the bootstrap; default 1. */
  seed?: number;
  /** Bootstrap resamples for figure intervals and parameter intervals (defaults: DEFAULT_RESAMPLES in bootstrap.ts). */
  resamples?: { figures?: number; parameters?: number };
  threads?: number;
  /** Engine options (src/engine/engine-options.ts) for the engines this run loads. */
  engine?: EngineOptions;
  /** Today, for the default id and the provenance (tests pin it). */
  now?: Date;
  log?: (line: string) => void;
  /**
   * Install a fit that ends at a temperature bound or whose held-out log-loss is no better than
   * uniform (default false: such a fit is refused and nothing is written).
   */
  acceptPoorFit?: boolean;
  /** Called as rows are scored (rows done, rows in all): the CLI's progress line. */
  onProgress?: (done: number, total: number) => void;
}

/** Fewer fit / held-out observations than this for a type: that type is not fitted. */
export const MIN_FIT_OBSERVATIONS = 20;
export const MIN_HELD_OUT_OBSERVATIONS = 5;
export const HELD_OUT_SHARE = 0.2;
/** Labels or rows named in a refusal's message; --json lists them all. */
const MAX_LISTED = 10;

/**
 * Throws CalibrationError (exit 2) when `dir` cannot become the report's folder, without making it
 * (a refused or interrupted run writes nothing): it, or its nearest existing ancestor, must be a
 * folder, and it must lie outside the models directory (a model's folder is written only by its
 * own install, and an extra folder there would be listed as an incomplete model).
 */
function checkReportDir(dir: string, modelsDir: string): void {
  const at = path.resolve(dir);
  const models = path.resolve(modelsDir);
  if (at === models || at.startsWith(`${models}${path.sep}`)) {
    throw new CalibrationError(`--report ${dir}: cannot be the report's folder: it is inside the models directory ${models}; choose a folder outside it`, 2, 'invalid_report_dir');
  }
  let existing = at;
  while (!existsSync(existing) && path.dirname(existing) !== existing) existing = path.dirname(existing);
  if (!statSync(existing).isDirectory()) throw new CalibrationError(`--report ${dir}: cannot be the report's folder: it, or a folder above it, is a file`, 2, 'invalid_report_dir');
  // A place the system refuses (under /proc, a read-only mount) is found now, not after the install.
  const refused = directoryProblem(at);
  if (refused) throw new CalibrationError(`--report ${dir}: cannot be the report's folder: ${refused}`, 2, 'invalid_report_dir');
}

interface ScoredRow {
  index: number;
  observations: Observation[];
}

/**
 * Why a fitted type's kept correction is poor, or []: a temperature that ended at a bound of the
 * search (the likelihood kept improving towards 0 or infinity: the labels follow the model's
 * ranking perfectly, or against it), or held-out log-loss no better than a uniform guess.
 */
function poorFit(report: TypeReport): string[] {
  const reasons: string[] = [];
  const [lo, hi] = TEMPERATURE_RANGE;
  if (report.kept !== 'none' && (report.temperature <= lo || report.temperature >= hi)) {
    reasons.push(`the temperature ended at the bound ${report.temperature <= lo ? lo : hi} of [${lo}, ${hi}]`);
  }
  const after = report.nll.after.value;
  const uniform = report.nll.uniform.value;
  if (!(after < uniform)) reasons.push(`held-out log-loss ${after.toFixed(4)} is no better than uniform (${uniform.toFixed(4)})`);
  return reasons;
}

function compare(
  heldOut: readonly Observation[],
  before: TypeCorrection,
  after: TypeCorrection,
  resamples: number | undefined,
  seed: number,
): Record<keyof Figures, Compared> {
  const run = (probs: (o: Observation) => Float64Array) =>
    figuresWithIntervals(
      heldOut.map((o) => ({ probs: probs(o), expected: o.expected, row: o.row })),
      { resamples, seed },
    );
  const b = run((o) => correctedProbs(o, before));
  const a = run((o) => correctedProbs(o, after));
  const u = run(uniformProbs);
  const out = {} as Record<keyof Figures, Compared>;
  for (const key of ['accuracy', 'nll', 'brier', 'ece'] as const) out[key] = { before: b[key], after: a[key], uniform: u[key] };
  return out;
}

/**
 * Runs a calibration end to end and writes the new version (and the report, when asked).
 * @example
 * const report = await calibrateModel({ model: 'svc-alpha', data: 'labelled.jsonl', modelsDir: 'models' });
 * console.log(report.model, report.types.choice?.temperature, report.types.choice?.ece.after.value);
 */
export async function calibrateModel(options: CalibrateOptions): Promise<CalibrationReport> {
  checkCalibrateOptions(options);
  const now = options.now ?? new Date();
  const seed = options.seed ?? 1;
  const log = options.log ?? (() => undefined);
  let service: DecisionService;
  try {
    // Nothing is created here: calibrating the random-weights default model that a mistyped
    // models folder would get fits nothing real.
    service = await DecisionService.open({
      modelsDir: options.modelsDir,
      threads: options.threads,
      runtime: { engine: options.engine },
      ensureDefaultModel: false,
      preload: [],
    });
  } catch (err) {
    // A bad engine option or thread count is the caller's to fix, as a bad flag is.
    if (isEngineError(err) && err.code === 'ERR_INPUT') throw new CalibrationError(err.message, 2, 'invalid_argument');
    throw new CalibrationError(`cannot open the models: ${(err as Error).message}`, 1, 'models_unavailable');
  }
  try {
    const modelsDir = service.registry.modelsDir;
    let base;
    try {
      base = service.registry.resolve(options.model);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      throw new CalibrationError(`${message} (models dir ${modelsDir})`, 2, 'unknown_model');
    }
    const newId = options.as ?? defaultVersionId(base.id, now);
    try {
      checkNewModelId(modelsDir, newId);
    } catch (err) {
      throw new CalibrationError((err as Error).message, 2, 'invalid_id');
    }
    // The new version is written into the models directory: one that takes no folder (read-only,
    // not ours) is found now, not after the rows are scored. Probed under a hidden name, which the
    // registry never lists.
    const unwritable = directoryProblem(path.join(modelsDir, `.${newId}.probe-${process.pid}`));
    if (unwritable) {
      throw new CalibrationError(`the models directory ${modelsDir} cannot take the new version ${newId}: ${unwritable}`, 1, 'models_unavailable');
    }
    // The report's folder is checked before anything is scored or installed: a path that cannot
    // be a folder would otherwise fail after the new version is already in the models directory.
    if (options.reportDir) checkReportDir(options.reportDir, modelsDir);
    let data;
    try {
      data = await readCalibrationData(options.data, base.id);
    } catch (err) {
      const badLines = err instanceof CalibrationDataError ? err.badLines : [];
      throw new CalibrationError((err as Error).message, 2, 'invalid_data', badLines.length ? { bad_lines: badLines } : {});
    }
    log(`scoring ${data.rows.length} rows with ${base.id}`);
    await service.runtime(base.id);
    const scores = await scoreCalibrationRows(service, base.id, data.rows, { onProgress: options.onProgress });

    const failedRows: Array<{ line: number; error: string }> = [];
    const scored: ScoredRow[] = [];
    data.rows.forEach((row, index) => {
      const s = scores[index]!;
      if ('error' in s) {
        failedRows.push({ line: row.line, error: s.error });
        return;
      }
      const observations: Observation[] = [];
      for (const [i, q] of row.request.questions.entries()) {
        const expected = row.expected.get(q.id);
        if (expected === undefined) continue;
        const raw = s.raw[i]!;
        observations.push({ type: q.type, logits: Array.from(raw.labelLogits), labels: raw.labels, expected, row: index });
      }
      if (observations.length > 0) scored.push({ index, observations });
    });
    const observationCount = scored.reduce((n, r) => n + r.observations.length, 0);
    if (observationCount === 0) {
      // Typically a systematic mismatch (labels written as display names, another question id):
      // the labels themselves, with their options, show it.
      const listed = [
        ...data.unusable.map((u) => `line ${u.line}, ${u.question}: ${u.reason}`),
        ...failedRows.map((f) => `line ${f.line}: could not be scored: ${f.error}`),
      ];
      const why = [
        data.unusable.length ? `${data.unusable.length} expected label${data.unusable.length > 1 ? 's were' : ' was'} left out` : '',
        failedRows.length ? `${failedRows.length} row${failedRows.length > 1 ? 's' : ''} could not be scored` : '',
      ].filter(Boolean).join(', ');
      const more = listed.length > MAX_LISTED ? `\n  ... and ${listed.length - MAX_LISTED} more (see --json)` : '';
      throw new CalibrationError(
        `${options.data}: no row gave a usable expected label; nothing was fitted${why ? ` (${why}):\n  ${listed.slice(0, MAX_LISTED).join('\n  ')}${more}` : ''}`,
        2,
        'no_usable_labels',
        { unusable: data.unusable, failed_rows: failedRows },
      );
    }

    // Seeded shuffle of rows (not of single answers: the questions of one state stay together).
    const random = seededRandom(seed);
    const order = scored.map((_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const heldOutRows = Math.round(order.length * HELD_OUT_SHARE);
    const heldOutSet = new Set(order.slice(0, heldOutRows));

    const baseCalibration = await loadCalibration(base.dir);
    const types: Partial<Record<QuestionType, TypeReport>> = {};
    const temperature = { ...baseCalibration.temperature };
    const labelBias: Partial<Record<QuestionType, Record<string, number>>> = { ...baseCalibration.labelBias };
    let fittedTypes = 0;
    for (const type of QUESTION_TYPES) {
      const fit: Observation[] = [];
      const heldOut: Observation[] = [];
      scored.forEach((row, i) => {
        for (const o of row.observations) if (o.type === type) (heldOutSet.has(i) ? heldOut : fit).push(o);
      });
      if (fit.length + heldOut.length === 0) continue;
      const before: TypeCorrection = {
        temperature: baseCalibration.temperature[type],
        ...(baseCalibration.labelBias[type] ? { labelBias: baseCalibration.labelBias[type] } : {}),
      };
      const enough = fit.length >= MIN_FIT_OBSERVATIONS && heldOut.length >= MIN_HELD_OUT_OBSERVATIONS;
      const result = enough ? fitType(fit, heldOut, { resamples: options.resamples?.parameters, seed, base: before }) : undefined;
      const after = result ? result.correction : before;
      const figures = compare(heldOut, before, after, options.resamples?.figures, seed);
      const report: TypeReport = {
        fit_observations: fit.length,
        held_out_observations: heldOut.length,
        temperature: after.temperature,
        label_bias: after.labelBias ? { ...after.labelBias } : null,
        kept: result?.chosen ?? (isIdentity(before) ? 'none' : 'base'),
        ...figures,
        reliability: {
          before: reliabilityBins(heldOut.map((o) => ({ probs: correctedProbs(o, before), expected: o.expected }))),
          after: reliabilityBins(heldOut.map((o) => ({ probs: correctedProbs(o, after), expected: o.expected }))),
        },
      };
      if (result) {
        const poor = poorFit(report);
        if (poor.length > 0) report.poor_fit = poor;
        fittedTypes += 1;
        temperature[type] = after.temperature;
        if (after.labelBias) labelBias[type] = { ...after.labelBias };
        else delete labelBias[type];
        const est = result.estimates;
        report.held_out_nll_by_candidate = result.heldOutNll;
        report.estimates = {
          temperature_only: { temperature: { value: est.temperatureOnly.temperature, ci: est.temperatureOnly.ci } },
          temperature_and_label_bias: {
            temperature: { value: est.withLabelBias.temperature, ci: est.withLabelBias.ci },
            label_bias: est.withLabelBias.labelBias,
          },
        };
      } else {
        report.not_fitted =
          `too few observations (${fit.length} fit, ${heldOut.length} held out; need ${MIN_FIT_OBSERVATIONS} and ` +
          `${MIN_HELD_OUT_OBSERVATIONS}); the base's correction is kept`;
      }
      types[type] = report;
    }
    if (fittedTypes === 0) {
      throw new CalibrationError(
        `${options.data}: too few labelled answers to fit any question type (need ${MIN_FIT_OBSERVATIONS} fit and ` +
          `${MIN_HELD_OUT_OBSERVATIONS} held-out answers of one type after the ${Math.round(100 * (1 - HELD_OUT_SHARE))}/${Math.round(100 * HELD_OUT_SHARE)} split); nothing was written`,
        2,
        'too_few_labels',
      );
    }

    const poorTypes = Object.entries(types).filter(([, r]) => r.poor_fit);
    if (poorTypes.length > 0) {
      const why = poorTypes.map(([t, r]) => `${t}: ${r.poor_fit!.join('; ')}`).join('\n  ');
      if (!options.acceptPoorFit) {
        throw new CalibrationError(
          `${options.data}: the fit is poor, so ${newId} would not be calibrated in any useful sense; nothing was written:\n  ${why}\n` +
            'Check the expected labels (are they the right option keys, for these questions?) or give more rows; ' +
            '--accept-poor-fit installs it anyway.',
          2,
          'poor_fit',
          { poor_fit: Object.fromEntries(poorTypes.map(([t, r]) => [t, r.poor_fit!])) },
        );
      }
      log(`installing a poor fit (--accept-poor-fit):\n  ${why}`);
    }

    const report: CalibrationReport = {
      base_model: base.id,
      model: newId,
      model_dir: path.join(modelsDir, newId),
      date: now.toISOString(),
      data: {
        file: path.resolve(options.data),
        sha256: data.sha256,
        rows: data.rows.length,
        observations: observationCount,
        failed_rows: failedRows,
      },
      unusable: data.unusable,
      split: { seed, fit_rows: scored.length - heldOutRows, held_out_rows: heldOutRows },
      types,
    };
    const heldOutFigures = Object.fromEntries(
      Object.entries(types).map(([t, r]) => [
        t,
        {
          ece: r.ece.after.value,
          ece_ci: r.ece.after.ci,
          nll: r.nll.after.value,
          accuracy: r.accuracy.after.value,
          brier: r.brier.after.value,
          ece_before: r.ece.before.value,
          nll_before: r.nll.before.value,
          uniform_nll: r.nll.uniform.value,
          observations: r.held_out_observations,
          kept: r.kept,
          ...(r.poor_fit ? { poor_fit: r.poor_fit } : {}),
          // The diagram's points (each bin with its interval), so GET /v1/models/{id} and the console can draw it.
          reliability: r.reliability,
        },
      ]),
    );
    await writeModelVersion({
      modelsDir,
      baseDir: base.dir,
      newId,
      decision: (baseDecision) => ({
        ...baseDecision,
        ...(typeof baseDecision.model === 'object' && baseDecision.model !== null
          ? { model: { ...(baseDecision.model as Record<string, unknown>), id: newId } }
          : {}),
        calibration: {
          temperature,
          label_bias: labelBias,
          fit: {
            tool: 'decide calibrate',
            base_model: base.id,
            date: report.date,
            data: { sha256: data.sha256, bytes: data.bytes, rows: data.rows.length, observations: observationCount, file: path.basename(options.data) },
            split: report.split,
            held_out: heldOutFigures,
          },
        },
      }),
    }).catch((err: unknown) => {
      throw new CalibrationError((err as Error).message, 2, 'invalid_id');
    });
    log(`wrote ${newId}`);
    service.registry.rescan();
    const dated = parseDatedId(newId);
    if (dated) report.alias = { name: dated.alias, resolves_to: service.registry.aliases()[dated.alias] ?? newId };
    if (options.reportDir) {
      // The report writer is loaded only when a report is asked for.
      const { writeReport } = await import('./report.js');
      try {
        report.report_files = await writeReport(options.reportDir, report);
      } catch (err) {
        throw new CalibrationError(`${newId} is installed, but its report could not be written to ${options.reportDir}: ${(err as Error).message}`, 1, 'report_failed');
      }
    }
    return report;
  } finally {
    await service.close();
  }
}
