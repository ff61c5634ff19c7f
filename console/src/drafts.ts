// The playground's questions as the form holds them (rows of options), what a new row is called,
// and what makes the rows unsendable. No browser globals: the unit tests run it under Node.
import type { QuestionType } from './types.js';

export interface Option {
  key: string;
  description: string;
}
export interface Draft {
  id: string;
  type: QuestionType;
  instructions: string;
  options: Option[];
}

/** A key not yet used in `used`: `${stem}${n}` for the first n from `from` up. */
function unused(used: ReadonlySet<string>, stem: string, from: number): string {
  let n = from;
  while (used.has(`${stem}${n}`)) n += 1;
  return `${stem}${n}`;
}

/** The key of an option row added to `draft`: the level after the highest for a score, else a free `optionN`. */
export function nextOptionKey(draft: Draft): string {
  const used = new Set(draft.options.map((o) => o.key));
  if (draft.type === 'score') {
    const levels = draft.options.map((o) => Number(o.key)).filter((n) => Number.isInteger(n));
    return unused(used, '', levels.length === 0 ? 0 : Math.max(...levels) + 1);
  }
  return unused(used, 'option', draft.options.length + 1);
}

/** The id of a question added after `drafts`: a free `qN`. */
export function nextQuestionId(drafts: readonly Draft[]): string {
  return unused(new Set(drafts.map((d) => d.id)), 'q', drafts.length + 1);
}

/**
 * Why the rows cannot be sent as they are, or '' when they can: two questions with one id, or two
 * options of a question with one key, would be one entry of a JSON object and a row would be lost.
 */
export function draftsProblem(drafts: readonly Draft[]): string {
  const firstWithId = new Map<string, number>();
  for (const [i, d] of drafts.entries()) {
    const earlier = firstWithId.get(d.id);
    if (earlier !== undefined) return `Question ${i + 1}: the id ${JSON.stringify(d.id)} is also question ${earlier + 1}'s; each question needs its own id`;
    firstWithId.set(d.id, i);
    if (d.type === 'noul') continue;
    const keys = new Set<string>();
    for (const o of d.options) {
      if (keys.has(o.key)) return `Question ${i + 1}: two ${d.type === 'score' ? 'levels' : 'options'} are ${JSON.stringify(o.key)}; each needs its own key`;
      keys.add(o.key);
    }
  }
  return '';
}
