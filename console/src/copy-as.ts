// "Copy as": the playground's request in three dialects, ready to paste. The key is never written
// into a snippet: each reads it from the DECIDE_API_KEY environment variable. Each snippet, sent,
// asks the model exactly the question the playground asked through /v1/decide (same prompt, same
// labels, so the same probabilities); where a dialect cannot say it, the snippet is not offered and
// copyAsProblem() says why instead.
//   curl                 POST /v1/decide with our own body
//   /v1/systemone JSON   TypeSafe's System One body (noul criteria {false, true}; score criteria the
//                        list of level descriptions, level i being "i"; choice as is)
//   openai SDK           client.decisions.create() against this server's /v1 (predicate / choice
//                        with choices / score with levels, in question order)
// What the dialects cannot say: score levels other than "0".."n-1" (both number levels by their
// position, and the level is the label the model writes); descriptions of no and yes (OpenAI's
// predicate has none); a score level description over 128 characters (OpenAI's level label, which
// is what the model reads, is at most 128).
import { entriesInOrder, jsonInOrder, objectInOrder } from '../../src/domain/key-order.js';
import type { DecideRequest, Question } from './types.js';

/** A string as one single-quoted shell word. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Score levels ordered by numeric value, as the server orders them. */
function levelsInOrder(criteria: Record<string, string>): Array<[string, string]> {
  return entriesInOrder(criteria).sort(([a], [b]) => Number(a) - Number(b));
}

/** A level's text as the model reads it on /v1/decide: its description, else its key. */
const levelText = ([key, description]: [string, string]) => (description.trim() === '' ? key : description);

/** Longest OpenAI level label (the server's option key limit). */
const MAX_LABEL_LENGTH = 128;

export type SnippetDialect = 'systemone' | 'openai';

/**
 * Why the request cannot be asked as it is in `dialect`, or undefined when it can: the reason the
 * snippet is not offered (a snippet that asked another question would answer another one).
 */
export function copyAsProblem(dialect: SnippetDialect, request: DecideRequest): string | undefined {
  const name = dialect === 'systemone' ? 'System One' : 'OpenAI';
  for (const [id, q] of entriesInOrder(request.questions)) {
    if (q.type === 'score') {
      const levels = levelsInOrder(q.criteria ?? {});
      if (levels.some(([key], i) => key !== String(i))) {
        return `${name} numbers score levels 0 to n-1 by position, so question "${id}" with levels ${levels.map(([key]) => key).join(', ')} cannot be asked there as it is; use levels ${levels.map((_, i) => i).join(', ')} or copy as curl.`;
      }
      if (dialect === 'openai' && levels.some((level) => [...levelText(level)].length > MAX_LABEL_LENGTH)) {
        return `OpenAI's score levels are labels of at most ${MAX_LABEL_LENGTH} characters, and a description of question "${id}" is longer; shorten it or copy as curl.`;
      }
    }
    if (dialect === 'openai' && q.type === 'noul' && q.criteria && Object.values(q.criteria).some((d) => d.trim() !== '')) {
      return `OpenAI's predicate questions take no descriptions of no and yes, so question "${id}" cannot be asked there as it is; clear them or copy as curl.`;
    }
  }
  return undefined;
}

export function asCurl(origin: string, request: DecideRequest): string {
  return [
    `curl -sS ${origin}/v1/decide \\`,
    `  -H "Authorization: Bearer $DECIDE_API_KEY" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d ${shellQuote(jsonInOrder(request))}`,
  ].join('\n');
}

function systemOneQuestion(q: Question): Record<string, unknown> {
  const base = { type: q.type, instructions: q.instructions };
  if (!q.criteria) return base;
  switch (q.type) {
    case 'noul':
      return { ...base, criteria: { ...(q.criteria.yes !== undefined ? { true: q.criteria.yes } : {}), ...(q.criteria.no !== undefined ? { false: q.criteria.no } : {}) } };
    case 'score':
      return { ...base, criteria: levelsInOrder(q.criteria).map(levelText) };
    default:
      return { ...base, criteria: q.criteria };
  }
}

/** The body of POST /v1/systemone for the same request. */
export function asSystemOne(request: DecideRequest): string {
  const questions = objectInOrder(entriesInOrder(request.questions).map(([id, q]) => [id, systemOneQuestion(q)] as const));
  return jsonInOrder({ model: request.model, state: request.state, questions }, 2);
}

function openAiQuestion(name: string, q: Question): Record<string, unknown> {
  switch (q.type) {
    case 'noul':
      return { type: 'predicate', name, instructions: q.instructions };
    case 'choice':
      return {
        type: 'choice',
        name,
        instructions: q.instructions,
        choices: entriesInOrder(q.criteria ?? {}).map(([value, description]) => (description ? { value, description } : { value })),
      };
    case 'score':
      // The model reads an OpenAI level as "label: description", ours as the description alone:
      // the description (else the key) as the label asks the same question.
      return { type: 'score', name, instructions: q.instructions, levels: levelsInOrder(q.criteria ?? {}).map((level) => ({ label: levelText(level) })) };
  }
}

/** A Node script with the official `openai` package calling POST /v1/decisions on this server. */
export function asOpenAi(origin: string, request: DecideRequest): string {
  const input = typeof request.state === 'string' ? request.state : jsonInOrder(request.state);
  const params = {
    model: request.model,
    input,
    questions: entriesInOrder(request.questions).map(([name, q]) => openAiQuestion(name, q)),
  };
  const body = jsonInOrder(params, 2);
  return [
    `import OpenAI from 'openai';`,
    ``,
    `const client = new OpenAI({ baseURL: ${JSON.stringify(`${origin}/v1`)}, apiKey: process.env.DECIDE_API_KEY });`,
    `const decision = await client.decisions.create(${body});`,
    `console.log(JSON.stringify(decision.answers, null, 2));`,
  ].join('\n');
}
