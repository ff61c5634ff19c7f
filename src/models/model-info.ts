/**
 * What GET /v1/models says about a version's calibration, read from its decision.json: whether it
 * carries a calibration at all, and, when `decide calibrate` made it, the held-out ECE per question
 * type, the version it was fitted from and when. A missing or unreadable decision.json reads as
 * uncalibrated (loading the model reports the real error).
 */
import { Value } from '@sinclair/typebox/value';

import { isPlainObject } from '../api/json-value.js';
import { HeldOutFiguresSchema, type HeldOutFigures } from '../api/schemas.js';
import { readDecisionFile } from '../engine/model-dir.js';

export interface CalibrationSummary {
  calibrated: boolean;
  /** Question type -> ECE (15 equal-mass bins) on the held-out rows of the fit. */
  held_out_ece?: Record<string, number>;
  /** Question type -> every held-out figure decision.json records (reliability bins included). */
  held_out?: Record<string, HeldOutFigures>;
  calibrated_from?: string;
  calibrated_at?: string;
}

export function calibrationSummary(modelDir: string): CalibrationSummary {
  let decision: unknown;
  try {
    decision = readDecisionFile(modelDir);
  } catch {
    return { calibrated: false };
  }
  const cal = isPlainObject(decision) ? decision.calibration : undefined;
  if (!isPlainObject(cal)) return { calibrated: false };
  const temps = isPlainObject(cal.temperature) ? Object.values(cal.temperature) : [];
  const biases = isPlainObject(cal.label_bias) ? Object.values(cal.label_bias).filter(isPlainObject) : [];
  const calibrated = temps.some((t) => typeof t === 'number' && t !== 1) || biases.some((b) => Object.keys(b).length > 0) || isPlainObject(cal.fit);
  const out: CalibrationSummary = { calibrated };
  if (isPlainObject(cal.fit)) {
    const fit = cal.fit;
    if (isPlainObject(fit.held_out)) {
      const heldOut: Record<string, HeldOutFigures> = {};
      const ece: Record<string, number> = {};
      for (const [type, raw] of Object.entries(fit.held_out)) {
        if (!isPlainObject(raw)) continue;
        heldOut[type] = heldOutFigures(raw);
        if (heldOut[type].ece !== undefined) ece[type] = heldOut[type].ece;
      }
      out.held_out_ece = ece;
      out.held_out = heldOut;
    }
    if (typeof fit.base_model === 'string') out.calibrated_from = fit.base_model;
    if (typeof fit.date === 'string') out.calibrated_at = fit.date;
  }
  return out;
}

/** A figure's 95% interval as decide calibrate records it beside the figure (`ece_ci`). */
const isInterval = (v: unknown) => Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === 'number' && Number.isFinite(x));

/**
 * The figures of one question type that fit the listing's schema. decision.json may be written by
 * hand or by other tools, and a type with no held-out answers records its figures as null: a figure
 * that is missing, null or of the wrong type is left out, never turned into 0 (which would read as a
 * perfect fit) and never allowed to fail the listing of every model.
 */
function heldOutFigures(raw: Record<string, unknown>): HeldOutFigures {
  const figures: Record<string, unknown> = {};
  const known = HeldOutFiguresSchema.properties as Record<string, Parameters<typeof Value.Check>[0]>;
  for (const [key, value] of Object.entries(raw)) {
    const schema = known[key];
    if (schema ? Value.Check(schema, value) : key.endsWith('_ci') && isInterval(value)) figures[key] = value;
  }
  return figures as HeldOutFigures;
}
