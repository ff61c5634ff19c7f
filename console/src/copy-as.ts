// "Copy as": the playground's request in three dialects, ready to paste. The key is never written
// into a snippet: each reads it from the DECIDE_API_KEY environment variable.
//   curl                 POST /v1/decide with our own body
//   /v1/systemone JSON   TypeSafe's System One body (noul criteria {false, true}; score criteria an
//                        ordered list of level descriptions; choice as is)
//   openai SDK           client.decisions.create() against this server's /v1 (predicate / choice
//                        with choices / score with levels, in question order)
import type { DecideRequest, Question } from './types.js';

/** A string as one single-quoted shell word. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Score levels ordered by numeric value, as the server orders them. */
function levelsInOrder(criteria: Record<string, string>): Array<[string, string]> {
  return Object.entries(criteria).sort(([a], [b]) => Number(a) - Number(b));
}

export function asCurl(origin: string, request: DecideRequest): string {
  return [
    `curl -sS ${origin}/v1/decide \\`,
    `  -H "Authorization: Bearer $DECIDE_API_KEY" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  -d ${shellQuote(JSON.stringify(request))}`,
  ].join('\n');
}

function systemOneQuestion(q: Question): Record<string, unknown> {
  const base = { type: q.type, instructions: q.instructions };
  if (!q.criteria) return base;
  switch (q.type) {
    case 'noul':
      return { ...base, criteria: { ...(q.criteria.yes !== undefined ? { true: q.criteria.yes } : {}), ...(q.criteria.no !== undefined ? { false: q.criteria.no } : {}) } };
    case 'score':
      return { ...base, criteria: levelsInOrder(q.criteria).map(([key, description]) => description || key) };
    default:
      return { ...base, criteria: q.criteria };
  }
}

/** The body of POST /v1/systemone for the same request. */
export function asSystemOne(request: DecideRequest): string {
  const questions = Object.fromEntries(Object.entries(request.questions).map(([id, q]) => [id, systemOneQuestion(q)]));
  return JSON.stringify({ model: request.model, state: request.state, questions }, null, 2);
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
        choices: Object.entries(q.criteria ?? {}).map(([value, description]) => (description ? { value, description } : { value })),
      };
    case 'score':
      return {
        type: 'score',
        name,
        instructions: q.instructions,
        levels: levelsInOrder(q.criteria ?? {}).map(([label, description]) => (description ? { label, description } : { label })),
      };
  }
}

/** A Node script with the official `openai` package calling POST /v1/decisions on this server. */
export function asOpenAi(origin: string, request: DecideRequest): string {
  const input = typeof request.state === 'string' ? request.state : JSON.stringify(request.state);
  const params = {
    model: request.model,
    input,
    questions: Object.entries(request.questions).map(([name, q]) => openAiQuestion(name, q)),
  };
  const body = JSON.stringify(params, null, 2);
  return [
    `import OpenAI from 'openai';`,
    ``,
    `const client = new OpenAI({ baseURL: ${JSON.stringify(`${origin}/v1`)}, apiKey: process.env.DECIDE_API_KEY });`,
    `const decision = await client.decisions.create(${body});`,
    `console.log(JSON.stringify(decision.answers, null, 2));`,
  ].join('\n');
}
