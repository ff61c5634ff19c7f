/**
 * The check of calibrateModel()'s options, before anything is read or scored: a JavaScript caller
 * can pass anything, and a bad value found only after the data has been scored (a `now` that is
 * not a Date, a `log` that is not a function) would waste the run. Each refusal is
 * CalibrationError `invalid_argument` (exit 2), as `decide calibrate` refuses a bad flag, naming
 * the option and the value given.
 */
import { EngineError } from '../errors/engine-error.js';
import {
  checkBooleanOption,
  checkFolderOption,
  checkFunctionOption,
  checkOptionNames,
  objectOption,
  refuseOption,
} from '../support/option-checks.js';
import { CalibrationError } from './calibration-error.js';

const WHERE = 'calibrateModel';
const KNOWN = ['model', 'data', 'modelsDir', 'as', 'reportDir', 'seed', 'resamples', 'threads', 'engine', 'now', 'log', 'acceptPoorFit', 'onProgress'] as const;
/** The seed's range, as `decide calibrate --seed` takes it. */
export const SEED_RANGE = Object.freeze({ min: 0, max: 2 ** 31 - 1 });

function checkText(value: unknown, name: string, required: boolean): void {
  if (value === undefined && !required) return;
  if (typeof value !== 'string' || value.trim() === '') refuseOption(WHERE, name, 'a non-empty string', value);
}

function checkInteger(value: unknown, name: string, min: number, max: number): void {
  if (value === undefined) return;
  if (!(typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max)) {
    refuseOption(WHERE, name, `an integer from ${min} to ${max}`, value);
  }
}

/** Throws CalibrationError invalid_argument for the first option calibrateModel() cannot take. */
export function checkCalibrateOptions(options: unknown): void {
  try {
    const given = objectOption(options, 'options', WHERE) as Record<string, unknown>;
    checkOptionNames(given, KNOWN, WHERE);
    checkText(given.model, 'model', true);
    checkText(given.data, 'data', true);
    checkText(given.as, 'as', false);
    for (const folder of ['modelsDir', 'reportDir'] as const) if (given[folder] !== undefined) checkFolderOption(given[folder], folder, WHERE);
    checkInteger(given.seed, 'seed', SEED_RANGE.min, SEED_RANGE.max);
    if (given.resamples !== undefined) {
      const resamples = objectOption(given.resamples, 'resamples', WHERE);
      checkOptionNames(resamples, ['figures', 'parameters'], `${WHERE} resamples`);
      for (const [name, value] of Object.entries(resamples)) checkInteger(value, `resamples.${name}`, 1, 100_000);
    }
    if (given.engine !== undefined) objectOption(given.engine, 'engine', WHERE);
    if (given.now !== undefined && !(given.now instanceof Date && Number.isFinite(given.now.getTime()))) refuseOption(WHERE, 'now', 'a valid Date', given.now);
    checkFunctionOption(given.log, 'log', WHERE);
    checkFunctionOption(given.onProgress, 'onProgress', WHERE);
    checkBooleanOption(given.acceptPoorFit, 'acceptPoorFit', WHERE);
  } catch (err) {
    if (err instanceof EngineError) throw new CalibrationError(err.message, 2, 'invalid_argument');
    throw err;
  }
}
