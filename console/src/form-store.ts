// The playground's form (model, state, questions) kept in this tab's sessionStorage beside the key
// (key-store.ts), so that what was typed outlives a switch to another page, Back/Forward, a reload
// and the key form a rejected key brings back. Closing the tab or Forget key clears it.
import type { Draft } from './drafts.js';

const FORM = 'decide.playground';
const TYPES = new Set(['noul', 'choice', 'score']);

export interface PlaygroundForm {
  model: string;
  stateMode: 'text' | 'json';
  stateText: string;
  drafts: Draft[];
}

const isString = (v: unknown): v is string => typeof v === 'string';

function isDraft(v: unknown): v is Draft {
  const d = v as Draft;
  return (
    typeof d === 'object' &&
    d !== null &&
    isString(d.id) &&
    TYPES.has(d.type) &&
    isString(d.instructions) &&
    Array.isArray(d.options) &&
    d.options.every((o) => typeof o === 'object' && o !== null && isString(o.key) && isString(o.description))
  );
}

/** The form `text` holds, or undefined when it holds none (absent, or not this shape: an older console's). */
export function parseForm(text: string | null): PlaygroundForm | undefined {
  if (text === null) return undefined;
  try {
    const f = JSON.parse(text) as PlaygroundForm;
    const ok = isString(f.model) && (f.stateMode === 'text' || f.stateMode === 'json') && isString(f.stateText) && Array.isArray(f.drafts) && f.drafts.every(isDraft);
    return ok ? { model: f.model, stateMode: f.stateMode, stateText: f.stateText, drafts: f.drafts } : undefined;
  } catch {
    return undefined;
  }
}

export function readForm(): PlaygroundForm | undefined {
  try {
    return parseForm(sessionStorage.getItem(FORM));
  } catch {
    return undefined;
  }
}

/**
 * Keeps the form in the tab; false where it could not (over the storage quota: a form of
 * megabytes). Then the entry kept before goes too: a reload would otherwise bring back an older
 * form and undo everything typed since.
 */
export function storeForm(form: PlaygroundForm): boolean {
  try {
    sessionStorage.setItem(FORM, JSON.stringify(form));
    return true;
  } catch {
    clearForm();
    return false;
  }
}

export function clearForm(): void {
  try {
    sessionStorage.removeItem(FORM);
  } catch {
    // No storage: nothing was kept.
  }
}
