/**
 * Why `decide calibrate` (calibrateModel) refused or failed, as a message for people and as a
 * code with details for scripts: `decide calibrate --json` writes `toJSON()` on stdout.
 */
import type { Unusable } from './data.js';

/** What went wrong; every code but `models_unavailable`, `report_failed` and `failed` is the caller's input (exit 2). */
export type CalibrationErrorCode =
  | 'invalid_argument'
  | 'models_unavailable'
  | 'unknown_model'
  | 'invalid_id'
  | 'invalid_report_dir'
  | 'invalid_data'
  | 'no_usable_labels'
  | 'too_few_labels'
  | 'poor_fit'
  | 'report_failed'
  | 'failed';

/** What a script needs to act on the refusal, beyond the message. */
export interface CalibrationErrorDetails {
  /** invalid_data: the bad lines (at most 10 listed in the message; all here). */
  bad_lines?: Array<{ line: number; error: string }>;
  /** no_usable_labels: every expected label left out, with its question's options. */
  unusable?: Unusable[];
  /** no_usable_labels: rows the engine could not score. */
  failed_rows?: Array<{ line: number; error: string }>;
  /** poor_fit: question type -> why its fit is poor. */
  poor_fit?: Record<string, string[]>;
}

/**
 * A calibration that was refused (bad data, an existing id, a poor fit) or failed; nothing is written.
 * @example
 * try { await calibrateModel({ model: 'svc-alpha', data: 'labelled.jsonl' }); }
 * catch (err) { if (err instanceof CalibrationError) process.exitCode = err.exitCode; }
 */
export class CalibrationError extends Error {
  constructor(
    message: string,
    /** 2: the caller's input (data, id, model); 1: anything else. */
    readonly exitCode: 1 | 2,
    readonly code: CalibrationErrorCode,
    readonly details: CalibrationErrorDetails = {},
  ) {
    super(message);
  }

  /** `{"error": {"code", "message", "exit_code", ...details}}`, what `--json` prints on a refusal. */
  toJSON(): { error: { code: CalibrationErrorCode; message: string; exit_code: number } & CalibrationErrorDetails } {
    return { error: { code: this.code, message: this.message, exit_code: this.exitCode, ...this.details } };
  }
}
